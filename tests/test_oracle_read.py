"""Differential: how brokers read what is stored, against the JDK and Kafka's own jars.

- ip entity names: :func:`kquotactl.core.inet.read_ip_name` against ``InetAddress.getByName`` (``InetOracle``, the call
  every broker version keys ip quotas with), on every oracle version's JVM;
- stored values: :func:`kquotactl.core.keys.parse_stored` against Scala's ``StringOps.toLong`` / ``toInt`` /
  ``toDouble`` from the broker's own scala-library (``StoredValueOracle``), on the versions that still have
  ZooKeeper-mode brokers (2.8, 3.9; 4.x brokers read KRaft records, whose values are already doubles).
"""

from __future__ import annotations

import random
import struct

import pytest

from fixtures_oracle import ORACLE_VERSIONS, assert_no_mismatches
from kquotactl.core.errors import InvalidValue
from kquotactl.core.inet import IpKind, read_ip_name
from kquotactl.core.keys import KEYS, ValueType, parse_stored
from kquotactl.core.sanitizer import sanitize
from kquotactl.testing.oracle import cases_per_run
from kquotactl.testing.versions import RELEASES

ZK_VERSIONS = [v for v in ORACLE_VERSIONS if v < "4"]
_UNICODE_DIGITS = (
    "\u0661\u0663\u0669\u06f5\u0967\u09e8\uff10\uff17\uff19\U0001d7ce"  # Arabic, Devanagari, full-width, math
)
_HEX_ODD = "\uff21\uff46\uff41"  # full-width A, f, a: Character.digit takes them, the JDK 17 parser does not


# -- ip names -------------------------------------------------------------------------------------------------------


