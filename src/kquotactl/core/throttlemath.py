"""Java's arithmetic as Kafka's quota code uses it (``Math.round``, ``long`` -> ``int``, double division) and the
broker's throttle formula on top of it: the lowest layer of
:mod:`kquotactl.core.throttle` and :mod:`kquotactl.core.rate` (both import it; neither is imported here). Pure.
"""

from __future__ import annotations

import math

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


def java_long(x: float) -> int:
    """A Java ``double`` narrowed to ``long`` (``(long) x``, Scala's ``.toLong``): toward zero, NaN gives 0, and
    anything beyond the range saturates at ``Long.MIN/MAX_VALUE``."""
    if x != x:
        return 0
    if x >= 2.0**63:
        return _LONG_MAX
    if x <= -(2.0**63):
        return _LONG_MIN
    return int(x)


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


def json_double(x: float) -> float | str:
    """A double for JSON: a number, or Java's spelling as a string when not finite (JSON has no Infinity/NaN)."""
    if math.isfinite(x):
        return x
    return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
