"""The traffic-impact model, as pure data and pure functions (no I/O): both engines implement exactly this.

- Usage per quota key comes from one input column (:data:`USAGE`), converted per row to integer *units*
  (``floor(value × scale + 0.5)``) so that sums are exact in every engine; a recording's value is
  ``units / divisor``.
- Each row resolves per key with :class:`kquotactl.core.precedence.QuotaIndex` (8 levels, quota-id sharing; ips by ip).
- Each quota-id's usage is replayed through Kafka's own ``Rate`` (:func:`kquotactl.core.rate.replay`, the function
  ``explain --replay`` uses): one recording per millisecond with usage (a row's ``ts`` to the millisecond; rows of
  one quota-id in the same millisecond are one recording), fresh-sensor padding, the sample ring of the Kafka
  version (:attr:`Window.kafka_version`, default the latest) and the broker's throttle, capped for request and
  connection keys; a throttled Fetch or connection is taken back out (:data:`UNRECORDED_WHEN_THROTTLED`).
  :func:`replay_quota_id` is that replay; both engines call it per quota-id, so they and ``explain --replay``
  agree bit for bit on the same events.
- The report counts per sample of ``S = quota.window.size.seconds``: a sample is throttled when one of its
  recordings is (throttle > 0: a throttle past 2^31 ms wraps negative on a broker, and throttles nothing); its
  throttle is the largest of its recordings'.

Input that is already a rate over the quota window (the brokers' sensors, ``impact run --from-prometheus``) is
not replayed through ``Rate`` again: with ``Window(windowed=True)`` a sample's usage counts in that sample only
(``Window.span`` = 1), its rate is ``units / (divisor × S)``, compared with the limit as it is, and the throttle
formula uses ``N·S``. That sum only changes where usage enters (sample ``s``) or leaves it (sample ``s + span``), so
both engines evaluate it on *events* ``(s, +u)`` and ``(s + span, −u)``, clipped to the input's last sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import UsageError
from kquotactl.core.explain import level_pattern
from kquotactl.core.keys import BYTE_RATE_KEYS, KEYS, KeyScope, Number, TrafficColumn
from kquotactl.core.precedence import LEVELS, QuotaIndex, Sharing, entity_level
from kquotactl.core.rate import replay, sampled_stat_for
from kquotactl.core.sanitizer import sanitize
from kquotactl.core.throttle import DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS
from kquotactl.core.throttlemath import quota_throttle_ms

#: Where each key's usage comes from (the registry's :attr:`~kquotactl.core.keys.QuotaKey.traffic`).
USAGE: dict[str, TrafficColumn] = {k: v.traffic for k, v in KEYS.items() if v.traffic is not None}
CLIENT_MODEL_KEYS: tuple[str, ...] = tuple(k for k in USAGE if KEYS[k].kind is KeyScope.CLIENT)
IP_MODEL_KEYS: tuple[str, ...] = tuple(k for k in USAGE if KEYS[k].kind is KeyScope.IP)
MODEL_KEYS = CLIENT_MODEL_KEYS + IP_MODEL_KEYS
USAGE_COLUMNS: tuple[str, ...] = tuple(USAGE[k].column for k in MODEL_KEYS)
ID_COLUMNS: tuple[str, ...] = ("user", "client_id", "ip")
NOT_MODELLED = tuple(k for k, v in KEYS.items() if v.traffic is None)  # partition mutations: not in request samples
#: partition mutations, in tables rebuilt from the brokers' sensors: carried, not replayed (NOT_MODELLED; the
#: controller's quota is a token bucket, not the windowed rate this model replays)
MUTATIONS_COLUMN = "mutations"
#: in tables rebuilt from the brokers' sensors, the broker a row was measured on: quotas are per broker, so each
#: broker's rows are replayed on their own (engine.Runner) and the reports merged (merge_broker_reports)
BROKER_COLUMN = "broker"
#: keys whose throttled recording the broker takes back out: a throttled Fetch is answered empty
#: (``KafkaApis``: ``unrecordQuotaSensor``), a throttled connection unrecorded (``ConnectionQuotas``)
UNRECORDED_WHEN_THROTTLED = frozenset(k for k, v in KEYS.items() if v.unrecorded_when_throttled)


@dataclass(frozen=True)
class Window:
    """``quota.window.num`` samples of ``quota.window.size.seconds`` each."""

    num: int = DEFAULT_WINDOW_NUM
    size_s: int = DEFAULT_WINDOW_SIZE_SECONDS
    #: the input's usage is already a rate over the quota window (the brokers' sensors, --from-prometheus): each
    #: sample's rate is compared with the limit as it is, not averaged over the window again
    windowed: bool = False
    #: the brokers' Kafka version, for the sampled Rate (:func:`kquotactl.core.rate.sampled_stat_for`; None: latest)
    kafka_version: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.num < 1 or self.size_s < 1:
            raise UsageError("--window-num and --window-size must be at least 1")

    @property
    def window_ms(self) -> float:
        return self.num * self.size_s * 1000.0

    @property
    def cap_ms(self) -> int:
        return self.size_s * 1000

    @property
    def sample_ms(self) -> int:
        return self.size_s * 1000

    @property
    def span(self) -> int:
        """Samples a sample's usage counts in: the window's ``N``, or 1 for :attr:`windowed` input."""
        return 1 if self.windowed else self.num

    def denominator(self, key: str) -> float:
        """What a window's unit sum is divided by to give the key's rate."""
        return float(USAGE[key].divisor * self.span * self.size_s)

    def throttle_ms(self, key: str, rate: float, limit: float) -> int:
        """Throttle of one sample: :func:`~kquotactl.core.throttlemath.quota_throttle_ms` over ``N·S``, capped for
        request and connection keys; the Spark engine computes exactly these operations column-wise."""
        return quota_throttle_ms(rate, limit, self.window_ms, self.cap_ms if KEYS[key].throttle_capped else None)


# -- the replay of one quota-id (both engines) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class SampleOutcome:
    """One sample of a quota-id's replay: its units, those of throttled recordings, its recordings' largest rate
    and throttle (0: none throttled)."""

    sample: int
    units: int
    units_throttled: int
    max_rate: float
    throttle_ms: int


def replay_quota_id(
    times_ms: Sequence[int], units: Sequence[int], key: str, limit: float, window: Window
) -> list[SampleOutcome]:
    """A quota-id's usage (``units`` at ``times_ms``, any order) replayed through Kafka's ``Rate`` as the broker
    records it: one recording of ``units / divisor`` per millisecond, in time order; per sample with usage, what it
    gave. The one replay of both engines (:func:`kquotactl.core.rate.replay`, as ``explain --replay``)."""
    per_ms: dict[int, int] = {}
    for t, u in zip(times_ms, units, strict=True):
        per_ms[t] = per_ms.get(t, 0) + u
    order = sorted(t for t, u in per_ms.items() if u)
    divisor = USAGE[key].divisor
    steps = replay(
        [(t, per_ms[t] / divisor) for t in order],
        limit,
        samples=window.num,
        window_ms=window.sample_ms,
        cap_ms=window.cap_ms if KEYS[key].throttle_capped else None,
        unrecord_throttled=key in UNRECORDED_WHEN_THROTTLED,
        **sampled_stat_for(window.kafka_version),
    )
    out: list[SampleOutcome] = []
    current = None
    units_in = throttled_in = throttle = 0
    rate = 0.0
    for t, step in zip(order, steps, strict=True):
        sample = t // window.sample_ms
        if sample != current:
            if current is not None:
                out.append(SampleOutcome(current, units_in, throttled_in, rate, throttle))
            current, units_in, throttled_in, throttle, rate = sample, 0, 0, 0, step.rate
        u = per_ms[t]
        units_in += u
        if step.throttle_ms > 0:
            throttled_in += u
            throttle = max(throttle, step.throttle_ms)
        rate = max(rate, step.rate)
    if current is not None:
        out.append(SampleOutcome(current, units_in, throttled_in, rate, throttle))
    return out


# -- the quota table (what Spark broadcasts) -----------------------------------------------------


@dataclass(frozen=True)
class QuotaRow:
    """One configured limit: key, precedence level, the entity's names (None = absent/default), the limit."""

    key: str
    level: int
    pattern: str
    user: str | None
    client_id: str | None
    ip: str | None
    limit: Number


