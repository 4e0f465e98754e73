"""The reference engine: the model in plain Python (dicts and loops), for small inputs and for testing Spark.

Resolution goes through :class:`kquotactl.core.precedence.QuotaIndex` itself, once per distinct (user, client-id)
and per distinct ip.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kquotactl.core.keys import PRODUCE_KEY
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact.replay import (
    CLIENT_MODEL_KEYS,
    IP_MODEL_KEYS,
    USAGE,
    EngineResult,
    KeyTotals,
    QidStats,
    Rates,
    Sid,
    Timeline,
    Window,
    qid_parts,
    replay_quota_id,
)
from kquotactl.impact.topic import TICK_US, Cell, implicit_count, implicit_creations

# sid -> {ms: units}
Series = dict[Sid, dict[int, int]]


def run(
    columns: Mapping[str, Sequence[Any]],
    index: QuotaIndex,
    window: Window,
    progress: Callable[[str], None] | None = None,
) -> EngineResult:
    """Compute every quota-id's statistics from normalised columns (``readers.engine_columns``)."""
    series, limits, totals, rows, first, last = _usage(columns, index)
    stats, _, _ = _evaluate(series, totals, window, first, last, limits)
    return EngineResult(rows, first, last, stats, totals)


def timelines(
    columns: Mapping[str, Sequence[Any]], index: QuotaIndex, window: Window
) -> tuple[EngineResult, Timeline, Rates]:
    """Like :func:`run`, plus each throttled quota-id's throttled intervals ``(start_sample, end_sample,
    throttle_ms)`` and its rate on every interval ``(start_sample, end_sample, rate)``."""
    series, limits, totals, rows, first, last = _usage(columns, index)
    stats, tl, rates = _evaluate(series, totals, window, first, last, limits, keep=True)
    return EngineResult(rows, first, last, stats, totals), tl, rates


def _usage(
    columns: Mapping[str, Sequence[Any]], index: QuotaIndex
) -> tuple[Series, dict[Sid, float], dict[str, KeyTotals], int, int | None, int | None]:
    """Sum units per (key, level, quota-id, millisecond), resolving each distinct pair/ip once."""
    limits: dict[Sid, float] = {}
    series: Series = defaultdict(lambda: defaultdict(int))
    totals = {k: KeyTotals() for k in (*CLIENT_MODEL_KEYS, *IP_MODEL_KEYS)}
    pair_cache: dict[tuple[str, str], list[Sid | None]] = {}
    ip_cache: dict[str, Sid | None] = {}
    samples = columns["sample"]
    times = columns["ms"]
    users, clients, ips = columns["user"], columns["client_id"], columns["ip"]
    client_cols = [(k, columns["u_" + USAGE[k].column]) for k in CLIENT_MODEL_KEYS]
    conn_key = IP_MODEL_KEYS[0]
    conns = columns["u_" + USAGE[conn_key].column]
    rows = 0
    first: int | None = None
    last: int | None = None
    for i, s in enumerate(samples):
        if s is None:
            continue
        rows += 1
        first = s if first is None or s < first else first
        last = s if last is None or s > last else last
        pair = (users[i], clients[i])
        resolved = pair_cache.get(pair)
        if resolved is None:
            resolved = pair_cache[pair] = [sid_of_pair(index, limits, k, *pair) for k, _ in client_cols]
        for (key, col), sid in zip(client_cols, resolved, strict=True):
            u = col[i]
            if u:
                t = totals[key]
                t.rows += 1
                t.units += u
                if sid is None:
                    t.rows_unlimited += 1
                    t.units_unlimited += u
                else:
                    series[sid][times[i]] += u
        u = conns[i]
        if u:
            ip = ips[i]
            if ip not in ip_cache:
                ip_cache[ip] = sid_of_ip(index, limits, conn_key, ip)
            sid = ip_cache[ip]
            t = totals[conn_key]
            t.rows += 1
            t.units += u
            if sid is None:
                t.rows_unlimited += 1
                t.units_unlimited += u
            else:
                series[sid][times[i]] += u
    return series, limits, totals, rows, first, last


def sid_of_pair(index: QuotaIndex, limits: dict[Sid, float], key: str, user: str, client_id: str) -> Sid | None:
    r = index.resolve(key, user, client_id)
    if r.level is None or r.limit is None:  # a level always comes with its limit
        return None
    qu, qc = qid_parts(r.level, user, client_id)
    sid = (key, r.level, qu, qc, None)
    limits[sid] = float(r.limit)
    return sid


def sid_of_ip(index: QuotaIndex, limits: dict[Sid, float], key: str, ip: str) -> Sid | None:
    r = index.resolve_ip(ip, key)
    if r.level is None or r.limit is None:  # a level always comes with its limit
        return None
    sid = (key, r.level, None, None, ip)
    limits[sid] = float(r.limit)
    return sid


