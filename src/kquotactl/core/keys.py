"""Quota keys: the one registry of every fact about a key, and the exact values Kafka accepts.

:data:`KEYS` is the only table of key names in ``src/``: each key's Kafka config type (LONG / DOUBLE / INT), which
entities take it, its unit, whether a stock broker enforces it and a live cluster accepts it, whether its throttle
is capped at one window sample, how a cluster-wide budget splits over brokers (``core/budget.py``), the traffic
column the impact model replays (``impact/replay.py``), the broker sensor ``top`` reads (``observe/throttled.py``), and
its help text. Every other module derives its per-key tables from it (``tests/test_keys_registry.py`` holds that);
docs/architecture.md ("Adding a quota key") is the recipe.

Values are checked here, before anything is written, as strictly as a KRaft 3.6+ controller would:
finite, greater than zero, integral for LONG/INT keys, inside the type's range.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from kquotactl.core.errors import InvalidValue
from kquotactl.core.javafmt import java_digit
from kquotactl.core.throttlemath import java_long

if TYPE_CHECKING:  # decimal loads with the first value typed or given as text: a describe reads none
    from decimal import Decimal

Number = int | float

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
DOUBLE_MAX = 1.7976931348623157e308


class ValueType(StrEnum):
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    INT = "INT"


class KeyScope(StrEnum):
    """Quota keys apply either to user/client-id entities or to ip entities (KIP-612)."""

    CLIENT = "client"  # users, clients, (user, client-id) pairs and their defaults
    IP = "ip"


class Split(StrEnum):
    """How a cluster-wide value becomes the per-broker value of one key (``core/budget.py`` says why per key)."""

    DIVIDED = "divided"  # every broker enforces its own share: total / brokers
    WHOLE = "whole"  # enforced in one place in KRaft (the active controller): the value is the cluster-wide value
    REFUSED = "per-broker"  # per-broker by nature: no cluster-wide total exists (cluster: refuses it)


@dataclass(frozen=True)
class TrafficColumn:
    """Where a key's usage comes from in an impact traffic table: ``units = floor(column × scale + 0.5)``; rate =
    units / divisor / (N·S)."""

    column: str
    scale: int = 1
    divisor: int = 1


@dataclass(frozen=True)
class Sensor:
    """The broker's quota sensor of a key, as the JMX exporter rules name it: the quota type (``Produce``; the ip
    sensor has none in its tags) and the exporter metric carrying its usage (``kafka_quota_<metric>``)."""

    quota_type: str
    metric: str


@dataclass(frozen=True)
class QuotaKey:
    name: str
    type: ValueType
    kind: KeyScope
    unit: str
    doc: str
    enforced: bool = True  # does a stock Apache Kafka broker enforce it?
    throttle_capped: bool = False  # throttle capped at one window sample (request and connection quotas)
    byte_rate: bool = False  # accepts unit suffixes such as 10MiB
    shipped_instead: str = ""  # for a key no Apache Kafka release knows: the shipped key to set instead
    draft: str = ""  # for such a key: the KIP draft it comes from
    # required of every key (keyword-only, no default), so that a new key cannot leave one out:
    split: Split = field(kw_only=True)  # a cluster-wide budget per broker (core/budget.py)
    traffic: TrafficColumn | None = field(kw_only=True)  # the impact model's usage column; None: not in request samples
    sensor: Sensor | None = field(kw_only=True)  # the broker's quota sensor (observe: top); None: no broker has one
    unrecorded_when_throttled: bool = False  # the broker takes a throttled recording back out (impact replay)
    token_bucket: bool = False  # metered by a token bucket (KIP-599), not the sampled Rate
    static_default: str = ""  # a <= 2.8 broker's static default config for it (the 9th precedence level)
    #: the change (:data:`kquotactl.core.kafkaversions.CHANGES`) that brought it: brokers of older releases refuse it
    #: (their AlterClientQuotas: ``Invalid configuration key``); "" for a key every release with the admin API knows
    arrived_with: str = ""

    @property
    def integral(self) -> bool:
        return self.type is not ValueType.DOUBLE

    @property
    def live(self) -> bool:
        """Can it be set on a live cluster? (offline only: manifests, ``explain -f``, ``impact``)"""
        return not self.shipped_instead


KEYS: dict[str, QuotaKey] = {
    k.name: k
    for k in (
        QuotaKey(
            "producer_byte_rate",
            ValueType.LONG,
            KeyScope.CLIENT,
            "bytes/s",
            "Upper bound (bytes/second) for producer traffic.",
            byte_rate=True,
            split=Split.DIVIDED,
            traffic=TrafficColumn("produce_bytes"),
            sensor=Sensor("Produce", "byte_rate"),
            static_default="quota.producer.default",
        ),
        QuotaKey(
            "consumer_byte_rate",
            ValueType.LONG,
            KeyScope.CLIENT,
            "bytes/s",
            "Upper bound (bytes/second) for consumer traffic: Fetch, and ShareFetch for share consumers (4.1+).",
            byte_rate=True,
            split=Split.DIVIDED,
            traffic=TrafficColumn("fetch_bytes"),
            unrecorded_when_throttled=True,  # a throttled Fetch is answered empty (KafkaApis: unrecordQuotaSensor)
            sensor=Sensor("Fetch", "byte_rate"),
            static_default="quota.consumer.default",
        ),
        QuotaKey(
            "request_rate",
            ValueType.LONG,
            KeyScope.CLIENT,
            "requests/s",
            "Requests per second (KIP-124 draft). Stock Apache Kafka brokers ignore it and enforce "
            "request_percentage instead.",
            enforced=False,
            throttle_capped=True,
            shipped_instead="request_percentage",
            draft="KIP-124",
            split=Split.DIVIDED,
            traffic=TrafficColumn("requests"),
            sensor=None,  # no broker meters it
        ),
        QuotaKey(
            "request_percentage",
            ValueType.DOUBLE,
            KeyScope.CLIENT,
            "%",
            "Percentage of one request-handler/network thread's time per quota window.",
            throttle_capped=True,
            split=Split.REFUSED,
            # request_time_ms / 10 is percent-seconds; kept as integer microseconds (scale 1000)
            traffic=TrafficColumn("request_time_ms", scale=1000, divisor=10_000),
            sensor=Sensor("Request", "request_time"),
        ),
        QuotaKey(
            "controller_mutation_rate",
            ValueType.DOUBLE,
            KeyScope.CLIENT,
            "mutations/s",
            "Rate of partition mutations (create/delete topics and partitions) per second (KIP-599).",
            split=Split.WHOLE,
            traffic=None,  # partition mutations are not in request samples
            sensor=Sensor("ControllerMutation", "mutation_rate"),
            token_bucket=True,
            arrived_with="mutation_quota",
        ),
        QuotaKey(
            "connection_creation_rate",
            ValueType.INT,
            KeyScope.IP,
            "connections/s",
            "Upper bound of connections accepted per second for the IP (KIP-612).",
            throttle_capped=True,
            split=Split.DIVIDED,
            traffic=TrafficColumn("connections"),
            unrecorded_when_throttled=True,  # ConnectionQuotas unrecords a throttled connection
            sensor=Sensor("Connection", "connection_accept_rate"),
            arrived_with="ip_quotas",  # and with it ip entities, in ZooKeeper and the admin API alike
        ),
    )
}

#: The core's key order: how kquotactl sorts keys in everything it writes and prints (unknown keys last).
KEY_ORDER = {k: i for i, k in enumerate(KEYS)}

CLIENT_KEYS: tuple[str, ...] = tuple(k for k, v in KEYS.items() if v.kind is KeyScope.CLIENT)
IP_KEYS: tuple[str, ...] = tuple(k for k, v in KEYS.items() if v.kind is KeyScope.IP)
#: the byte-rate keys (produce and fetch bytes: the impact report's headline share)
BYTE_RATE_KEYS: tuple[str, ...] = tuple(k for k, v in KEYS.items() if v.byte_rate)
#: the key whose quota-ids throttle topics' produce bytes (the impact topic model, ``verify --drive``)
PRODUCE_KEY = "producer_byte_rate"
#: the key an ip entity's connections are held to (an ip connection's default resolution)
IP_CONNECTION_KEY = IP_KEYS[0]
SCRAM_KEYS = frozenset({"SCRAM-SHA-256", "SCRAM-SHA-512"})

# Unit suffixes for byte rates. IEC (KiB) are powers of 1024, SI (kB/KB) powers of 1000; "B" is bytes.
UNIT_FACTORS: dict[str, int] = {
    "B": 1,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
    "kB": 1000,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
}
_NUMBER = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)$")


def keys_for(kind: KeyScope) -> tuple[str, ...]:
    return CLIENT_KEYS if kind is KeyScope.CLIENT else IP_KEYS


def lookup_key(name: str, kind: KeyScope | None = None) -> QuotaKey:
    """Return the key definition, or raise naming the bad key (with the closest valid one)."""
    key = KEYS.get(name)
    if key is None:
        if name in SCRAM_KEYS:
            raise InvalidValue(
                f"{name} is a SCRAM credential, not a quota: manage credentials with kafka-configs "
                "or the admin API's user SCRAM credential calls"
            )
        candidates = list(keys_for(kind)) if kind else list(KEYS)
        import difflib  # only for the hint of a misspelt key

        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
        hint = f" — did you mean {close[0]}?" if close else f" (valid keys: {', '.join(candidates)})"
        raise InvalidValue(f"unknown key {name!r}{hint}")
    if kind is not None and key.kind is not kind:
        if key.kind is KeyScope.IP:
            raise InvalidValue(f"{name} is only valid for ips, not for users or clients")
        raise InvalidValue(f"{name} is not valid for ips (ips take only {', '.join(IP_KEYS)})")
    return key


def check_live_key(key: QuotaKey) -> None:
    """Refuse setting a key that no Apache Kafka release knows on a live cluster.

    ``request_rate`` (the KIP-124 draft) means something offline (manifests, ``explain -f``, ``impact``), but
    written to ZooKeeper it makes the entity unalterable by kafka-configs ("Unknown Dynamic Configuration") and
    a broker's AlterClientQuotas refuses it (``Invalid configuration key``); no broker enforces it either way.
    Reading and deleting it stay possible: only setting it is refused.
    """
    if key.shipped_instead:
        raise InvalidValue(
            f"{key.name} is not a quota key of any Apache Kafka release (the {key.draft} draft's {key.unit}; "
            f"brokers and kafka-configs reject it): set {key.shipped_instead}, the shipped request quota, instead"
        )


_RANGES: dict[ValueType, int | float] = {ValueType.LONG: LONG_MAX, ValueType.INT: INT_MAX, ValueType.DOUBLE: DOUBLE_MAX}


def _range_for(key: QuotaKey) -> int | float:
    return _RANGES[key.type]


def _describe(key: QuotaKey) -> str:
    return f"{key.type.value}, {key.unit}"


def parse_value(key: QuotaKey, text: str) -> Number:
    """Parse a value typed on a command line or read from a file: '1024', '1e6', '10MiB' (byte rates).

    Returns an ``int`` for LONG/INT keys and a ``float`` for DOUBLE keys.
    """
    stripped = java_trim(text)
    shown = text if len(text) <= 60 else text[:57] + "..."
    if not stripped:
        raise InvalidValue(f"invalid value {shown!r} for {key.name}: empty (expected a number, {_describe(key)})")
    m = _NUMBER.match(stripped)
    if not m:
        low = stripped.lower().lstrip("+-")
        why = "NaN and Infinity are not allowed" if low in ("nan", "infinity", "inf") else "not a number"
        raise InvalidValue(f"invalid value {shown!r} for {key.name}: {why} ({_describe(key)})")
    digits, unit = m.group(1), m.group(2)
    from decimal import Decimal, InvalidOperation

    try:
        number = Decimal(digits)
    except InvalidOperation:  # pragma: no cover - the regex only admits valid decimals
        raise InvalidValue(f"invalid value {shown!r} for {key.name}: not a number ({_describe(key)})") from None
    if unit:
        factor = UNIT_FACTORS.get(unit)
        if factor is None or not key.byte_rate:
            allowed = ", ".join(UNIT_FACTORS) if key.byte_rate else "none (plain numbers only)"
            raise InvalidValue(
                f"invalid value {shown!r} for {key.name}: unknown unit {unit!r} (units allowed: {allowed})"
            )
        number *= factor
    return _check_decimal(key, number, shown)


def check_number(key: QuotaKey, value: object, shown: str | None = None) -> Number:
    """Check a number that arrived already typed (manifest YAML/JSON, an admin API response)."""
    if type(value) is int and key.integral and 0 < value <= _RANGES[key.type]:
        return value  # what _check_decimal returns for it, without the Decimal round trip (every manifest value)
    if isinstance(value, bool):
        raise InvalidValue(f"invalid value {value!r} for {key.name}: not a number ({_describe(key)})")
    if isinstance(value, str):
        return parse_value(key, value)
    from decimal import Decimal

    if isinstance(value, int):
        return _check_decimal(key, Decimal(value), shown or str(value))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InvalidValue(
                f"invalid value {shown or value!r} for {key.name}: NaN and Infinity are not allowed ({_describe(key)})"
            )
        return _check_decimal(key, Decimal(repr(value)), shown or repr(value))
    raise InvalidValue(f"invalid value {value!r} for {key.name}: not a number ({_describe(key)})")


def _check_decimal(key: QuotaKey, number: Decimal, shown: str) -> Number:
    if number <= 0:
        raise InvalidValue(f"invalid value {shown!r} for {key.name}: must be greater than 0")
    limit = _range_for(key)
    if key.integral:
        if number != number.to_integral_value():
            raise InvalidValue(f"invalid value {shown!r} for {key.name}: must be a whole number ({_describe(key)})")
        as_int = int(number)
        if as_int > limit:
            raise InvalidValue(f"invalid value {shown!r} for {key.name}: too large for {key.type.value} (max {limit})")
        return as_int
    as_float = float(number)
    if math.isinf(as_float) or as_float > limit:
        raise InvalidValue(f"invalid value {shown!r} for {key.name}: too large for DOUBLE")
    if as_float <= 0:
        raise InvalidValue(f"invalid value {shown!r} for {key.name}: must be greater than 0 (underflows)")
    return as_float


def java_trim(text: str) -> str:
    """``String.trim()``: strips every char <= U+0020 at both ends (not the same as ``str.strip``)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def format_value(key: QuotaKey, value: Number) -> str:
    """The canonical stored string: integers for LONG/INT, Java ``Double.toString`` for DOUBLE.

    This is what a broker's AlterClientQuotas path writes to ZooKeeper for the same value: the request carries a
    double, which the broker narrows to a long as Java does (``(v + 1e-6).toLong``: saturating, so 2**63 - 2 sent as
    a double is stored as Long.MAX_VALUE). An ``int`` is written exactly as given (the ZooKeeper backend's path).
    """
    if key.integral:
        return str(java_long(value)) if isinstance(value, float) else str(int(value))
    from kquotactl.core.javafmt import double_to_string

    return double_to_string(float(value))