def quota_table(index: QuotaIndex) -> list[QuotaRow]:
    """Every modelled key set on any entity, as flat rows (names are raw; defaults are None)."""

    def raw(name: object) -> str | None:
        return None if name is None or name is DEFAULT else str(name)

    rows = []
    for entity in index.entities():
        level = entity_level(entity)
        pattern = level_pattern(level, ip=entity.ip is not None)
        for key, limit in index.get(entity).items():
            if key in MODEL_KEYS:
                rows.append(
                    QuotaRow(key, level, pattern, raw(entity.user), raw(entity.client_id), raw(entity.ip), limit)
                )
    return sorted(rows, key=lambda r: (r.key, r.level, r.user or "", r.client_id or "", r.ip or ""))


def qid_parts(level: int, user: str, client_id: str) -> tuple[str, str]:
    """The quota-id of a user/client resolution, with the *raw* user (sanitized only when reported)."""
    sharing = LEVELS[level - 1].sharing
    if sharing is Sharing.PAIR:
        return (user, client_id)
    if sharing is Sharing.USER:
        return (user, "")
    return ("", client_id)


# -- engine output → report ----------------------------------------------------------------------


#: a quota-id of one key, as the engines key their results: (key, level, qid_user, qid_client, qid_ip)
Sid = tuple[str, int, str | None, str | None, str | None]
#: sid -> [(start_sample, end_sample, throttle_ms)], each throttled interval
Timeline = dict[Sid, list[tuple[int, int, int]]]
#: sid -> [(start_sample, end_sample, rate)], the window rate on each interval
Rates = dict[Sid, list[tuple[int, int, float]]]


