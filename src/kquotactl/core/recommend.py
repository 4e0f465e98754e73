"""What the quotas should be: a rate distribution per quota-id and key, and a policy that turns it into limits.

Pure: the rates come in already measured as the broker's ``Rate`` measures them (one value per quota window
sample: :func:`kquotactl.impact.recommend.sample_rates` replays the traffic through ``core/rate.py``, the same model
``impact`` uses); this module only ranks them and applies the policy, so the local engine, Spark and a DuckDB
baseline agree as long as they hand over the same rates.

- **Percentiles** interpolate linearly between the two nearest ranks (numpy's default ``linear`` method, DuckDB's
  ``quantile_cont``): on ``n`` sorted values, rank ``q/100 × (n − 1)``.
- **Per broker**: quotas are enforced by each broker on its own share, so a limit must hold on the busiest one:
  the recommendation takes the policy's percentile of each broker and keeps the largest.
- **The limit** is that percentile × ``(1 + headroom)``, rounded *up* to two significant digits of the unit a
  person reads it in (``2.7 MiB/s`` → ``3.3 MiB/s`` with 20 % headroom), and never below the policy's floor. A
  recommendation below the floor is raised and says so; one above an existing limit or below it is just a change
  ``plan`` shows; an existing quota is never removed (a key the traffic does not cover is left as it is).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import MalformedInput
from kquotactl.core.keys import DOUBLE_MAX, IEC_UNITS, INT_MAX, KEYS, KeyScope, Number, ValueType, human, parse_value

#: an exempt quota-id's own limit, per type: the largest value that reads back exactly through both backends (the
#: admin API carries doubles: 2^53 for a LONG key, 8 PiB/s for a byte rate), which no client reaches
EXEMPT_VALUE: dict[ValueType, Number] = {ValueType.LONG: 2**53, ValueType.INT: INT_MAX, ValueType.DOUBLE: DOUBLE_MAX}

#: the percentiles every distribution reports (the policy may choose any other for the limit)
REPORTED = (50.0, 95.0, 99.0)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ascending ``ordered`` values, linear between closest ranks (numpy's
    ``linear``, DuckDB's ``quantile_cont``). NaN for no values."""
    if not ordered:
        return math.nan
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile {q} is outside 0..100")
    rank = q / 100.0 * (len(ordered) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(ordered) - 1)
    frac = rank - lo
    # numpy's _lerp: a + (b - a) * t, evaluated from the upper end when t >= 0.5 (the same float in both engines)
    a, b = ordered[lo], ordered[hi]
    diff = b - a
    return b - diff * (1.0 - frac) if frac >= 0.5 else a + diff * frac


@dataclass(frozen=True, slots=True)
class Distribution:
    """One quota-id's rate over its quota window samples on one broker: the percentiles, the peak, and how many
    samples exceed each (``over[q]``: samples whose rate is above the q-th percentile)."""

    samples: int
    percentiles: Mapping[float, float]
    peak: float
    over: Mapping[float, int]
    total: float  # the sum of the rates (× the sample length: the usage), for the share of the cluster's traffic

    @classmethod
    def of(cls, rates: Iterable[float], extra: Sequence[float] = ()) -> Distribution:
        """From the samples' rates; ``extra``: percentiles to compute besides :data:`REPORTED`."""
        ordered = sorted(rates)
        wanted = sorted({*REPORTED, *extra})
        ps = {q: percentile(ordered, q) for q in wanted}
        over = {q: len(ordered) - _count_at_most(ordered, v) for q, v in ps.items()}
        return cls(len(ordered), ps, ordered[-1] if ordered else math.nan, over, math.fsum(ordered))