class UnparsableValue(InvalidValue):
    """A stored value the broker's own parser refuses (``Long.parseLong`` / ``Integer.parseInt`` /
    ``Double.parseDouble`` for the key's type): a broker never applies it."""


def parse_stored(key: QuotaKey, text: str) -> Number:
    """Read a stored (ZooKeeper) value exactly as a ZooKeeper-mode broker's ``ConfigHandler`` does.

    LONG keys go through ``Long.parseLong`` (``.toLong.toDouble``), INT through ``Integer.parseInt``, DOUBLE through
    ``Double.parseDouble``. So ``1024.0``, `` 7`` and ``0x10`` are not LONG values, while `` 7 `` and ``1d`` are
    DOUBLE values. Zero, negative, NaN and infinite results are returned as they are (the broker takes them too).
    Raises :class:`UnparsableValue` where the broker's parser throws.
    """
    parsed = java_parse_double(text) if key.type is ValueType.DOUBLE else java_parse_integer(text, key.type)
    if parsed is None:
        shown = text if len(text) <= 60 else text[:57] + "..."
        why = _JAVA_PARSER[key.type]
        raise UnparsableValue(f"stored value {shown!r} for {key.name}: brokers cannot parse it ({why} refuses it)")
    return parsed


def not_applied_reason(key: QuotaKey, text: str) -> str:
    """Why a stored value is not a limit: the broker's parser refuses it, or reads it as NaN or an infinity
    (a DOUBLE key; kquotactl does not model such a limit: it is listed with its stored text instead)."""
    try:
        value = parse_stored(key, text)
    except UnparsableValue:
        return "not applied: brokers cannot parse it"
    return f"not a limit: brokers parse it as {'NaN' if math.isnan(value) else 'Infinity'}"