@dataclass
class QidStats:
    """What an engine computes per (key, level, quota-id); names are raw."""

    key: str
    level: int
    qid_user: str | None
    qid_client: str | None
    qid_ip: str | None
    seconds_throttled: int
    max_rate: float
    total_throttle_ms: int
    max_throttle_ms: int


@dataclass
class KeyTotals:
    rows: int = 0  # input rows with usage for the key
    rows_unlimited: int = 0
    units: int = 0
    units_unlimited: int = 0
    units_throttled: int = 0  # usage that fell in a throttled sample of its quota-id


@dataclass
class EngineResult:
    rows: int
    first_sample: int | None
    last_sample: int | None
    stats: list[QidStats]
    totals: dict[str, KeyTotals] = field(default_factory=dict)


def merge_slices(parts: Iterable[EngineResult]) -> EngineResult:
    """One result from replays of consecutive time slices of windowed input, where each sample stands alone (its
    own rate against the limit): counts and sums added, peaks kept, the first and last sample of them all. Exact:
    the same result as one replay of the whole range."""
    stats: dict[tuple[str, int, str | None, str | None, str | None], QidStats] = {}
    totals: dict[str, KeyTotals] = {}
    rows = 0
    first: int | None = None
    last: int | None = None
    for part in parts:
        rows += part.rows
        if part.first_sample is not None:
            first = part.first_sample if first is None else min(first, part.first_sample)
        if part.last_sample is not None:
            last = part.last_sample if last is None else max(last, part.last_sample)
        for key, t in part.totals.items():
            into = totals.setdefault(key, KeyTotals())
            into.rows += t.rows
            into.rows_unlimited += t.rows_unlimited
            into.units += t.units
            into.units_unlimited += t.units_unlimited
            into.units_throttled += t.units_throttled
        for st in part.stats:
            ident = (st.key, st.level, st.qid_user, st.qid_client, st.qid_ip)
            seen = stats.get(ident)
            stats[ident] = (
                st
                if seen is None
                else QidStats(
                    *ident,
                    seen.seconds_throttled + st.seconds_throttled,
                    max(seen.max_rate, st.max_rate),
                    seen.total_throttle_ms + st.total_throttle_ms,
                    max(seen.max_throttle_ms, st.max_throttle_ms),
                )
            )
    return EngineResult(rows, first, last, list(stats.values()), totals)


def quota_id(key: str, qid_user: str | None, qid_client: str | None, qid_ip: str | None) -> dict[str, str]:
    """The report's quota-id (the broker's metric tags) of an engine's quota-id parts: ``{ip}`` or
    ``{user (sanitized), client-id}``."""
    if key in IP_MODEL_KEYS:
        return {"ip": qid_ip or ""}
    return {"user": sanitize(qid_user or ""), "client-id": qid_client or ""}


