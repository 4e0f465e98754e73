"""The traffic's rate per quota window sample, as the broker's ``Rate`` would have measured it with no quota in
the way: the evidence :func:`kquotactl.core.recommend.recommend` turns into limits.

Each group of the policy's level (a (user, client-id) pair, a user, a client-id; an ip for connection keys) is
replayed through :func:`kquotactl.impact.replay.replay_quota_id` with an infinite limit, the replay ``impact``
runs, so the rates are the sensor's: one recording per millisecond, fresh-sensor padding, the version's sample
ring. A sample's rate is the largest the sensor read during it. Only samples with traffic count: a limit must let
a client's active periods through, and an idle one says nothing about what its bursts need.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kquotactl.core.keys import KEYS, KeyScope
from kquotactl.core.precedence import QuotaIndex, Resolution, Sharing
from kquotactl.core.recommend import Distribution, GroupId, Level, group_of
from kquotactl.impact.replay import BROKER_COLUMN, MODEL_KEYS, USAGE, Window, replay_quota_id

#: (group, key) -> broker -> that broker's per-sample rates
SampleRates = dict[tuple[GroupId, str], dict[str, list[float]]]
#: (group, key, broker) -> the rows with the key's usage and that usage summed, beside its distribution
Volumes = dict[tuple[GroupId, str, str], tuple[int, int]]


@dataclass(frozen=True, slots=True)
class Settled:
    """A quota-id whose replay its distribution already tells: never throttled, at ``peak`` at most.

    Its recordings are exactly one group's (a (user, client-id) pair resolving at a pair level, or an ip), so the
    replay would measure the very rates the distribution was built from; its limit is at least their peak, and
    ``Rate`` throttles only a rate above the limit. The replay can leave its rows out."""

    key: str
    level: int
    user: str | None
    client_id: str | None
    ip: str | None
    peak: float
    rows: int
    units: int


@dataclass(frozen=True)
class Settlement:
    """What one broker's replay can leave out: the ``settled`` quota-ids, and the ``keys`` none of whose limited
    usage is left to replay (each of their quota-ids settled, or no limit at all). Besides, what names its
    quota-ids can have: every user, client-id and ip (``names``) of the rows with usage of the ``named`` keys."""

    settled: tuple[Settled, ...] = ()
    keys: frozenset[str] = frozenset()
    names: tuple[frozenset[str], frozenset[str], frozenset[str]] = (frozenset(), frozenset(), frozenset())
    named: frozenset[str] = frozenset()


#: a replay with nothing settled
NOTHING_SETTLED = Settlement()


def settled_quota_ids(
    index: QuotaIndex,
    dists: Mapping[tuple[GroupId, str], Mapping[str, Distribution]],
    volumes: Volumes,
    keys: Sequence[str],
) -> dict[str, Settlement]:
    """Per broker, what ``dists`` (of every group with usage of ``keys``, at a (user, client-id) level) settle
    of the replay of ``index``.

    Only pairs with both names set: an empty name resolves by the broker's own rules for it, not the pairs'. Only
    ips spelled as the quotas spell them: the replay matches an ip's quota by its spelling."""
    settled: dict[str, list[Settled]] = {}
    open_keys: dict[str, set[str]] = {}  # broker -> keys with usage some quota-id of which is still to replay
    names: dict[str, tuple[set[str], set[str], set[str]]] = {}  # broker -> the names its groups hold
    for (group, key), per_broker in dists.items():
        r = _settling(index, group, key)
        for broker, d in per_broker.items():
            found = names.setdefault(broker, (set(), set(), set()))
            for part, name in enumerate((group.user, group.client_id, group.ip)):
                if name is not None:  # a group names its rows (a pair both names, an ip its own)
                    found[part].add(name)
            if r is not None and r.limit is None:
                continue  # no limit: the replay leaves it out anyway
            # the peak compared with the limit as the replay compares them, as doubles
            if r is None or r.level is None or r.limit is None or not d.peak <= float(r.limit):
                open_keys.setdefault(broker, set()).add(key)
                continue
            rows, units = volumes[(group, key, broker)]
            settled.setdefault(broker, []).append(
                Settled(key, r.level, group.user, group.client_id, group.ip, d.peak, rows, units)
            )
    pairs = all(g.ip is not None or (g.user is not None and g.client_id is not None) for g, _ in dists)
    named = frozenset(k for k in keys if pairs or KEYS[k].kind is KeyScope.IP)
    return {
        b: Settlement(
            tuple(settled.get(b, ())),
            frozenset(keys) - open_keys.get(b, set()),
            (frozenset(names[b][0]), frozenset(names[b][1]), frozenset(names[b][2])),
            named,
        )
        for b in sorted(names)
    }


