"""Kafka's ``Rate`` replayed column-wise: :func:`kquotactl.impact.replay.replay_quota_id` for many quota-ids at
once, with numpy, bit for bit (``tests/test_columnrate.py`` holds them equal on random recordings, seed printed).

The replay of one recording at a time (:func:`kquotactl.core.rate.replay`) costs a few microseconds of Python per
recording; the Spark engine's executors replay every quota-id's recordings, so that cost was most of a request-log
run. Every step of the sampled ``Rate`` (Kafka 3.8+, the ring of ``N + 1`` samples purged by their last event)
is a function of the recordings' times, which makes it a handful of array operations:

- a sample starts at the first recording at least one sample length after the previous sample's start: a chain
  through "the first recording ``S`` ms later", marked by pointer doubling (``log2`` of the samples a quota-id has);
- at a recording in sample ``k``, the samples still counted are those of the last ``N`` whose last recording is
  less than ``N·S`` old (the others are purged, and a purged sample's reset start never precedes a counted
  sample's), so the window runs from the oldest counted sample's start, padded as ``Rate.windowSize`` pads it;
- the total is ``WindowedSum.combine``'s: the ring's samples added in slot order, each the sequential sum of its
  recordings, so float values (``request_percentage``) round exactly as Java's doubles do.

Two cases are replayed one quota-id at a time by the reference instead: Kafka before 3.8 (the older ring, purged by
sample start) and a quota-id of a key whose throttled recordings the broker takes back out (a Fetch, a connection)
once one of its recordings is throttled, since what follows then depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kquotactl.core.keys import KEYS
from kquotactl.core.rate import sampled_stat_for
from kquotactl.impact.replay import UNRECORDED_WHEN_THROTTLED, USAGE, Window, replay_quota_id

_LONG_MAX = 2**63 - 1
#: sums of integer units stay exact in a double below this
_EXACT = 2**53


@dataclass(frozen=True)
class SampleColumns:
    """:class:`~kquotactl.impact.replay.SampleOutcome` of many quota-ids, one entry per (quota-id, sample with
    usage), ordered by quota-id then sample; ``group`` is the caller's quota-id number."""

    group: Any
    sample: Any
    units: Any
    units_throttled: Any
    max_rate: Any
    throttle_ms: Any


def runs(group: Any, values: Any) -> Any:
    """Where each run of one (group, value) starts in rows sorted by group then value (a millisecond, a sample)."""
    import numpy as np

    return np.flatnonzero(np.r_[True, (group[1:] != group[:-1]) | (values[1:] != values[:-1])])


def per_ms(group: Any, times_ms: Any, units: Any, *, in_order: bool = False) -> tuple[Any, Any, Any]:
    """The recordings :func:`replay_groups` takes, from rows in any order (``in_order``: already sorted by group
    then time, as a Spark partition's): units summed per (group, millisecond), sorted, those summing to 0 dropped
    (no recording, as :func:`~kquotactl.impact.replay.replay_quota_id`)."""
    import numpy as np

    group, times_ms, units = (np.asarray(a, dtype=np.int64) for a in (group, times_ms, units))
    if not in_order:
        order = np.lexsort((times_ms, group))
        group, times_ms, units = group[order], times_ms[order], units[order]
    if not len(units):
        return group, times_ms, units
    starts = runs(group, times_ms)
    sums = np.add.reduceat(units, starts)
    keep = sums != 0
    return group[starts][keep], times_ms[starts][keep], sums[keep]


