"""Throttle-time math (KIP-13 / KIP-124), as Kafka's brokers compute it.

Steady state: a client sustaining rate O against quota T over a quota window W is delayed
X = (O − T) / T × W, rounded half-up to milliseconds as Java's ``Math.round``; request and connection
quotas cap the delay at one window sample (``quota.window.size.seconds``). Java's arithmetic is kept to the
letter (division by a zero limit, ``Math.round`` saturation, the ``long`` → ``int`` narrowing), so limits of 0 or
below give what a broker gives; ``tests/test_oracle_rate.py`` checks it against Kafka's classes.
"""

from __future__ import annotations

from kquotactl.core.kafkaversions import behaviour
from kquotactl.core.keys import KEYS
from kquotactl.core.throttlemath import java_round, quota_throttle_ms

DEFAULT_WINDOW_NUM = 11  # quota.window.num
DEFAULT_WINDOW_SIZE_SECONDS = 1  # quota.window.size.seconds


def steady_window_ms(window_num: int, window_size_seconds: float, kafka_version: tuple[int, ...] | None = None) -> int:
    """The window a steady load is measured over at the start of a quota sample: ``N × S`` on Kafka 3.8+ (a ring of
    N + 1 samples), ``(N − 1) × S`` on ≤ 3.7 (a ring of N). Within each sample it grows by up to ``S``."""
    samples = window_num if behaviour(kafka_version).has("sample_ring") else window_num - 1
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
    :func:`kquotactl.core.rate.mutation_window_throttle_ms`)."""
    if limit is None:
        return 0
    if KEYS[key].token_bucket:
        from kquotactl.core.rate import mutation_window_throttle_ms

        return mutation_window_throttle_ms(
            observed, limit, window_num, window_size_seconds, mutation_mode, kafka_version
        )
    window = steady_window_ms(window_num, window_size_seconds, kafka_version)
    if window == 0:
        return 0  # ≤ 3.7 with one sample: a sample's start has nothing recorded yet (rate 0 or NaN: no throttle)
    cap = java_round(window_size_seconds * 1000.0) if KEYS[key].throttle_capped else None
    return quota_throttle_ms(observed, limit, window, cap)