def _settling(index: QuotaIndex, group: GroupId, key: str) -> Resolution | None:
    """How ``group``'s usage of ``key`` resolves when the group is its quota-id's only traffic, else None."""
    if group.ip is not None:
        spelled = index.ip_spellings(group.ip)
        return index.resolve_ip(group.ip, key) if all(e.ip == group.ip for e in spelled) else None
    if not group.user or not group.client_id:
        return None
    r = index.resolve(key, group.user, group.client_id)
    return r if r.sharing in (Sharing.PAIR, Sharing.NONE) else None


def sample_rates(
    columns: Mapping[str, Sequence[Any]], level: Level, window: Window, keys: Sequence[str] = MODEL_KEYS
) -> SampleRates:
    """Every group's per-sample rates, per key and broker, from ``readers.engine_columns`` columns (a
    :data:`~kquotactl.impact.replay.BROKER_COLUMN` splits them per broker; without one the traffic is one broker's)."""
    usage: dict[tuple[GroupId, str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    times = columns["ms"]
    users, clients, ips = columns["user"], columns["client_id"], columns["ip"]
    brokers = columns.get(BROKER_COLUMN) or [""] * len(times)
    groups: dict[tuple[str, str], GroupId] = {}
    for key in keys:
        col = columns.get("u_" + USAGE[key].column)
        if col is None:
            continue
        by_ip = KEYS[key].kind is KeyScope.IP
        for i, u in enumerate(col):
            if not u or times[i] is None:
                continue
            if by_ip:
                group = GroupId(ip=ips[i])
            else:
                pair = (users[i], clients[i])
                group = groups.get(pair) or groups.setdefault(pair, group_of(level, *pair))
            usage[(group, key, str(brokers[i]))][times[i]] += u
    out: SampleRates = defaultdict(dict)
    for (group, key, broker), per_ms in sorted(usage.items(), key=lambda kv: (kv[0][0].sort_key(), kv[0][1:])):
        steps = replay_quota_id(list(per_ms), list(per_ms.values()), key, math.inf, window)
        out[(group, key)][broker] = [s.max_rate for s in steps]
    return dict(out)


def distributions(rates: SampleRates, percentile: float) -> dict[tuple[GroupId, str], dict[str, Distribution]]:
    """Each broker's :class:`~kquotactl.core.recommend.Distribution`, with the policy's ``percentile``."""
    return {
        gk: {b: Distribution.of(v, extra=[percentile]) for b, v in per_broker.items()}
        for gk, per_broker in rates.items()
    }


#: (group, key) -> broker -> that broker's per-sample rates, a numpy array in sample order
SampleRateArrays = dict[tuple[GroupId, str], dict[str, Any]]


def windowed_sample_rates(
    table: Any, level: Level, window: Window, keys: Sequence[str] = MODEL_KEYS
) -> tuple[SampleRateArrays, dict[str, int]]:
    """:func:`sample_rates` of traffic that is already the broker's rate over its quota window (the sensors read
    from Prometheus, :func:`kquotactl.observe.throttled.sensor_traffic`): not replayed through ``Rate`` again, a
    sample's rate is its units over ``divisor × S``, what the windowed replay compares with a limit, summed over
    the sensors a group holds. Column-wise (numpy), for ranges of weeks.

    A sensor names the quota-id the broker resolved, which may be coarser than the policy's level (a user's
    sensor when the cluster's quota is per user cannot be split per client-id): such rows are left out, and
    counted per key in the second value returned."""
    import numpy as np

    from kquotactl.impact.columnar import name_codes
    from kquotactl.impact.readers import ms_column, usage_units

    sample = np.asarray(ms_column(table.column("ts"))) // window.sample_ms
    users, u_idx = name_codes(table, "user")
    clients, c_idx = name_codes(table, "client_id")
    pairs, pair_of = np.unique(u_idx * len(clients) + c_idx, return_inverse=True)
    of_pair = [group_of(level, users[p // len(clients)], clients[p % len(clients)]) for p in pairs.tolist()]
    index: dict[GroupId, int] = {}  # the pairs a level puts in one group: (u, c1), (u, c2) at user
    group_of_pair = np.array([index.setdefault(g, len(index)) for g in of_pair] or [0], dtype=np.int64)
    level_groups = list(index)
    unattributed = np.array([not _attributable(g) for g in of_pair] or [False], dtype=bool)
    brokers, b_idx = name_codes(table, BROKER_COLUMN)
    ips, ip_idx = name_codes(table, "ip")
    out: SampleRateArrays = {}
    skipped: dict[str, int] = {}
    for key in keys:
        usage = USAGE[key]
        if usage.column not in table.column_names:
            continue
        units = np.asarray(usage_units(table, usage), dtype=np.int64)
        by_ip = KEYS[key].kind is KeyScope.IP
        used = units > 0
        if not by_ip:
            missing = used & unattributed[pair_of]
            if n := int(np.count_nonzero(missing)):
                skipped[key] = n
            used &= ~missing
        groups = [GroupId(ip=ip) for ip in ips] if by_ip else level_groups
        gid = (ip_idx if by_ip else group_of_pair[pair_of])[used]
        b, s, u = b_idx[used], sample[used], units[used]
        order = np.lexsort((s, b, gid))
        gid, b, s, u = gid[order], b[order], s[order], u[order]
        cut = np.flatnonzero((np.diff(gid) != 0) | (np.diff(b) != 0) | (np.diff(s) != 0)) + 1
        starts = np.concatenate(([0], cut)) if len(u) else np.zeros(0, dtype=np.int64)
        sums = np.add.reduceat(u, starts) if len(u) else u
        rates = sums / window.denominator(key)  # the windowed replay's rate, the same float
        g_of, b_of = gid[starts], b[starts]
        edges = np.flatnonzero((np.diff(g_of) != 0) | (np.diff(b_of) != 0)) + 1
        for part in np.split(np.arange(len(starts)), edges) if len(starts) else []:
            group = groups[int(g_of[part[0]])]
            out.setdefault((group, key), {})[str(brokers[int(b_of[part[0]])])] = rates[part]
    ordered = sorted(out.items(), key=lambda kv: (kv[0][0].sort_key(), kv[0][1]))
    return {gk: dict(sorted(per_broker.items())) for gk, per_broker in ordered}, skipped


def _attributable(group: GroupId) -> bool:
    """Whether a sensor's quota-id names what the level groups by (an empty tag: the broker's quota-id left it
    out)."""
    return all(v != "" for v in (group.user, group.client_id) if v is not None)


#: values summed exactly per chunk: a mantissa's halves (< 2^27) add up below 2^47 in float64, so exactly
_SUM_CHUNK = 1 << 20


def array_distribution(rates: Any, extra: Sequence[float] = ()) -> Distribution:
    """:meth:`~kquotactl.core.recommend.Distribution.of` of a numpy array, bit for bit, without a sort into a
    Python list (months of samples): the wanted ranks by ``np.partition``, ``over`` counted, ``total`` the
    correctly rounded sum (what ``math.fsum`` returns), the peak the maximum. ``rates`` (finite float64) is
    reordered in place: the caller's own array."""
    import numpy as np

    from kquotactl.core.recommend import REPORTED, percentile

    n = len(rates)
    if not n:
        return Distribution.of((), extra)
    wanted = sorted({*REPORTED, *extra})
    ranks = {r for q in wanted for r in _ranks(n, q)}
    rates.partition(sorted(ranks))
    ranked = _Ranked(rates)
    ps = {q: percentile(ranked, q) for q in wanted}
    over = {q: int(np.count_nonzero(rates > v)) for q, v in ps.items()}
    return Distribution(n, ps, float(rates.max()), over, exact_sum(rates))


def _ranks(n: int, q: float) -> tuple[int, int]:
    """The two positions :func:`~kquotactl.core.recommend.percentile` reads for ``q`` of ``n`` sorted values."""
    lo = math.floor(q / 100.0 * (n - 1))
    return lo, min(lo + 1, n - 1)


class _Ranked(Sequence[float]):
    """A partitioned array read as the sorted sequence at the ranks it was partitioned on (all ``percentile``
    reads), as Python floats: the core's own :func:`~kquotactl.core.recommend.percentile` computes on it."""

    def __init__(self, values: Any) -> None:
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, i: Any) -> Any:
        return float(self._values[i])


def exact_sum(values: Any) -> float:
    """``math.fsum(values)`` of a float64 array, column-wise: each value split into its exponent and integer
    mantissa, the mantissas summed exactly per exponent, and the exact total rounded once (Python's int division
    rounds correctly, as ``fsum`` does)."""
    import numpy as np

    if not np.isfinite(values).all():
        return math.fsum(values.tolist())
    per_exponent: dict[int, int] = {}
    for at in range(0, len(values), _SUM_CHUNK):
        mantissa, exponent = np.frexp(values[at : at + _SUM_CHUNK])
        whole = (mantissa * 2.0**53).astype(np.int64)  # exact: a power-of-two scaling of 53 bits
        low = exponent.min()
        at_exp = exponent - low
        high_sums = np.bincount(at_exp, weights=(whole >> 26).astype(np.float64))
        low_sums = np.bincount(at_exp, weights=(whole & ((1 << 26) - 1)).astype(np.float64))
        for i in np.flatnonzero((high_sums != 0) | (low_sums != 0)).tolist():
            e = int(low) + i - 53
            per_exponent[e] = per_exponent.get(e, 0) + (int(high_sums[i]) << 26) + int(low_sums[i])
    base = min(per_exponent, default=0)
    total = sum(m << (e - base) for e, m in per_exponent.items())
    if total == 0:
        return 0.0  # as fsum's: no negative zero, even of negative zeros
    return float(total << base) if base >= 0 else total / (1 << -base)


def column_distributions(group: Any, rates: Any, qs: Sequence[float]) -> dict[str, Any]:
    """:meth:`Distribution.of <kquotactl.core.recommend.Distribution.of>` of many groups at once, the same floats
    (``tests/test_columnrate.py`` holds them equal): ``rates`` in runs of one group each (``group``), ``qs`` the
    percentiles (:data:`~kquotactl.core.recommend.REPORTED` among them). Per group, in the runs' order: samples,
    peak, total, and ``ps``/``over`` with a column per ``qs`` entry. The Spark engine's executors compute the
    distributions of every group they hold, and one call of :meth:`Distribution.of` per group cost most of that."""
    import numpy as np

    group = np.asarray(group)
    values = np.asarray(rates, dtype=np.float64)
    if not len(values):
        empty = np.zeros(0)
        return {
            "samples": np.zeros(0, dtype=np.int64),
            "peak": empty,
            "total": [],
            "ps": np.zeros((0, len(qs))),
            "over": np.zeros((0, len(qs)), dtype=np.int64),
        }
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    n = np.diff(np.r_[starts, len(values)])
    if np.isnan(values).any():  # sorted() and numpy place NaN differently: one group at a time
        found = [Distribution.of(values[a : a + k].tolist(), extra=qs) for a, k in zip(starts, n, strict=True)]
        return {
            "samples": np.array([d.samples for d in found], dtype=np.int64),
            "peak": np.array([d.peak for d in found]),
            "total": [d.total for d in found],
            "ps": np.array([[d.percentiles[q] for q in qs] for d in found]).reshape(len(found), len(qs)),
            "over": np.array([[d.over[q] for q in qs] for d in found], dtype=np.int64).reshape(len(found), len(qs)),
        }
    run = np.repeat(np.arange(len(starts)), n)
    ordered = values[np.lexsort((values, run))]  # each group's values ascending, the groups in place
    ps = np.empty((len(starts), len(qs)))
    over = np.empty((len(starts), len(qs)), dtype=np.int64)
    last = n - 1
    for j, q in enumerate(qs):  # kquotactl.core.recommend.percentile, element-wise
        rank = q / 100.0 * last.astype(np.float64)
        lo = np.floor(rank).astype(np.int64)
        hi = np.minimum(lo + 1, last)
        frac = rank - lo
        a, b = ordered[starts + lo], ordered[starts + hi]
        diff = b - a
        ps[:, j] = np.where(frac >= 0.5, b - diff * (1.0 - frac), a + diff * frac)
        over[:, j] = n - np.add.reduceat((ordered <= ps[run, j]).astype(np.int64), starts)
    flat = ordered.tolist()
    ends = (starts + n).tolist()
    return {
        "samples": n.astype(np.int64),
        "peak": ordered[starts + last],
        "total": [math.fsum(flat[a:b]) for a, b in zip(starts.tolist(), ends, strict=True)],
        "ps": ps,
        "over": over,
    }