def replay_groups(group: Any, times_ms: Any, units: Any, key: str, limit: Any, window: Window) -> SampleColumns:
    """Every group's recordings (``units`` at ``times_ms``, sorted by group then time, one per (group, millisecond),
    none 0: :func:`per_ms`) replayed through ``Rate`` against ``limit`` (a float, or one per recording, the same
    within a group); what :func:`~kquotactl.impact.replay.replay_quota_id` gives each group, in columns."""
    import numpy as np

    group = np.asarray(group, dtype=np.int64)
    times_ms = np.asarray(times_ms, dtype=np.int64)
    units = np.asarray(units, dtype=np.int64)
    limits = np.broadcast_to(np.asarray(limit, dtype=np.float64), group.shape)
    if not len(group):
        return _outcomes(group, times_ms, units, np.zeros(0), np.zeros(0, dtype=np.int64), window)
    stat = sampled_stat_for(window.kafka_version)
    if stat["legacy"] or not stat["min_window_1ms"] or int(units.max()) * len(units) >= _EXACT:
        return _by_reference(group, times_ms, units, key, limits, window, np.ones(len(group), dtype=bool))
    rate, throttle = _steps(group, times_ms, units, key, limits, window)
    fast = _outcomes(group, times_ms, units, rate, throttle, window)
    if key not in UNRECORDED_WHEN_THROTTLED or not (throttle > 0).any():
        return fast
    # a throttled Fetch or connection is taken back out: from there on the group's state depends on it
    redo = np.isin(group, np.unique(group[throttle > 0]))
    slow = _by_reference(group, times_ms, units, key, limits, window, redo)
    keep = ~np.isin(fast.group, slow.group)
    parts = [np.concatenate((getattr(fast, f)[keep], getattr(slow, f))) for f in _FIELDS]
    order = np.lexsort((parts[1], parts[0]))
    return SampleColumns(*(p[order] for p in parts))


_FIELDS = ("group", "sample", "units", "units_throttled", "max_rate", "throttle_ms")


