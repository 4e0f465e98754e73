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
from typing import Any

from kquotactl.core.keys import KEYS, KeyScope
from kquotactl.core.recommend import Distribution, GroupId, Level, group_of
from kquotactl.impact.replay import BROKER_COLUMN, MODEL_KEYS, USAGE, Window, replay_quota_id

#: (group, key) -> broker -> that broker's per-sample rates
SampleRates = dict[tuple[GroupId, str], dict[str, list[float]]]


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