_JAVA_PARSER = {
    ValueType.LONG: "Long.parseLong",
    ValueType.INT: "Integer.parseInt",
    ValueType.DOUBLE: "Double.parseDouble",
}


def java_parse_integer(text: str, vtype: ValueType = ValueType.LONG) -> int | None:
    """``Long.parseLong`` / ``Integer.parseInt`` (radix 10): an optional sign and decimal digits, in range."""
    bits = 63 if vtype is ValueType.LONG else 31
    body, negative = text, False
    if body[:1] in ("+", "-"):
        negative, body = body[0] == "-", body[1:]
    if not body:
        return None
    if body.isascii() and body.isdigit():  # the common case, as Java reads it
        value = int(body)
        value = -value if negative else value
        return value if -(2**bits) <= value < 2**bits else None
    value = 0
    for c in body:
        d = java_digit(c, 10)
        if d < 0:
            return None
        value = value * 10 + d
    value = -value if negative else value
    return value if -(2**bits) <= value < 2**bits else None


_JAVA_DECIMAL = re.compile(r"([+-]?)(?:(\d+)\.?(\d*)|\.(\d+))(?:[eE]([+-]?\d+))?[fFdD]?", re.ASCII)
_JAVA_HEX = re.compile(
    r"([+-]?)0[xX](?:([0-9a-fA-F]+)\.?|([0-9a-fA-F]*)\.([0-9a-fA-F]+))[pP]([+-]?)(\d+)[fFdD]?", re.ASCII
)