def _steps(group: Any, t: Any, units: Any, key: str, limits: Any, window: Window) -> tuple[Any, Any]:
    """Each recording's measured rate and throttle (the Kafka 3.8+ ring, with the 1 ms window floor)."""
    import numpy as np

    n_samples, size = window.num, window.sample_ms
    expire = n_samples * size
    n = len(t)
    first = np.r_[True, group[1:] != group[:-1]]
    dense = np.cumsum(first) - 1  # the group's number, 0..groups-1
    t0 = int(t.min())
    stride = int(t.max()) - t0 + max(size, expire) + 2
    if (int(dense[-1]) + 1) * stride >= 2**62:  # the search keys would overflow: halve the groups
        cut = int(np.searchsorted(dense, (int(dense[-1]) + 1) // 2))
        a = _steps(group[:cut], t[:cut], units[:cut], key, limits[:cut], window)
        b = _steps(group[cut:], t[cut:], units[cut:], key, limits[cut:], window)
        return np.concatenate((a[0], b[0])), np.concatenate((a[1], b[1]))
    at = dense * stride + (t - t0)  # one ascending key for (group, time)
    # a recording starts a sample when it comes S ms or more after the current sample's start: the chain from each
    # group's first recording through "the first recording S ms later", marked by pointer doubling
    jump = np.searchsorted(at, at + size, side="left")
    group_end = np.searchsorted(dense, dense, side="right")
    jump = np.where(jump >= group_end, n, jump)
    jump = np.r_[jump, n]
    starts = np.r_[first, False]
    while True:
        starts[jump[np.flatnonzero(starts)]] = True
        starts[n] = False
        jump = jump[jump]
        if (jump[:n] == n).all():
            break
    starts = starts[:n]
    sid = np.cumsum(starts) - 1  # the sample each recording went into (numbered across groups)
    s_first = np.flatnonzero(starts)
    s_last = np.r_[s_first[1:] - 1, n - 1]
    s_start, s_end = t[s_first], t[s_last]
    group_first_sample = sid[np.flatnonzero(first)][dense]  # per recording: its group's first sample
    values = units / float(USAGE[key].divisor)
    in_sample = _running_sums(values, units, starts, USAGE[key].divisor == 1)
    s_value = in_sample[s_last]
    # the samples counted at a recording: the last N before its own whose last recording is under N·S old
    s_key = dense[s_first] * stride + (s_end - t0)
    # (the stride leaves room for t - N·S before a group's first time: the key never reaches the group before)
    oldest_alive = np.searchsorted(s_key, dense * stride + (t - t0 - expire), side="right")
    counted = np.maximum(oldest_alive, sid - n_samples)
    # WindowedSum.combine: the ring's slots in order; slot r holds the latest sample numbered r mod (N + 1)
    k = sid - group_first_sample
    total = np.zeros(n)
    for r in range(n_samples + 1):
        j = k - np.mod(k - r, n_samples + 1)
        held = j >= 0
        j_abs = np.where(held, group_first_sample + j, 0)
        value = np.where(j == k, in_sample, np.where(j_abs >= counted, s_value[j_abs], 0.0))
        total = total + np.where(held, value, 0.0)
    elapsed = t - s_start[counted]
    full = elapsed // size
    elapsed = np.where(full < n_samples - 1, elapsed + (n_samples - 1 - full) * size, elapsed)
    window_ms = np.maximum(elapsed, 1)
    rate = total / (window_ms / 1000.0)
    return rate, throttle_ms(rate, limits, window_ms, window.cap_ms if KEYS[key].throttle_capped else None)


def _running_sums(values: Any, units: Any, starts: Any, integral: bool) -> Any:
    """Each recording's sample value right after it (``value += v`` from 0.0, in time order): exact integer sums
    for integral values, else the same additions in the same order, per sample."""
    import numpy as np

    sid = np.cumsum(starts) - 1
    if integral:
        c = np.cumsum(units)
        base = np.r_[0, c][np.flatnonzero(starts)]
        return (c - base[sid]).astype(np.float64)
    first = np.flatnonzero(starts)
    length = np.diff(np.r_[first, len(values)])
    pos = np.arange(len(values)) - first[sid]
    out = np.empty(len(values))
    # samples of similar lengths padded into one matrix each, summed along the rows (np.cumsum adds in order)
    bucket = np.ceil(np.log2(np.maximum(length, 1))).astype(np.int64)
    for b in np.unique(bucket).tolist():
        chosen = np.flatnonzero(bucket == b)
        width = int(length[chosen].max())
        rows = np.isin(sid, chosen)
        row_of = np.searchsorted(chosen, sid[rows])
        grid = np.zeros((len(chosen), width))
        grid[row_of, pos[rows]] = values[rows]
        out[rows] = np.cumsum(grid, axis=1)[row_of, pos[rows]]
    return out


def throttle_ms(rate: Any, limit: Any, window_ms: Any, cap_ms: int | None) -> Any:
    """:func:`kquotactl.core.throttlemath.quota_throttle_ms` element-wise, for limits above 0 (infinite: none)."""
    import numpy as np

    over = rate > limit
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        x = np.where(over, (rate - limit) / limit * window_ms, 0.0)
    floor = np.floor(x)
    big = floor >= 2.0**63  # infinite too: Math.round saturates
    whole = np.where(big, 0.0, floor)
    ms = np.where(big, _LONG_MAX, whole.astype(np.int64) + (x - whole >= 0.5))
    if cap_ms is not None:
        ms = np.minimum(ms, cap_ms)
    low = ms & 0xFFFFFFFF  # (int) of a long: the low 32 bits, signed
    return np.where(over, np.where(low >= 2**31, low - 2**32, low), 0)


def _outcomes(group: Any, t: Any, units: Any, rate: Any, throttle: Any, window: Window) -> SampleColumns:
    """Per (group, report sample ``t // S``): units, throttled units, the largest rate and throttle."""
    import numpy as np

    sample = t // window.sample_ms
    if not len(t):
        return SampleColumns(group, sample, units, units, np.zeros(0), np.zeros(0, dtype=np.int64))
    cut = runs(group, sample)
    hit = throttle > 0
    return SampleColumns(
        group[cut],
        sample[cut],
        np.add.reduceat(units, cut),
        np.add.reduceat(np.where(hit, units, 0), cut),
        np.maximum.reduceat(rate, cut),
        np.maximum.reduceat(np.where(hit, throttle, 0), cut),
    )


def _by_reference(group: Any, t: Any, units: Any, key: str, limits: Any, window: Window, chosen: Any) -> SampleColumns:
    """The chosen rows' groups replayed one at a time by :func:`~kquotactl.impact.replay.replay_quota_id`."""
    import numpy as np

    g, tt, u, lim = group[chosen], t[chosen], units[chosen], limits[chosen]
    cols: list[list[Any]] = [[] for _ in _FIELDS]
    edges = np.flatnonzero(np.r_[True, g[1:] != g[:-1], True])
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        for o in replay_quota_id(tt[a:b].tolist(), u[a:b].tolist(), key, float(lim[a]), window):
            for col, v in zip(
                cols, (int(g[a]), o.sample, o.units, o.units_throttled, o.max_rate, o.throttle_ms), strict=True
            ):
                col.append(v)
    types = (np.int64, np.int64, np.int64, np.int64, np.float64, np.int64)
    return SampleColumns(*(np.array(c, dtype=ty) for c, ty in zip(cols, types, strict=True)))
