"""Differential: kquotactl's ``controller_mutation_rate`` token bucket (strict and permissive) against Kafka's own
``TokenBucket`` sensor and ``StrictControllerMutationQuota`` / ``PermissiveControllerMutationQuota``
(``common/ThrottleOracle.java``) on every oracle version (all have KIP-599: 2.7+).

Each case is one random sequence of requests (bursts at one instant, gaps short and long) with random mutation
counts, ``--window-num`` 1..11, window sizes 1..3 s, limits positive, 0 and negative, and a broker clock either real
(the bucket starts full) or near 0 (it starts nearly empty). Every request's tokens left, throttle and refusal must
be identical; so must ``--observed``'s figure (the same load as :func:`kquotactl.core.rate.mutation_window_load`).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fixtures_oracle import ORACLE_VERSIONS, assert_no_mismatches
from kquotactl.core.rate import mutation_window_load, replay_token_bucket
from kquotactl.core.throttle import steady_state_throttle_ms
from kquotactl.testing.oracle import cases_per_run
from kquotactl.testing.versions import RELEASES
from oracle_cases import assert_replays_match_kafka
from oracle_cases import canon as _canon
from oracle_cases import limit as _limit

pytestmark = pytest.mark.jvm

REAL_CLOCK = 1_700_000_000_000


def _case(rng: random.Random) -> dict[str, Any]:
    samples = 1 if rng.random() < 0.2 else rng.randint(1, 11)
    window_s = rng.randint(1, 3)
    t = rng.randint(0, 3000)
    events = []
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        t += 0 if r < 0.25 else rng.randint(1, 1500) if r < 0.85 else rng.randint(0, 60 * samples * window_s * 1000)
        v = float(rng.randint(0, 60)) if rng.random() < 0.8 else rng.choice([0.5, 1e6, rng.uniform(0, 100)])
        events.append((t, v))
    return {
        "kind": "mutation",
        "samples": samples,
        "window_s": window_s,
        "limit": _limit(rng),
        "mode": rng.choice(["strict", "permissive"]),
        "base": REAL_CLOCK + rng.randint(0, 10**9) if rng.random() < 0.8 else rng.randint(0, 20_000),
        "events": events,
    }


def _ours(case: dict[str, Any], version: tuple[int, ...]) -> list[tuple[str, int, bool]]:
    steps = replay_token_bucket(
        case["events"],
        case["limit"],
        samples=case["samples"],
        window_ms=case["window_s"] * 1000,
        mode=case["mode"],
        epoch_ms=case["base"],
        kafka_version=version,
    )
    return [(_canon(s.rate), s.throttle_ms, s.rejected) for s in steps]


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_token_bucket_replay_matches_kafka(kafka_oracle, oracle_seed, version):
    release = RELEASES[version].version
    assert_replays_match_kafka(kafka_oracle, oracle_seed, version, _case, lambda case: _ours(case, release))


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_observed_mutation_figure_matches_kafka(kafka_oracle, oracle_seed, version):
    rng = random.Random(oracle_seed)
    cases = []
    for _ in range(cases_per_run()):
        observed = float(rng.randint(0, 100)) if rng.random() < 0.8 else rng.uniform(0, 100)
        n, s, limit, mode = rng.randint(1, 11), rng.randint(1, 3), _limit(rng), rng.choice(["strict", "permissive"])
        cases.append((observed, limit, n, s, mode))
    requests = [
        {
            "kind": "mutation",
            "samples": n,
            "window_s": s,
            "limit": limit,
            "mode": mode,
            "base": REAL_CLOCK,
            "events": mutation_window_load(observed, n, s),
        }
        for observed, limit, n, s, mode in cases
    ]
    kafka = kafka_oracle(version, "ThrottleOracle").ask_many(requests)
    release = RELEASES[version].version
    ours = [steady_state_throttle_ms("controller_mutation_rate", o, lim, n, s, release, m) for o, lim, n, s, m in cases]
    theirs = [a["steps"][-1][1] if "steps" in a else a for a in kafka]
    assert_no_mismatches(cases, ours, theirs, oracle_seed, version)
