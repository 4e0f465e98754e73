"""Random inputs shared by the throttle differential tests (``test_oracle_rate``, ``test_oracle_mutation``)."""

from __future__ import annotations

import random


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