def report(result: EngineResult, index: QuotaIndex, window: Window) -> dict[str, Any]:
    """``{"summary": {...}, "quota_ids": [...]}`` from an engine's result; identical for both engines."""
    rows: list[dict[str, Any]] = []
    for s in result.stats:
        if s.key in IP_MODEL_KEYS:
            entity = Entity(ip=s.qid_ip) if s.level == 1 else Entity(ip=DEFAULT)
        else:
            entity = LEVELS[s.level - 1].entity(s.qid_user or "", s.qid_client or "")
        qid = quota_id(s.key, s.qid_user, s.qid_client, s.qid_ip)
        limit = index.get(entity)[s.key]
        rows.append(
            {
                "key": s.key,
                "quota_id": qid,
                "level": s.level,
                "entity_path": entity.path,
                "limit": limit,
                "seconds_throttled": s.seconds_throttled,
                "max_rate": s.max_rate,
                "total_throttle_ms": s.total_throttle_ms,
                "max_throttle_ms": s.max_throttle_ms,
            }
        )
    rows.sort(key=lambda r: (-r["total_throttle_ms"], -r["seconds_throttled"], r["key"], sorted(r["quota_id"].items())))
    first, last = result.first_sample, result.last_sample  # both set, or neither (no sample)
    span = 0 if first is None or last is None else (last - first + 1) * window.size_s
    traffic = {}
    for key in MODEL_KEYS:
        t = result.totals.get(key, KeyTotals())
        traffic[key] = {
            "rows": t.rows,
            "rows_unlimited": t.rows_unlimited,
            "usage": t.units / USAGE[key].scale,
            "usage_throttled": t.units_throttled / USAGE[key].scale,
            "share_throttled": (t.units_throttled / t.units) if t.units else 0.0,
        }
    summary = {
        "rows": result.rows,
        "seconds": span,
        "window": {
            "num": window.num,
            "size_seconds": window.size_s,
            **({"windowed_input": True} if window.windowed else {}),
            **({"kafka_version": ".".join(map(str, window.kafka_version))} if window.kafka_version else {}),
        },
        "quota_ids": len(rows),
        "throttled_quota_ids": sum(1 for r in rows if r["seconds_throttled"] > 0),
        "share_of_traffic_throttled": _overall_share(result.totals),
        "traffic": traffic,
        "not_modelled": list(NOT_MODELLED),
        "open_loop": True,
    }
    return {"summary": summary, "quota_ids": rows}


def _overall_share(totals: Mapping[str, KeyTotals]) -> float:
    """Share of the bytes (produce + fetch) in throttled recordings (windowed input: throttled samples): the
    headline number."""
    units = sum(totals[k].units for k in BYTE_RATE_KEYS if k in totals)
    throttled = sum(totals[k].units_throttled for k in BYTE_RATE_KEYS if k in totals)
    return throttled / units if units else 0.0


def check_limits(rows: Iterable[QuotaRow]) -> None:
    """Limits are > 0 (the key validation guarantees it for anything loaded through kquotactl)."""
    for r in rows:
        if not r.limit > 0:
            raise UsageError(f"{r.key}={r.limit} on {r.pattern} is not > 0; fix the quota set")


def merge_broker_reports(reports: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """One report from per-broker replays (quotas are per broker: each broker's traffic is replayed on its own):
    each quota-id row names its ``broker``; the summary adds up rows, quota-ids and traffic, and lists the brokers."""
    rows = [{**r, "broker": b} for b, rep in sorted(reports.items()) for r in rep["quota_ids"]]
    rows.sort(key=lambda r: (-r["total_throttle_ms"], -r["seconds_throttled"], r["key"], sorted(r["quota_id"].items())))
    summaries = [reports[b]["summary"] for b in sorted(reports)]  # the same report whichever broker came first
    traffic: dict[str, dict[str, Any]] = {}
    for key in MODEL_KEYS:
        parts = [s["traffic"][key] for s in summaries]
        usage = math.fsum(p["usage"] for p in parts)  # exactly rounded: the engines' sums agree to the bit
        throttled = math.fsum(p["usage_throttled"] for p in parts)
        traffic[key] = {
            "rows": sum(p["rows"] for p in parts),
            "rows_unlimited": sum(p["rows_unlimited"] for p in parts),
            "usage": usage,
            "usage_throttled": throttled,
            "share_throttled": throttled / usage if usage else 0.0,
        }
    byte_usage = math.fsum(traffic[k]["usage"] for k in BYTE_RATE_KEYS)
    first = summaries[0] if summaries else {"window": {}, "not_modelled": list(NOT_MODELLED), "open_loop": True}
    summary = {
        "rows": sum(s["rows"] for s in summaries),
        "seconds": max((s["seconds"] for s in summaries), default=0),
        "window": first["window"],
        "quota_ids": len(rows),
        "throttled_quota_ids": sum(1 for r in rows if r["seconds_throttled"] > 0),
        "share_of_traffic_throttled": (
            math.fsum(traffic[k]["usage_throttled"] for k in BYTE_RATE_KEYS) / byte_usage if byte_usage else 0.0
        ),
        "traffic": traffic,
        "not_modelled": first["not_modelled"],
        "open_loop": first["open_loop"],
        "brokers": sorted(reports),
    }
    return {"summary": summary, "quota_ids": rows}
