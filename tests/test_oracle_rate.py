"""Differential: kquotactl's sampled ``Rate`` replay and steady-state throttle against Kafka's own ``Sensor`` + ``Rate``
+ ``Quota`` set up as the brokers do, and Kafka's own ``QuotaUtils`` (``common/ThrottleOracle.java``), every version.

Each case is one random event sequence (bursts at one instant, sub-window steps, gaps of about a window and far
longer), ``--window-num`` 1..11 (1 often), window sizes 1..3 s, limits positive, 0 and negative, with and without
the request/connection cap and the fetch/connection un-recording. Every recording's measured rate, window and
throttle must be identical (bit for bit: NaN and infinities included).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fixtures_oracle import ORACLE_VERSIONS, assert_no_mismatches
from kquotactl.core.keys import KEYS
from kquotactl.core.rate import replay, sampled_stat_for
from kquotactl.core.throttle import steady_state_throttle_ms
from kquotactl.testing.oracle import cases_per_run
from oracle_cases import FULL_VERSION, assert_replays_match_kafka
from oracle_cases import canon as _canon
from oracle_cases import limit as _limit

pytestmark = pytest.mark.jvm


def _value(rng: random.Random) -> float:
    r = rng.random()
    if r < 0.1:
        return 0.0
    if r < 0.6:
        return float(rng.randint(1, 5000))
    if r < 0.9:
        return rng.uniform(0, 3000)
    return rng.choice([1e9, 1e300, 0.5, 1.0])


def _events(rng: random.Random, samples: int, window_ms: int) -> list[tuple[int, float]]:
    t = rng.randint(0, 5000)
    out = []
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.25:
            step = 0  # a burst at one instant
        elif r < 0.6:
            step = rng.randint(1, window_ms // 2)
        elif r < 0.8:
            step = window_ms + rng.randint(-2, 2)
        elif r < 0.92:
            step = samples * window_ms + rng.randint(-2, 2)  # about the purge age
        else:
            step = rng.randint(0, 40 * samples * window_ms)  # a long gap
        t += max(step, 0)
        out.append((t, _value(rng)))
    return out


def _case(rng: random.Random) -> dict[str, Any]:
    samples = 1 if rng.random() < 0.25 else rng.randint(1, 11)
    window_s = rng.randint(1, 3)
    return {
        "kind": "rate",
        "samples": samples,
        "window_s": window_s,
        "limit": _limit(rng),
        "cap": rng.random() < 0.4,
        "unrecord": rng.random() < 0.4,
        "base": rng.choice([0, 1_700_000_000_000 + rng.randint(0, 10**9)]),
        "events": _events(rng, samples, window_s * 1000),
    }


def _ours(case: dict[str, Any], version: str) -> list[tuple[str, int, int]]:
    w = case["window_s"] * 1000
    steps = replay(
        [(t, v) for t, v in case["events"]],
        case["limit"],
        samples=case["samples"],
        window_ms=w,
        cap_ms=w if case["cap"] else None,
        unrecord_throttled=case["unrecord"],
        **sampled_stat_for(FULL_VERSION[version]),
    )
    return [(_canon(s.rate), s.window_ms, s.throttle_ms) for s in steps]


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_replay_matches_kafka_rate(kafka_oracle, oracle_seed, version):
    assert_replays_match_kafka(kafka_oracle, oracle_seed, version, _case, lambda c: _ours(c, version))


def _steady_case(rng: random.Random) -> tuple[str, float, float, int, int, dict[str, Any]]:
    """A client that has kept ``observed`` up for N + 2 samples (a 0 at each sample's start, O×S at its last ms),
    and the broker's answer to the next sample's first recording."""
    key = rng.choice(["producer_byte_rate", "consumer_byte_rate", "request_percentage", "connection_creation_rate"])
    samples = 1 if rng.random() < 0.2 else rng.randint(1, 11)
    window_s = rng.randint(1, 3)
    w = window_s * 1000
    observed = float(rng.randint(0, 5000)) if rng.random() < 0.8 else rng.randint(0, 4000) / 4
    limit = _limit(rng)
    events: list[tuple[int, float]] = []
    for j in range(samples + 2):
        events += [(j * w, 0.0), (j * w + w - 1, observed * window_s)]
    events.append(((samples + 2) * w, 0.0))
    case = {
        "kind": "rate",
        "samples": samples,
        "window_s": window_s,
        "limit": limit,
        "cap": KEYS[key].throttle_capped,
        "unrecord": False,
        "base": 1_700_000_000_000,
        "events": events,
    }
    return key, observed, limit, samples, window_s, case


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_steady_state_throttle_matches_a_long_steady_load_on_kafka(kafka_oracle, oracle_seed, version):
    """``--observed``: the formula is the broker's throttle at the start of a sample after a long steady load."""
    rng = random.Random(oracle_seed)
    cases = [_steady_case(rng) for _ in range(cases_per_run())]
    kafka = kafka_oracle(version, "ThrottleOracle").ask_many([c[-1] for c in cases])
    ours = [steady_state_throttle_ms(k, o, lim, n, s, FULL_VERSION[version]) for k, o, lim, n, s, _ in cases]
    theirs = [a["steps"][-1][2] if "steps" in a else a for a in kafka]
    assert_no_mismatches([c[:-1] for c in cases], ours, theirs, oracle_seed, version)