def java_parse_double(text: str) -> float | None:
    """``Double.parseDouble``: trimmed; decimal or hex (``0x1p3``) with an optional ``f``/``d`` suffix,
    ``NaN`` and ``Infinity`` with an optional sign. Correctly rounded, as the JDK is."""
    t = java_trim(text)
    if t in ("NaN", "+NaN", "-NaN"):
        return math.nan
    if t in ("Infinity", "+Infinity", "-Infinity"):
        return -math.inf if t[0] == "-" else math.inf
    m = _JAVA_DECIMAL.fullmatch(t)
    if m:
        sign, whole, frac, only_frac, exp = m.groups()
        mantissa = f"{whole}.{frac}" if whole is not None else f".{only_frac}"
        return float(f"{sign}{mantissa}e{exp or '0'}")
    m = _JAVA_HEX.fullmatch(t)
    if m:
        sign, whole, lead, frac, exp_sign, exp = m.groups()
        mantissa = whole if whole is not None else f"{lead}.{frac}"
        if int(exp) > 2**31 - 1:  # Java: exponent overflow is a signed infinity or zero, whatever the significand
            value = 0.0 if exp_sign == "-" else math.inf
            return -value if sign == "-" else value
        try:
            return float.fromhex(f"{sign}0x{mantissa}p{exp_sign}{exp}")
        except OverflowError:
            return -math.inf if sign == "-" else math.inf
    return None


