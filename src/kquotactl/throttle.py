"""Throttle-time math (KIP-13 / KIP-124), as Kafka's brokers compute it.

Steady state: a client sustaining rate O against quota T over the full quota window W is delayed
X = (O − T) / T × W, rounded half-up to milliseconds as Java's ``Math.round``; request and connection
quotas cap the delay at one window sample (``quota.window.size.seconds``).
"""

from __future__ import annotations

import math

from kquotactl.keys import KEYS

DEFAULT_WINDOW_NUM = 11  # quota.window.num
DEFAULT_WINDOW_SIZE_SECONDS = 1  # quota.window.size.seconds


def java_round(x: float) -> int:
    """``Math.round``: floor(x + 0.5) (not Python's banker's rounding)."""
    return math.floor(x + 0.5)


def steady_state_throttle_ms(
    key: str,
    observed: float,
    limit: float | None,
    window_num: int = DEFAULT_WINDOW_NUM,
    window_size_seconds: float = DEFAULT_WINDOW_SIZE_SECONDS,
) -> int:
    """Delay for a client that keeps ``observed`` up for the whole window; 0 when within the limit."""
    if limit is None or observed <= limit:
        return 0
    window_ms = window_num * window_size_seconds * 1000.0
    ms = java_round((observed - limit) / limit * window_ms)
    if KEYS[key].throttle_capped:
        ms = min(ms, java_round(window_size_seconds * 1000.0))
    return ms
