"""A distribution from a numpy array (months of Prometheus samples) is the core's ``Distribution.of`` bit for bit:
random arrays with ties, one value, zeros, huge and tiny magnitudes; seed printed (``KQUOTACTL_FUZZ_SEED``)."""

from __future__ import annotations

import math
import os
import random
from typing import Any

import numpy as np
import pytest

from kquotactl.core.recommend import Distribution
from kquotactl.impact import recommend as impact_recommend
from kquotactl.impact.recommend import array_distribution, exact_sum

SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))


def _bits(d: Distribution) -> Any:
    """Every field, floats by their bits (NaN equal to NaN, 0.0 unequal to -0.0)."""
    return (
        d.samples,
        {q: v.hex() for q, v in d.percentiles.items()},
        d.peak.hex(),
        dict(d.over),
        d.total.hex(),
    )


def _random_array(rng: np.random.Generator) -> Any:
    n = int(rng.choice([0, 1, 2, 3, 7, 100, 1001, int(rng.integers(1, 5000))]))
    shape = rng.integers(0, 6)
    if shape == 0:  # ties: few distinct values
        values = rng.choice(rng.uniform(0, 1e6, size=3), size=n)
    elif shape == 1:  # zeros among rates
        values = rng.uniform(0, 1e6, size=n) * (rng.random(n) < 0.5)
    elif shape == 2:  # magnitudes from subnormal to near the largest double
        values = 10.0 ** rng.uniform(-320, 300, size=n)
    elif shape == 3:  # one value, repeated
        values = np.full(n, rng.uniform(0, 1e9))
    elif shape == 4:  # integers over a window's divisor, as the windowed rates are
        values = rng.integers(1, 2**40, size=n) / 10.0
    else:
        values = rng.exponential(1e5, size=n)
    return np.asarray(values, dtype=np.float64)


def test_array_distribution_is_distribution_of_bit_for_bit() -> None:
    rng = np.random.default_rng(SEED)
    for case in range(400):
        values = _random_array(rng)
        extra = [float(rng.uniform(0, 100)), 100.0 * float(rng.integers(0, 2))][: int(rng.integers(0, 3))]
        expected = Distribution.of(values.tolist(), extra=extra)
        got = array_distribution(values.copy(), extra=extra)
        assert _bits(got) == _bits(expected), f"seed {SEED} (KQUOTACTL_FUZZ_SEED={SEED}), case {case}, n {len(values)}"


def test_exact_sum_is_fsum_where_a_float_sum_is_not() -> None:
    rng = np.random.default_rng(SEED)
    crafted = np.array([1e308, 1.0, -1e308, 1e-300, 3.0, 2.0**-1074] * 3 + [2.0**53, 1.0, 1.0], dtype=np.float64)
    assert float(np.sum(crafted)) != math.fsum(crafted.tolist())  # the case tells an exact sum from a float one
    assert exact_sum(crafted) == math.fsum(crafted.tolist())
    for _ in range(200):
        n = int(rng.integers(1, 3000))
        values = rng.choice([-1.0, 1.0], size=n) * 10.0 ** rng.uniform(-310, 300, size=n)
        assert exact_sum(values).hex() == math.fsum(values.tolist()).hex(), f"seed {SEED}"
    assert exact_sum(np.array([-0.0, -0.0])).hex() == math.fsum([-0.0, -0.0]).hex()
    assert exact_sum(np.array([5.0, -5.0])).hex() == math.fsum([5.0, -5.0]).hex()


def test_exact_sum_over_several_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact_recommend, "_SUM_CHUNK", 7)
    values = np.random.default_rng(SEED).exponential(1e5, size=1000)
    assert exact_sum(values) == math.fsum(values.tolist()), f"seed {SEED}"
