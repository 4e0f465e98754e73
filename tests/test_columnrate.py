"""The column-wise ``Rate`` replay (:mod:`kquotactl.impact.columnrate`) against the reference replay of one quota-id
at a time (:func:`kquotactl.impact.replay.replay_quota_id`, itself held to Kafka's classes by
``tests/test_oracle_rate.py``): every field of every sample equal, bit for bit, on random recordings.

The seed is ``KQUOTACTL_FUZZ_SEED`` or random, printed and named in every failure. The recordings mix gaps around
the sample length and the window (purges, fresh padding, samples starting late), bursts of one recording a
millisecond, every modelled key (integral byte counts, request time in fractions, connections), limits low enough
to throttle (and take Fetches and connections back out), infinite limits, several window shapes and Kafka versions.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import sys

import numpy as np
import pytest

from kquotactl.impact.columnrate import per_ms, replay_groups, throttle_ms
from kquotactl.impact.replay import MODEL_KEYS, UNRECORDED_WHEN_THROTTLED, Window, replay_quota_id

SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
print(f"columnrate seed: KQUOTACTL_FUZZ_SEED={SEED}", file=sys.stderr)


def _times(rnd: random.Random, count: int, window: Window) -> list[int]:
    """Recording times with gaps of every scale that matters to the ring: sub-millisecond bursts (repeats), less
    than a sample, around a sample, around the whole window, far beyond it."""
    s, w = window.sample_ms, window.sample_ms * window.num
    t = rnd.randrange(0, 10 * s)
    out = []
    for _ in range(count):
        out.append(t)
        gap = rnd.choice([0, 1, rnd.randrange(1, s), s - 1, s, s + 1, rnd.randrange(s, w + 2), w - 1, w, w + 1, 3 * w])
        t += max(0, gap)
    return out


def _case(rnd: random.Random) -> tuple[str, Window, list[int], list[int], list[int], dict[int, float]]:
    window = Window(
        rnd.choice([1, 2, 3, 11, 11]),
        rnd.choice([1, 1, 2]),
        kafka_version=rnd.choice([None, None, (3, 8), (4, 4), (3, 7), (3, 2)]),
    )
    key = rnd.choice(MODEL_KEYS)
    groups, times, units = [], [], []
    limits = {}
    for g in range(rnd.randrange(1, 8)):
        limits[g * 3] = rnd.choice([math.inf, 10.0 ** rnd.uniform(-1, 6), rnd.uniform(0.5, 50)])
        for t in _times(rnd, rnd.randrange(1, 60), window):
            groups.append(g * 3)  # not dense: the caller's numbers
            times.append(t)
            units.append(rnd.choice([0, 1, rnd.randrange(1, 10_000), rnd.randrange(1, 10**9)]))
    rnd.shuffle(order := list(range(len(times))))
    return key, window, [groups[i] for i in order], [times[i] for i in order], [units[i] for i in order], limits


@pytest.mark.parametrize("round_", range(4))
def test_columns_equal_the_reference_replay_bit_for_bit(round_: int) -> None:
    rnd = random.Random(SEED * 4 + round_)
    checked = 0
    for case in range(150):
        key, window, groups, times, units, limit_of = _case(rnd)
        g, t, u = per_ms(groups, times, units)
        got = replay_groups(g, t, u, key, np.array([limit_of[int(x)] for x in g]), window)
        want = []
        for grp in sorted(set(groups)):
            mine = [i for i, x in enumerate(groups) if x == grp]
            outcomes = replay_quota_id([times[i] for i in mine], [units[i] for i in mine], key, limit_of[grp], window)
            want += [(grp, o.sample, o.units, o.units_throttled, o.max_rate, o.throttle_ms) for o in outcomes]
        rows = list(
            zip(
                got.group.tolist(),
                got.sample.tolist(),
                got.units.tolist(),
                got.units_throttled.tolist(),
                got.max_rate.tolist(),
                got.throttle_ms.tolist(),
                strict=True,
            )
        )
        where = f"seed {SEED} (KQUOTACTL_FUZZ_SEED={SEED}), round {round_}, case {case}: {key}, {window}"
        assert len(rows) == len(want), where
        for a, b in zip(rows, want, strict=True):
            assert a[:4] == b[:4] and a[5] == b[5], f"{where}: {a} != {b}"
            assert a[4] == b[4] or (math.isnan(a[4]) and math.isnan(b[4])), f"{where}: rate {a[4]!r} != {b[4]!r}"
        checked += len(rows)
    assert checked > 0


def test_throttled_fetches_are_taken_back_out_as_the_broker_does() -> None:
    """A quota-id whose Fetch is throttled replays, from then on, without the unrecorded bytes: the column-wise
    replay must give what the reference gives there too (it hands such quota-ids to it)."""
    key = next(k for k in MODEL_KEYS if k in UNRECORDED_WHEN_THROTTLED)
    window = Window()
    times = list(range(0, 20_000, 100))
    units = [5_000] * len(times)
    got = replay_groups(*per_ms([1] * len(times), times, units), key, 10_000.0, window)
    want = replay_quota_id(times, units, key, 10_000.0, window)
    assert got.throttle_ms.tolist() == [o.throttle_ms for o in want]
    assert got.units_throttled.tolist() == [o.units_throttled for o in want]
    assert any(o.throttle_ms > 0 for o in want)


def test_the_throttle_formula_matches_the_brokers_element_wise() -> None:
    from kquotactl.core.throttlemath import quota_throttle_ms

    rnd = random.Random(SEED)
    for _ in range(2_000):
        limit = rnd.choice([math.inf, 10.0 ** rnd.uniform(-300, 300), rnd.uniform(1e-3, 1e6)])
        rate = rnd.choice([0.0, limit, limit * rnd.uniform(0, 10), 10.0 ** rnd.uniform(-300, 308), math.inf])
        window_ms = rnd.choice([1, 999, 10_000, 11_000, 2**40])
        cap = rnd.choice([None, 1_000, 2_000])
        got = int(throttle_ms(np.array([rate]), np.array([limit]), np.array([window_ms]), cap)[0])
        assert got == quota_throttle_ms(rate, limit, window_ms, cap), (SEED, rate, limit, window_ms, cap)


def test_column_distributions_equal_the_core_one_group_at_a_time() -> None:
    """The Spark engine's executors compute every group's distribution at once (numpy); each must be
    :meth:`Distribution.of` of that group's rates, bit for bit: percentiles, counts over them, peak, sum."""
    from kquotactl.core.recommend import REPORTED, Distribution
    from kquotactl.impact.recommend import column_distributions

    rnd = random.Random(SEED)
    for case in range(200):
        qs = sorted({*REPORTED, rnd.choice([0.0, 12.5, 50.0, 90.0, 99.9, 100.0, rnd.uniform(0, 100)])})
        groups, rates = [], []
        for g in range(rnd.randrange(1, 12)):
            pool = [rnd.uniform(0, 1e9), 0.5, 1e-3, float(rnd.randrange(10))]
            for _ in range(rnd.choice([1, 2, 3, rnd.randrange(1, 300)])):
                groups.append(g * 7)
                rates.append(rnd.choice([rnd.choice(pool), rnd.uniform(0, 10.0 ** rnd.uniform(-3, 12))]))
        if case % 10 == 0:
            rates[rnd.randrange(len(rates))] = math.nan
        got = column_distributions(np.array(groups), np.array(rates), qs)
        edges = [i for i in range(len(groups) + 1) if i in (0, len(groups)) or groups[i] != groups[i - 1]]
        for j, (a, b) in enumerate(itertools.pairwise(edges)):
            want = Distribution.of(rates[a:b], extra=qs)
            mine = Distribution(
                int(got["samples"][j]),
                dict(zip(qs, got["ps"][j].tolist(), strict=True)),
                float(got["peak"][j]),
                dict(zip(qs, got["over"][j].tolist(), strict=True)),
                got["total"][j],
            )
            where = f"seed {SEED} (KQUOTACTL_FUZZ_SEED={SEED}), case {case}, group {j}"
            assert repr(mine) == repr(want), where