def _evaluate(
    series: Series,
    totals: dict[str, KeyTotals],
    window: Window,
    first: int | None,
    last: int | None,
    limits: Mapping[Sid, float],
    keep: bool = False,
) -> tuple[list[QidStats], Timeline, Rates]:
    """Each quota-id replayed through Kafka's Rate (:func:`~kquotactl.impact.replay.replay_quota_id`), or, for
    windowed input, the event sweep of :mod:`kquotactl.impact.replay`."""
    stats: list[QidStats] = []
    tl: Timeline = {}
    rates: Rates = {}
    if last is None:  # no sample, no series
        return stats, tl, rates
    for sid, by_ms in series.items():
        key = sid[0]
        if window.windowed:
            by_sample: dict[int, int] = defaultdict(int)
            for t, u in by_ms.items():
                by_sample[t // window.sample_ms] += u
            seconds, total, max_ms, max_rate, throttled_units, intervals, rated = _sweep(
                by_sample, key, limits[sid], window, last, keep
            )
        else:
            outcomes = replay_quota_id(list(by_ms), list(by_ms.values()), key, limits[sid], window)
            throttled = [o for o in outcomes if o.throttle_ms > 0]
            seconds = len(throttled)
            total = sum(o.throttle_ms for o in throttled)
            max_ms = max((o.throttle_ms for o in throttled), default=0)
            max_rate = max((o.max_rate for o in outcomes), default=0.0)
            throttled_units = sum(o.units_throttled for o in outcomes)
            intervals = [(o.sample, o.sample + 1, o.throttle_ms) for o in throttled] if keep else []
            rated = [(o.sample, o.sample + 1, o.max_rate) for o in outcomes] if keep else []
        totals[key].units_throttled += throttled_units
        stats.append(QidStats(key, sid[1], sid[2], sid[3], sid[4], seconds * window.size_s, max_rate, total, max_ms))
        if keep and intervals:
            tl[sid] = intervals
            rates[sid] = rated
    return stats, tl, rates


def _sweep(
    by_sample: Mapping[int, int], key: str, limit: float, window: Window, last: int, keep: bool
) -> tuple[int, int, int, float, int, list[tuple[int, int, int]], list[tuple[int, int, float]]]:
    """Windowed input: the window sum on every interval between events, its rate and throttle."""
    n = window.span
    denom = window.denominator(key)
    deltas: dict[int, int] = defaultdict(int)
    for s, u in by_sample.items():
        deltas[s] += u
        deltas[s + n] -= u
    points = sorted(deltas)
    running = 0
    seconds = total = max_ms = 0
    max_rate = 0.0
    throttled_units = 0
    intervals = []
    rated: list[tuple[int, int, float]] = []
    for j, p in enumerate(points):
        running += deltas[p]
        if p > last:
            break
        end = min(points[j + 1] if j + 1 < len(points) else last + 1, last + 1)
        length = end - p
        rate = running / denom
        max_rate = max(max_rate, rate)
        if keep and length > 0:
            rated.append((p, end, rate))
        ms = window.throttle_ms(key, rate, limit)
        if ms > 0:
            seconds += length
            total += ms * length
            max_ms = max(max_ms, ms)
            throttled_units += by_sample.get(p, 0)
            if keep:
                intervals.append((p, end, ms))
    return seconds, total, max_ms, max_rate, throttled_units, intervals, rated


def topic_usage(
    columns: Mapping[str, Sequence[Any]], index: QuotaIndex, timeline: Timeline
) -> tuple[dict[tuple[int, str], int], dict[str, int]]:
    """Produce bytes per (sample, topic), and per topic the bytes that client quotas would have throttled
    (those in a throttled sample of the row's ``producer_byte_rate`` quota-id)."""
    key = PRODUCE_KEY
    throttled: dict[Sid, set[int]] = {
        sid: {t for s, e, _ in iv for t in range(s, e)} for sid, iv in timeline.items() if sid[0] == key
    }
    limits: dict[Sid, float] = {}
    cache: dict[tuple[str, str], Sid | None] = {}
    by: dict[tuple[int, str], int] = defaultdict(int)
    client: dict[str, int] = defaultdict(int)
    units = columns["u_" + USAGE[key].column]
    for i, s in enumerate(columns["sample"]):
        u = units[i]
        if s is None or not u:
            continue
        topic = columns["topic"][i]
        by[(s, topic)] += u
        pair = (columns["user"][i], columns["client_id"][i])
        if pair not in cache:
            cache[pair] = sid_of_pair(index, limits, key, *pair)
        sid = cache[pair]
        if sid is not None and s in throttled.get(sid, ()):
            client[topic] += u
    return dict(by), dict(client)


def topic_cells(
    columns: Mapping[str, Sequence[Any]], explicit: Mapping[str, float]
) -> tuple[list[Cell], dict[str, int]]:
    """Produce bytes per :data:`~kquotactl.impact.topic.Cell`, and each topic's first produce time (µs)."""
    units = columns["u_" + USAGE[PRODUCE_KEY].column]
    rows = [
        (t, topic, u)
        for t, topic, u in zip(columns["t_us"], columns["topic"], units, strict=True)
        if u and t is not None
    ]
    created: dict[str, int] = {}
    for t, topic, _ in rows:
        if topic not in created or t < created[topic]:
            created[topic] = t
    start = min(created.values(), default=0)
    creations = implicit_creations(created, explicit)
    cells: dict[tuple[str, int, int, int], list[int]] = defaultdict(lambda: [0, 0])
    for t, topic, u in rows:
        key = (
            topic,
            (t - start) // TICK_US,
            (t - created[topic]) // TICK_US,
            0 if topic in explicit else implicit_count(creations, t),
        )
        c = cells[key]
        c[0] += u
        c[1] += 1
    return [(*k, b, n) for k, (b, n) in cells.items()], created
