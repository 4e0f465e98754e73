"""Random inputs shared by the throttle differential tests (``test_oracle_rate``, ``test_oracle_mutation``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from fixtures_oracle import ORACLE_VERSIONS, assert_no_mismatches, random_cases
from kquotactl.testing.versions import RELEASES

#: What each oracle version is: the full Kafka version the jars are.
FULL_VERSION = {line: RELEASES[line].version for line in ORACLE_VERSIONS}


def limit(rng: random.Random) -> float:
    """A quota as a broker may hold it: mostly positive (small, large, tiny), and 0 or negative (kafka-configs 2.8
    wrote them, brokers apply them)."""
    r = rng.random()
    if r < 0.08:
        return 0.0
    if r < 0.16:
        return -rng.choice([1.0, 0.5, 100.0, rng.uniform(0, 1e4)])
    if r < 0.2:
        return rng.choice([1e-300, 5e-324, 1e300, 0.001])
    if r < 0.6:
        return float(rng.randint(1, 2000))
    return 10 ** rng.uniform(-2, 7)


def canon(x: float) -> str:
    """A double compared bit for bit (``float.hex``; every NaN alike)."""
    return float(x).hex()


def kafka_steps(answer: dict[str, Any]) -> Any:
    """ThrottleOracle's answer as the tests compare it: each step with its first column (the rate, or the bucket's
    tokens) made :func:`canon`; an error answer as is."""
    if "error" in answer:
        return answer
    return [(canon(float(first)), *rest) for first, *rest in answer["steps"]]


def assert_replays_match_kafka(
    kafka_oracle: Any,
    seed: int,
    version: str,
    make_case: Callable[[random.Random], dict[str, Any]],
    ours: Callable[[dict[str, Any]], Any],
) -> None:
    """Random ThrottleOracle cases replayed by kquotactl (``ours``) and by Kafka ``version``, step by step alike."""
    cases = random_cases(seed, make_case)
    kafka = kafka_oracle(version, "ThrottleOracle").ask_many(cases)
    assert_no_mismatches(cases, map(ours, cases), map(kafka_steps, kafka), seed, version, limit=2)