#: IEC units for byte rates, largest first: kquotactl shows every byte rate a person reads in these (one unit system
#: per screen; SI suffixes are accepted as input and written by ``export --units`` only)
IEC_UNITS = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def significant(q: float) -> str:
    """Three significant digits below 100, no trailing zeros, thousands separated: 3.21, 47.9, 1,994."""
    digits = 0 if abs(q) >= 100 else 1 if abs(q) >= 10 else 2
    text = f"{q:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _exact_number(value: Number) -> str:
    """The number itself, shortest exact spelling: ``50`` for 50.0, ``12.5``, ``1e-05``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def unit_of(key: QuotaKey, value: Number) -> str:
    """The key's unit for ``value``: ``B/s`` for byte rates, ``1 connection/s`` in the singular."""
    if key.byte_rate:
        return "B/s"
    return key.unit[:-3] + "/s" if value == 1 and key.unit.endswith("s/s") else key.unit


def iec_rate(value: float) -> tuple[float, str]:
    """``(divisor, unit)`` for a byte rate around ``value``: TiB/s .. KiB/s, B/s below 1 KiB/s."""
    for unit, factor in IEC_UNITS:
        if abs(value) >= factor:
            return float(factor), f"{unit}/s"
    return 1.0, "B/s"


def human(key: QuotaKey, value: Number | None) -> str:
    """A measured value as a person reads it, rounded to three significant digits: ``3.91 KiB/s`` (byte rates in
    IEC units), ``47.9 %``, ``2,000 requests/s``, ``1 connection/s``; ``unlimited`` for None. Limits read through
    :func:`human_and_raw` or :func:`limit_text`, which never round."""
    if value is None:
        return "unlimited"
    if key.byte_rate:
        div, unit = iec_rate(float(value))
        return f"{significant(float(value) / div)} {unit}"
    return f"{significant(float(value))} {unit_of(key, value)}"


