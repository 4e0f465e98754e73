"""Throttle-time math (KIP-13 / KIP-124), as Kafka's brokers compute it.

Steady state: a client sustaining rate O against quota T over a quota window W is delayed
X = (O − T) / T × W, rounded half-up to milliseconds as Java's ``Math.round``; request and connection
quotas cap the delay at one window sample (``quota.window.size.seconds``). Java's arithmetic is kept to the
letter (division by a zero limit, ``Math.round`` saturation, the ``long`` → ``int`` narrowing), so limits of 0 or
below give what a broker gives; ``tests/test_oracle_rate.py`` checks it against Kafka's classes.
"""

from __future__ import annotations

import math

from kquotactl.keys import KEYS

DEFAULT_WINDOW_NUM = 11  # quota.window.num
DEFAULT_WINDOW_SIZE_SECONDS = 1  # quota.window.size.seconds


_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def java_round(x: float) -> int:
    """``Math.round(double)``: the long nearest to ``x``, ties up (floor(x + 0.5) computed exactly, not Python's
    banker's rounding); NaN gives 0, and ±infinity or anything out of range saturates at ``Long.MIN/MAX_VALUE``."""
    if x != x:
        return 0
    if x == math.inf:
        return _LONG_MAX
    if x == -math.inf:
        return _LONG_MIN
    floor = math.floor(x)
    rounded = floor + 1 if x - floor >= 0.5 else floor  # x - floor is exact for a double
    return max(_LONG_MIN, min(_LONG_MAX, rounded))


def java_int(x: int) -> int:
    """A Java ``long`` narrowed to ``int`` (``(int) x``, Scala's ``.toInt``): the low 32 bits, signed."""
    return ((x + 2**31) % 2**32) - 2**31


def java_div(a: float, b: float) -> float:
    """IEEE 754 division as Java does it: by zero gives ±infinity, or NaN for 0/0 (Python raises instead)."""
    if b == 0:
        if a != a or a == 0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def quota_throttle_ms(value: float, bound: float, window_ms: int | float, cap_ms: int | None = None) -> int:
    """The throttle a broker returns for a measured ``value`` against a quota ``bound`` over ``window_ms``: 0 when
    ``Quota.acceptable`` (``value <= bound``), else ``Math.round((value − bound) / bound × window)``
    (``QuotaUtils.throttleTime``), bounded by ``cap_ms`` for request and connection quotas
    (``boundedThrottleTime``), narrowed to ``int`` as the quota managers do. A bound of 0 or below is not refused:
    Kafka divides by it (a limit of 0 gives ``Long.MAX_VALUE`` → ``-1`` uncapped, the cap when capped; a negative
    limit a negative throttle, i.e. none)."""
    if value <= bound:
        return 0
    ms = java_round(java_div(value - bound, bound) * window_ms)
    if cap_ms is not None:
        ms = min(ms, cap_ms)
    return java_int(ms)


def steady_window_ms(window_num: int, window_size_seconds: float, kafka_version: tuple[int, ...] | None = None) -> int:
    """The window a steady load is measured over at the start of a quota sample: ``N × S`` on Kafka 3.8+ (a ring of
    N + 1 samples), ``(N − 1) × S`` on ≤ 3.7 (a ring of N). Within each sample it grows by up to ``S``."""
    samples = window_num if kafka_version is None or kafka_version[:2] >= (3, 8) else window_num - 1
    return int(samples * window_size_seconds * 1000)


def steady_state_throttle_ms(
    key: str,
    observed: float,
    limit: float | None,
    window_num: int = DEFAULT_WINDOW_NUM,
    window_size_seconds: float = DEFAULT_WINDOW_SIZE_SECONDS,
    kafka_version: tuple[int, ...] | None = None,
    mutation_mode: str = "strict",
) -> int:
    """The throttle a client that keeps ``observed`` up gets at the start of each quota sample (0 within the limit):
    exactly what the broker returns there (see :func:`steady_window_ms`, :func:`quota_throttle_ms`).

    ``controller_mutation_rate`` is a token bucket, which has no steady state above its quota (the deficit keeps
    growing): its figure is the throttle of the request that follows N + 1 samples of requests of
    ``observed × S`` mutations at the start of each sample, the bucket full at first (see
    :func:`kquotactl.rate.mutation_window_throttle_ms`)."""
    if limit is None:
        return 0
    if key == "controller_mutation_rate":
        from kquotactl.rate import mutation_window_throttle_ms

        return mutation_window_throttle_ms(observed, limit, window_num, window_size_seconds, mutation_mode)
    window = steady_window_ms(window_num, window_size_seconds, kafka_version)
    if window == 0:
        return 0  # ≤ 3.7 with one sample: a sample's start has nothing recorded yet (rate 0 or NaN: no throttle)
    cap = java_round(window_size_seconds * 1000.0) if KEYS[key].throttle_capped else None
    return quota_throttle_ms(observed, limit, window, cap)
