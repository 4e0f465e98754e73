"""The local engine's replay of *windowed* input (the brokers' own sensors, read from Prometheus), column-wise.

A sample of windowed input stands alone: its rate is its units over ``divisor × S``, compared with the limit as it
is (:mod:`kquotactl.impact.replay`). So the replay is a group-by: units summed per (quota-id, sample) with numpy,
each quota-id resolved once per distinct pair or ip (the local engine's :func:`~kquotactl.impact.local.sid_of_pair`),
and the broker's throttle formula (``Window.throttle_ms``) called only for the samples over their limit. The
result is :func:`kquotactl.impact.local.run`'s on the same table, field for field (a test holds them equal on
random tables, seed printed), without a Python step per row: weeks of 1 s readings.
"""

from __future__ import annotations

from typing import Any

from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact.local import sid_of_ip, sid_of_pair
from kquotactl.impact.replay import (
    CLIENT_MODEL_KEYS,
    IP_MODEL_KEYS,
    USAGE,
    EngineResult,
    KeyTotals,
    QidStats,
    Sid,
    Window,
)


def run_windowed(table: Any, index: QuotaIndex, window: Window) -> EngineResult:
    """:func:`kquotactl.impact.local.run` of a windowed traffic table (pyarrow: ``ts``, the names, the usage
    columns), one broker's."""
    import numpy as np
    import pyarrow.compute as pc

    from kquotactl.impact.readers import ms_column, usage_units

    totals = {k: KeyTotals() for k in (*CLIENT_MODEL_KEYS, *IP_MODEL_KEYS)}
    valid = np.asarray(pc.is_valid(table.column("ts")), dtype=bool)
    if not valid.any():
        return EngineResult(0, None, None, [], totals)
    sample = np.asarray(pc.fill_null(ms_column(table.column("ts")), 0), dtype=np.int64) // window.sample_ms
    first, last = int(sample[valid].min()), int(sample[valid].max())
    users, user_of = name_codes(table, "user")
    clients, client_of = name_codes(table, "client_id")
    ips, ip_of = name_codes(table, "ip")
    pairs, pair_of = np.unique(user_of * len(clients) + client_of, return_inverse=True)
    names = [(users[p // len(clients)], clients[p % len(clients)]) for p in pairs.tolist()]
    limits: dict[Sid, float] = {}
    stats: list[QidStats] = []
    for key in (*CLIENT_MODEL_KEYS, *IP_MODEL_KEYS):
        if USAGE[key].column not in table.column_names:
            continue
        if key in IP_MODEL_KEYS:
            sids = [sid_of_ip(index, limits, key, ip) for ip in ips]
            of_row = ip_of
        else:
            sids = [sid_of_pair(index, limits, key, *pair) for pair in names]
            of_row = pair_of
        units = np.asarray(usage_units(table, USAGE[key]), dtype=np.int64)
        used = valid & (units != 0)
        distinct: dict[Sid, int] = {}  # pairs sharing a quota-id (a user's clients under its quota) are one
        known = np.array([-1 if s is None else distinct.setdefault(s, len(distinct)) for s in sids] or [-1])
        sid_row = known[of_row]
        t = totals[key]
        t.rows, t.units = int(np.count_nonzero(used)), int(units[used].sum())
        unlimited = used & (sid_row < 0)
        t.rows_unlimited, t.units_unlimited = int(np.count_nonzero(unlimited)), int(units[unlimited].sum())
        limited = used & (sid_row >= 0)
        stats += _sweeps(key, sid_row[limited], sample[limited], units[limited], list(distinct), limits, window, t)
    return EngineResult(int(np.count_nonzero(valid)), first, last, stats, totals)


def name_codes(table: Any, column: str) -> tuple[list[str], Any]:
    """A name column's distinct values and each row's index into them (a missing column or null: "")."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if column not in table.column_names:
        return [""], np.zeros(table.num_rows, dtype=np.int64)
    encoded = pc.dictionary_encode(pc.fill_null(pc.cast(table.column(column), pa.string()), "")).combine_chunks()
    return encoded.dictionary.to_pylist(), np.asarray(encoded.indices, dtype=np.int64)


def _sweeps(
    key: str,
    sid_row: Any,
    sample: Any,
    units: Any,
    sids: list[Sid],
    limits: dict[Sid, float],
    window: Window,
    totals: KeyTotals,
) -> list[QidStats]:
    """Each quota-id's samples: units summed per sample, the rate, the throttle of the samples over the limit."""
    import numpy as np

    order = np.lexsort((sample, sid_row))
    sid_row, sample, units = sid_row[order], sample[order], units[order]
    if not len(units):
        return []
    starts = np.flatnonzero(np.concatenate(([True], (np.diff(sid_row) != 0) | (np.diff(sample) != 0))))
    sums = np.add.reduceat(units, starts)
    rates = sums / window.denominator(key)
    owner = sid_row[starts]
    edges = np.flatnonzero(np.diff(owner) != 0) + 1
    out = []
    for part in np.split(np.arange(len(starts)), edges):
        sid = sids[int(owner[part[0]])]
        limit = limits[sid]
        r = rates[part]
        over = np.flatnonzero(r > limit)  # throttle_ms is 0 at or under the limit
        ms = [window.throttle_ms(key, float(r[i]), limit) for i in over.tolist()]
        hit = [i for i, m in zip(over.tolist(), ms, strict=True) if m > 0]
        throttled = [m for m in ms if m > 0]
        totals.units_throttled += int(sums[part][hit].sum()) if hit else 0
        out.append(
            QidStats(
                key,
                sid[1],
                sid[2],
                sid[3],
                sid[4],
                len(throttled) * window.size_s,
                max(0.0, float(r.max())),
                sum(throttled),
                max(throttled, default=0),
            )
        )
    return out
