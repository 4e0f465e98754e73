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