def _v4_part(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return str(rng.randint(0, 255))
    if r < 0.55:
        return "0" * rng.randint(1, 3) + str(rng.randint(0, 255))  # octal-looking
    if r < 0.65:
        return rng.choice(["0x", "0X"]) + format(rng.randint(0, 300), rng.choice("xX"))  # hex-looking
    if r < 0.75:
        return str(rng.choice([256, 999, 4095, 65535, 65536, 16777215, 16777216, 4294967295, 4294967296]))
    if r < 0.8:
        return rng.choice(["", "a", "08", "09", "1a", "0x", "-1", "+1", " 1"])
    if r < 0.85:
        return "".join(rng.choice(_UNICODE_DIGITS) for _ in range(rng.randint(1, 3)))
    return str(rng.randint(0, 2**32 + 5))


def _v4(rng: random.Random) -> str:
    text = ".".join(_v4_part(rng) for _ in range(rng.choice([1, 2, 3, 4, 4, 4, 5])))
    if rng.random() < 0.05:
        text += "."
    return text


def _v6_group(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.6:
        g = format(rng.randint(0, 0xFFFF), "x")
    elif r < 0.7:
        g = "0" * rng.randint(1, 3) + format(rng.randint(0, 0xFFF), "x")  # leading zeros
    elif r < 0.78:
        g = format(rng.randint(0x10000, 0xFFFFF), "x")  # too long
    elif r < 0.85:
        g = "".join(rng.choice("0123456789abcdef" + _HEX_ODD + _UNICODE_DIGITS) for _ in range(rng.randint(1, 4)))
    else:
        g = rng.choice(["0", "ffff", "g", "", "1.2.3.4", "192.168.0.1"])
    return g.upper() if rng.random() < 0.3 else g


def _v6(rng: random.Random) -> str:
    n = rng.choice([1, 2, 3, 5, 6, 7, 8, 8, 9])
    groups = [_v6_group(rng) for _ in range(n)]
    if rng.random() < 0.25:
        groups[-1] = _v4(rng) if rng.random() < 0.5 else f"{rng.randint(0, 255)}.{rng.randint(0, 255)}.1.2"
    if rng.random() < 0.6:  # a '::' somewhere (or two)
        at = rng.randint(0, len(groups))
        groups = [*groups[:at], "", *groups[at:]]
        if at in (0, len(groups) - 1):
            groups.insert(at, "")
        if rng.random() < 0.05:
            groups.insert(rng.randint(0, len(groups)), "")
    text = ":".join(groups)
    if rng.random() < 0.15:
        text = rng.choice(["::ffff:", "::FFFF:", "::", "0:0:0:0:0:ffff:"]) + _v4(rng)
    if rng.random() < 0.12:
        text += "%" + rng.choice(["1", "0", "25", "lo", "eth0", "", "2147483648", "99999999999", "1a"])
    return text


_ODD_NAMES = ["", " ", "[", "]", "[]", ":", "::", ":::", "[::1", "::1]", "%", "1.2.3.4%1", "\t1.2.3.4"]
_ODD_NAMES += ["1.2.3.4\x00", "::1\x00", "::ffff:1.2.3.4%1", "[::ffff:1.2.3.4]", "[1.2.3.4%1]"]


def _ip_name(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.35:
        text = _v4(rng)
    elif r < 0.75:
        text = _v6(rng)
    elif r < 0.82:
        text = sanitize(_v6(rng) if rng.random() < 0.7 else _v4(rng))  # the admin API path's ZooKeeper spelling
    elif r < 0.9:  # host-name-like
        text = rng.choice(["kafka", "broker-1.example", "a.b.c", "abc", "ffff", "beef.cafe", "1.2.3.4.example", "e"])
    else:
        text = rng.choice(
            [
                "",
                " ",
                "[",
                "]",
                "[]",
                ":",
                "::",
                ":::",
                "[::1",
                "::1]",
                "%",
                "1.2.3.4%1",
                "\t1.2.3.4",
                "1.2.3.4\x00",
                "::1\x00",
                "::ffff:1.2.3.4%1",
            ]
        )
    r = rng.random()
    if r < 0.08:
        text = f"[{text}]"
    elif r < 0.12:
        text = rng.choice([" ", "\t"]) + text if rng.random() < 0.5 else text + " "
    return text or "1"


def _ours_ip(name: str) -> dict:
    parsed = read_ip_name(name)
    if parsed.address is None:
        return {"kind": parsed.kind.value}
    return {"kind": parsed.kind.value, "hex": parsed.address.packed.hex()}


def _kafka_ip(name: str, answer: dict, ours: dict) -> dict:
    """Java's answer in our terms; an interface-scoped name matches either way (it depends on the host).

    Kafka's validators must agree with ``getByName`` (no name resolves here: the oracle's hosts file is empty)."""
    for validator in ("zk_valid", "kraft_valid"):
        if validator in answer and answer[validator] != (answer["kind"] == "address"):
            return {**answer, "disagrees": validator}
    if ours["kind"] == IpKind.INTERFACE and (
        answer["kind"] == "invalid" or (answer["kind"] == "address" and answer["hex"] == ours["hex"])
    ):
        return ours
    if answer["kind"] == "address":
        return {"kind": "address", "hex": answer["hex"]}
    return {"kind": answer["kind"]}


_IP_VECTORS = [
    "1.2.3.4",
    "1.2.3",
    "1.2",
    "16909060",
    "01.2.3.4",
    "0x7f.1",
    "1.2.3.256",
    "0000000001.2.3.4",
    "::1",
    "[::1]",
    "::ffff:1.2.3.4",
    "2001:DB8:0::1",
    "2001:db8::1",
    "%3A%3A1",
    "fe80::1%1",
    "fe80::1%eth0",
    "[1.2.3.4]",
    " 1.2.3.4",
    "1.2.3.4.",
    "example.invalid",
    "\u0661.\u0662.\u0663.\u0664",
    "::\uff21",
]


@pytest.mark.jvm
@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_ip_names_match_inetaddress(kafka_oracle, oracle_seed, version):
    rng = random.Random(oracle_seed)
    names = _IP_VECTORS + [_ip_name(rng) for _ in range(cases_per_run())]
    answers = kafka_oracle(version, "InetOracle").ask_many([{"s": n} for n in names])
    release = RELEASES[version]
    validators = {v for v, on in (("zk_valid", release.zookeeper), ("kraft_valid", release.kraft)) if on}
    assert validators <= answers[0].keys(), f"Kafka {version}: isValidIpEntity not found ({answers[0]})"
    ours = [_ours_ip(n) for n in names]
    kafka = [_kafka_ip(n, a, o) for n, a, o in zip(names, answers, ours, strict=True)]
    assert_no_mismatches(names, ours, kafka, oracle_seed, version)


def test_ip_name_vectors():
    """The documented readings, independent of the oracle."""
    assert read_ip_name("2001:DB8:0::1").key == read_ip_name("2001:db8::1").key == "2001:db8::1"
    assert read_ip_name("::ffff:1.2.3.4").key == "1.2.3.4"
    assert read_ip_name("1.2.3").key == "1.2.0.3"
    assert read_ip_name("16909060").key == "1.2.3.4"
    assert read_ip_name("%3A%3A1").kind is IpKind.RESOLVER
    assert read_ip_name("kafka-1.example").kind is IpKind.RESOLVER
    assert read_ip_name("0x7f.1").kind is IpKind.INVALID
    assert read_ip_name("fe80::1%eth0").kind is IpKind.INTERFACE


# -- stored values --------------------------------------------------------------------------------------------------


def _value(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.25:
        text = str(rng.choice([rng.randint(-10, 10), rng.randint(0, 10**7), rng.randint(-(2**64), 2**64)]))
    elif r < 0.4:
        text = repr(rng.uniform(-1e6, 1e6))
    elif r < 0.5:
        text = rng.choice(["9223372036854775807", "9223372036854775808", "-9223372036854775808", "2147483647"])
        text = rng.choice([text, "2147483648", "-2147483648", "-2147483649", "4294967296"])
    else:
        pieces = [
            "1", "0", "7", "07", "00", "1024", ".", "5", "e", "E", "3", "-", "+", "d", "f", "D", "F", "x", "0x",
            "p", "P", "1_000", "Infinity", "NaN", "inf", " ", "\t", "\n", "\u00a0", "\u2003", "a", "A", "\u0661",
            "\uff17", "\U0001d7ce", "9" * 25, "e400", "e-400", "p1100", "p-1100", "0x1p3", "0x.8p1", "1d", "1.",
        ]  # fmt: skip
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
    if rng.random() < 0.1:
        text = rng.choice([" ", "\t", "\x00", "\x1f"]) + text + rng.choice(["", " ", "\n"])
    return text


_TYPES = {
    ValueType.LONG: "producer_byte_rate",
    ValueType.INT: "connection_creation_rate",
    ValueType.DOUBLE: "request_percentage",
}


def _ours_value(vtype: ValueType, text: str) -> dict:
    try:
        v = parse_stored(KEYS[_TYPES[vtype]], text)
    except InvalidValue:
        return {"error": "NumberFormatException"}
    return {"value": format(struct.unpack(">Q", struct.pack(">d", v))[0], "x") if vtype is ValueType.DOUBLE else str(v)}


def _kafka_value(answer: dict) -> dict:
    return {"error": answer["error"]} if "error" in answer else answer


@pytest.mark.jvm
@pytest.mark.parametrize("version", ZK_VERSIONS)
@pytest.mark.parametrize("vtype", list(ValueType))
def test_stored_values_match_broker_parsing(kafka_oracle, oracle_seed, version, vtype):
    rng = random.Random(oracle_seed)
    texts = [" 7", "1024.0", "0x10", "1e3", "1d", "0x1p3", "Infinity", "NaN", "07", "1_000", "-5", "0", "\uff17"]
    texts += [_value(rng) for _ in range(cases_per_run())]
    answers = kafka_oracle(version, "StoredValueOracle").ask_many([{"type": vtype.value, "s": t} for t in texts])
    assert_no_mismatches(
        texts, (_ours_value(vtype, t) for t in texts), map(_kafka_value, answers), oracle_seed, f"{version} {vtype}"
    )