def human_and_raw(key: QuotaKey, value: Number | None) -> str:
    """The one way a limit reads (describe, plan, explain, budgets, verify, impact): a byte rate of 1 KiB/s or more
    in IEC units with the exact number it is (``6 MiB/s (6291456)``, ``3.91 KiB/s (4000)``), else the exact number
    with its unit (``500 B/s``, ``50 %``, ``12.5 %``, ``20 connections/s``); ``-`` for None."""
    if value is None:
        return "-"
    if key.byte_rate and float(value) >= 1024:
        return f"{human(key, value)} ({format_value(key, value)})"
    return f"{_exact_number(value)} {unit_of(key, value)}"


def limit_text(key: QuotaKey, value: Number | None) -> str:
    """:func:`human_and_raw` without the number in brackets when the IEC figure is already exact (``2 MiB/s``):
    the short form for narrow cells and sentences, the same text otherwise; ``unlimited`` for None."""
    if value is None:
        return "unlimited"
    text = human_and_raw(key, value)
    if key.byte_rate and float(value) >= 1024:
        shown, unit = human(key, value).split(" ", 1)
        if float(shown.replace(",", "")) * UNIT_FACTORS[unit.removesuffix("/s")] == float(value):
            return human(key, value)
    return text


_EXACT_UNITS = ("TiB", "TB", "GiB", "GB", "MiB", "MB", "KiB", "kB")  # largest factor first


def exact_unit_text(key: QuotaKey, value: Number) -> str | None:
    """A byte rate in the largest unit that divides it exactly (``5MiB``, ``2MB``), so that
    :func:`parse_value` reads back the very same number; ``None`` when no unit is exact (or the key has none)."""
    if not key.byte_rate or not isinstance(value, int) or value <= 0:
        return None
    for unit in _EXACT_UNITS:
        factor = UNIT_FACTORS[unit]
        if value % factor == 0:
            return f"{value // factor}{unit}"
    return None