def _count_at_most(ordered: Sequence[float], value: float) -> int:
    lo, hi = 0, len(ordered)
    while lo < hi:
        mid = (lo + hi) // 2
        if ordered[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    return lo


class Level(StrEnum):
    """Which entity a recommendation is written on (the quota-id the traffic is grouped by)."""

    USER_CLIENT = "user-client"  # users/<u>/clients/<c>: one limit per (user, client-id)
    USER = "user"  # users/<u>: shared by all of the user's clients
    CLIENT = "client-id"  # clients/<c>: shared by all users of the client-id


@dataclass(frozen=True)
class Policy:
    """How observed rates become limits (options or a small YAML file; see docs/recommend.md)."""

    percentile: float = 99.0
    headroom: float = 0.2  # 0.2: 20 % above the percentile
    floors: Mapping[str, Number] = field(default_factory=dict)  # key -> the lowest limit to propose
    level: Level = Level.USER_CLIENT
    #: quota-ids whose share of a key's traffic is at most this (0..1) are left to one default entity
    tail_share: float = 0.0
    keys: tuple[str, ...] = ()  # the keys to recommend (empty: every key with traffic)
    keep: frozenset[str] = frozenset()  # keys to leave alone
    exempt: frozenset[str] = frozenset()  # users (principals) never given a quota: super users, internal clients

    def __post_init__(self) -> None:
        if not 0.0 <= self.percentile <= 100.0:
            raise ValueError(f"percentile {self.percentile} is outside 0..100")
        if self.headroom < 0 or not math.isfinite(self.headroom):
            raise ValueError(f"headroom {self.headroom} is not a non-negative number")
        if not 0.0 <= self.tail_share < 1.0:
            raise ValueError(f"tail share {self.tail_share} is outside 0..1")


@dataclass(frozen=True, slots=True)
class GroupId:
    """A quota-id at the policy's level: the user and/or client-id the traffic was grouped by."""

    user: str | None = None
    client_id: str | None = None
    ip: str | None = None  # connection keys: an ip entity, whatever the level

    def entity(self) -> Entity:
        return Entity.of(user=self.user, client_id=self.client_id, ip=self.ip)

    def sort_key(self) -> tuple[str, str, str]:
        return (self.user or "", self.client_id or "", self.ip or "")


@dataclass(frozen=True, slots=True)
class ProposedLimit:
    """One proposed limit and its evidence."""

    entity: Entity
    key: str
    value: Number
    basis: float  # the percentile rate it was computed from (busiest broker)
    brokers: int
    samples: int
    over: int  # samples above the percentile, on the busiest broker
    share: float  # of the key's traffic, over all brokers
    raised_to_floor: bool = False
    quota_ids: int = 1  # more than one: the default entity serving the long tail
    exempt: bool = False  # an exempt quota-id's own entity, at the largest value Kafka takes: no default reaches it


@dataclass
class Recommendation:
    """What :func:`recommend` proposes: the limits, and what it chose not to do (as data; the CLI words it)."""

    limits: list[ProposedLimit]
    exempted: list[GroupId]
    kept_keys: list[str]
    policy: Policy
    span_s: float  # how much traffic the evidence covers


def group_of(level: Level, user: str, client_id: str) -> GroupId:
    """The quota-id a (user, client-id) request falls in at ``level``."""
    if level is Level.USER:
        return GroupId(user=user)
    if level is Level.CLIENT:
        return GroupId(client_id=client_id)
    return GroupId(user=user, client_id=client_id)


def default_entity(level: Level, key: str = "") -> Entity:
    """The entity serving the long tail of ``key`` at ``level`` (``users/<default>/clients/<default>`` for pairs;
    ``ips/<default>`` for a connection key)."""
    if key and KEYS[key].kind is KeyScope.IP:
        return Entity.of(ip=DEFAULT)
    if level is Level.USER:
        return Entity.of(user=DEFAULT)
    if level is Level.CLIENT:
        return Entity.of(client_id=DEFAULT)
    return Entity.of(user=DEFAULT, client_id=DEFAULT)


def rounded_limit(key: str, value: float) -> Number:
    """``value`` rounded *up* to two significant digits of the unit a person reads it in (IEC for byte rates),
    stored as the key's type: a limit reads as a round figure and never falls below what was asked."""
    k = KEYS[key]
    if value <= 0:
        return 1 if k.type is not ValueType.DOUBLE else 1.0
    factor = 1.0
    if k.byte_rate:
        factor = next((float(f) for _, f in IEC_UNITS if value >= f), 1.0)
    scaled = value / factor
    step = 10.0 ** (math.floor(math.log10(scaled)) - 1)
    up = math.ceil(round(scaled / step, 9)) * step
    result = up * factor
    if k.type is ValueType.DOUBLE:
        return float(f"{result:.10g}")
    return max(1, math.ceil(round(result, 6)))


def recommend(
    distributions: Mapping[tuple[GroupId, str], Mapping[str, Distribution]],
    policy: Policy,
    span_s: float,
    defaults_in_force: Iterable[str] = (),
) -> Recommendation:
    """The limits for each (quota-id, key) with traffic, from its distribution on each broker
    (``distributions[(group, key)][broker]``). Pure and deterministic: the output is sorted.

    An exempt quota-id gets no limit; but a default entity (the long tail's, or one already set for a key in
    ``defaults_in_force``) would reach it, so then its own entity is written at :data:`EXEMPT_VALUE` (Kafka has
    no "unlimited" quota: a more specific entity with a limit no client reaches is how a user is exempted)."""
    # a draft key no Kafka release knows (KIP-124's request_rate) only when asked for: a live cluster refuses it
    wanted = set(policy.keys) if policy.keys else {k for _, k in distributions if not KEYS[k].draft}
    kept = sorted(k for k in wanted if k in policy.keep)
    keys = wanted - policy.keep
    parts: dict[str, list[float]] = {}
    for (_, key), per_broker in distributions.items():
        parts.setdefault(key, []).extend(d.total for d in per_broker.values())
    totals = {key: math.fsum(v) for key, v in parts.items()}  # fsum: exact, so the same in any order
    exempted: dict[GroupId, list[str]] = {}
    limits: list[ProposedLimit] = []
    tails: dict[str, list[ProposedLimit]] = {}
    for (group, key), per_broker in sorted(distributions.items(), key=lambda kv: _order(*kv[0])):
        if key not in keys or not per_broker:
            continue
        if group.user is not None and group.user in policy.exempt:
            exempted.setdefault(group, []).append(key)
            continue
        rec = _recommended(group.entity(), key, per_broker, policy, totals.get(key, 0.0))
        if policy.tail_share and rec.share <= policy.tail_share:
            tails.setdefault(key, []).append(rec)
        else:
            limits.append(rec)
    for key, recs in sorted(tails.items()):
        top = max(recs, key=lambda r: (r.value, r.basis))
        limits.append(
            ProposedLimit(
                default_entity(policy.level, key),
                key,
                top.value,
                top.basis,
                top.brokers,
                sum(r.samples for r in recs),
                top.over,
                math.fsum(r.share for r in recs),
                top.raised_to_floor,
                quota_ids=len(recs),
            )
        )
    defaulted = {*defaults_in_force, *tails}
    for group, group_keys in sorted(exempted.items(), key=lambda kv: _order(kv[0], "")):
        for key in group_keys:
            if key in defaulted:
                top_value = EXEMPT_VALUE[KEYS[key].type]
                limits.append(ProposedLimit(group.entity(), key, top_value, math.nan, 0, 0, 0, 0.0, exempt=True))
    return Recommendation(limits, sorted(exempted, key=lambda g: _order(g, "")), kept, policy, span_s)


def _order(group: GroupId, key: str) -> tuple[str, str, str, str]:
    return (*group.sort_key(), key)


def _recommended(
    entity: Entity, key: str, per_broker: Mapping[str, Distribution], policy: Policy, key_total: float
) -> ProposedLimit:
    q = policy.percentile
    busiest = max(sorted(per_broker), key=lambda b: _at(per_broker[b], q))
    dist = per_broker[busiest]
    basis = _at(dist, q)
    value = rounded_limit(key, basis * (1.0 + policy.headroom))
    floor = policy.floors.get(key)
    raised = floor is not None and float(value) < float(floor)
    if raised and floor is not None:
        value = floor
    total = math.fsum(d.total for d in per_broker.values())
    return ProposedLimit(
        entity,
        key,
        value,
        basis,
        len(per_broker),
        sum(d.samples for d in per_broker.values()),
        dist.over.get(q, 0),
        total / key_total if key_total else 0.0,
        raised,
    )


def _at(dist: Distribution, q: float) -> float:
    value = dist.percentiles.get(q)
    if value is None:
        raise ValueError(f"the distribution has no p{q:g}: compute it with Distribution.of(..., extra=[{q:g}])")
    return value


def evidence(rec: ProposedLimit, percentile_q: float, span_s: float) -> str:
    """The one-line evidence a manifest comment carries: ``p99 2.7 MiB/s over 14 d, 3 brokers``."""
    if rec.exempt:
        return "exempt: a limit no client reaches, above any default"
    parts = [f"p{percentile_q:g} {human(KEYS[rec.key], rec.basis)} over {span_words(span_s)}"]
    parts.append(f"{rec.brokers} broker{'s' if rec.brokers != 1 else ''}")
    if rec.quota_ids > 1:
        parts.append(f"top of {rec.quota_ids} small quota-ids")
    if rec.raised_to_floor:
        parts.append("raised to the floor")
    return ", ".join(parts)


def span_words(seconds: float) -> str:
    """A duration as the evidence says it: ``14 d``, ``5 min``."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


#: the fields of a policy file, and what each holds (the options of the same names override them)
POLICY_FIELDS = ("percentile", "headroom", "floors", "level", "tail_share", "keys", "keep", "exempt")


def percent(text: str, what: str, below_all: bool = False) -> float:
    """``"20"``, ``"20%"`` or ``"20 %"`` as the fraction 0.2 (``what`` names the input in the error);
    ``below_all``: a share, which must stay below 100 %."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise MalformedInput(what, "is not a percentage", text) from None
    if not math.isfinite(value) or value < 0:
        raise MalformedInput(what, "is not a non-negative percentage", text)
    if below_all and value >= 100:
        raise MalformedInput(what, "is outside 0..100 % (a share below all the traffic)", text)
    return value / 100.0


def checked_percentile(value: float, what: str) -> float:
    if not 0.0 <= value <= 100.0:
        raise MalformedInput(what, "is outside 0..100", f"{value:g}")
    return value


def policy_from(doc: Mapping[str, Any], source: str, **given: Any) -> Policy:
    """A :class:`Policy` from a policy file's mapping (``source`` names it in errors), overridden by the non-empty
    ``given`` values (the options: already typed)."""
    unknown = sorted(set(doc) - set(POLICY_FIELDS))
    if unknown:
        raise MalformedInput(source, f"has no field {unknown[0]!r} (fields: {', '.join(POLICY_FIELDS)})")
    fields: dict[str, Any] = {}
    if "percentile" in doc:
        raw = str(doc["percentile"])
        fields["percentile"] = checked_percentile(
            percent(raw, f"{source}: percentile") * 100.0, f"{source}: percentile"
        )
    for name in ("headroom", "tail_share"):
        if name in doc:
            fields[name] = percent(str(doc[name]), f"{source}: {name}", below_all=name == "tail_share")
    if "level" in doc:
        try:
            fields["level"] = Level(str(doc["level"]))
        except ValueError:
            levels = ", ".join(v.value for v in Level)
            raise MalformedInput(f"{source}: level", f"is none of {levels}", str(doc["level"])) from None
    for name in ("keys", "keep", "exempt"):
        if name in doc:
            items = doc[name]
            if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
                raise MalformedInput(f"{source}: {name}", "is not a list of names")
            fields[name] = tuple(items) if name == "keys" else frozenset(items)
    if "floors" in doc:
        floors = doc["floors"]
        if not isinstance(floors, Mapping):
            raise MalformedInput(f"{source}: floors", "is not a mapping of quota keys to limits")
        fields["floors"] = {check_key(k, source): parse_value(KEYS[k], str(v)) for k, v in floors.items()}
    for name in ("keys", "keep"):
        for k in fields.get(name, ()):
            check_key(k, source)
    given_floors = given.pop("floors", None) or {}
    fields["floors"] = {**fields.get("floors", {}), **given_floors}  # an option's floor overrides the file's
    fields.update({k: v for k, v in given.items() if v not in (None, (), frozenset(), {})})
    return Policy(**fields)


def check_key(key: str, source: str) -> str:
    if key not in KEYS:
        raise MalformedInput(source, "names no quota key", key)
    return key
