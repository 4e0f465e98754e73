"""An emulation of Kafka's sampled ``Rate`` (``SampledStat`` + ``WindowedSum``) and the quota check on it.

Brokers measure a client's rate over ``quota.window.num`` samples of ``quota.window.size.seconds`` each
(11 x 1 s by default) and throttle a recording that takes the rate above the quota by
``round((rate − quota) / quota × window)``, where *window* is the time the samples actually cover:

- a recording goes into the current sample; a sample older than one window size is complete and the
  next recording starts a new one (a ring of samples, recycled);
- samples with nothing recent are purged (older than ``samples × window size``);
- the window is measured from the oldest retained sample's start, and padded to at least
  ``(samples − 1)`` full windows — a fresh sensor is always measured over 10 s by default, which is what
  lets a new client burst — and at least 1 ms (Kafka 3.4+).

Kafka 3.8 changed two details (a ring of ``samples + 1``, purging by the last event instead of the sample
start); ``legacy=True`` gives the ≤ 3.7 behaviour. Both reproduce Kafka's own test case
(``ClientQuotaManagerTest.testQuotaViolation``): quota 500 B/s, 400 B at t = 0, 1000, …, 9000 ms, then
2300 B at 10500 ms is throttled 2100 ms.

Pure: time is whatever the caller says it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kquotactl.throttle import java_round


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0
    events: int = 0

    def reset(self, now: int) -> None:
        self.start_ms = now
        self.last_event_ms = now
        self.value = 0.0
        self.events = 0


class SampledRate:
    """``Rate`` over a ``WindowedSum`` with a quota window of ``samples`` x ``window_ms``."""

    def __init__(self, samples: int = 11, window_ms: int = 1000, *, legacy: bool = False, min_window_1ms: bool = True):
        if samples < 1 or window_ms < 1:
            raise ValueError("samples and window_ms must be at least 1")
        self.samples = samples
        self.window_ms = window_ms
        self.legacy = legacy  # Kafka <= 3.7 SampledStat
        self.min_window_1ms = min_window_1ms  # Kafka 3.4+
        self._ring: list[_Sample] = []
        self._current = 0

    def _current_sample(self, now: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now, now))
        return self._ring[self._current]

    def record(self, value: float, now: int) -> None:
        sample = self._current_sample(now)
        if now - sample.start_ms >= self.window_ms:
            sample = self._advance(now)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now

    def _advance(self, now: int) -> _Sample:
        size = self.samples if self.legacy else self.samples + 1
        self._current = (self._current + 1) % size
        if self._current >= len(self._ring):
            sample = _Sample(now, now)
            self._ring.append(sample)
            return sample
        sample = self._ring[self._current]
        sample.reset(now)
        return sample

    def _purge(self, now: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._ring:
            age = now - (s.start_ms if self.legacy else s.last_event_ms)
            if age >= expire:
                s.reset(now)

    def window_size_ms(self, now: int) -> int:
        """The time the retained samples cover, padded to ``samples − 1`` windows (``Rate.windowSize``)."""
        self._purge(now)
        oldest = min(s.start_ms for s in self._ring) if self._ring else now
        elapsed = now - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1) if self.min_window_1ms else elapsed

    def total(self, now: int) -> float:
        self._purge(now)
        return sum(s.value for s in self._ring)

    def measure(self, now: int) -> float:
        """Units per second, as ``Rate.measure`` with ``TimeUnit.SECONDS``."""
        total = self.total(now)
        return total / (self.window_size_ms(now) / 1000.0)


@dataclass(frozen=True, slots=True)
class ReplayStep:
    time_ms: int
    value: float
    rate: float  # measured right after recording
    window_ms: int
    throttle_ms: int


def replay(
    events: Iterable[tuple[int, float]],
    limit: float,
    *,
    samples: int = 11,
    window_ms: int = 1000,
    cap_ms: int | None = None,
    unrecord_throttled: bool = False,
    legacy: bool = False,
    min_window_1ms: bool = True,
) -> list[ReplayStep]:
    """Record each ``(time_ms, value)`` and say what throttle the broker gives it.

    ``cap_ms`` bounds the throttle (request and connection quotas: one window sample);
    ``unrecord_throttled`` takes a throttled recording back out, as the fetch and connection paths do.
    """
    if limit <= 0:
        raise ValueError("the quota must be greater than 0")
    rate = SampledRate(samples, window_ms, legacy=legacy, min_window_1ms=min_window_1ms)
    out = []
    last = None
    for t, v in events:
        if last is not None and t < last:
            raise ValueError(f"event at {t} ms goes back in time (previous event at {last} ms)")
        last = t
        rate.record(v, t)
        measured = rate.measure(t)
        w = rate.window_size_ms(t)
        throttle = 0
        if measured > limit:
            throttle = java_round((measured - limit) / limit * w)
            if cap_ms is not None:
                throttle = min(throttle, cap_ms)
            if unrecord_throttled:
                rate.record(-v, t)
        out.append(ReplayStep(t, v, measured, w, throttle))
    return out


class TokenBucket:
    """Kafka's ``TokenBucket`` stat (KIP-599, ``controller_mutation_rate``): credits refill at the quota per second
    up to a burst of ``samples × window × quota``; a recording takes its value out; below zero is throttled.

    A broker's bucket starts full (its clock starts long before the first recording).
    """

    def __init__(self, limit: float, samples: int = 11, window_ms: int = 1000) -> None:
        self.limit = limit
        self.burst = samples * (window_ms / 1000.0) * limit
        self.tokens = self.burst
        self.last_ms: int | None = None

    def _refill(self, now: int) -> None:
        if self.last_ms is not None:
            self.tokens = min(self.burst, self.tokens + self.limit * (now - self.last_ms) / 1000.0)
        self.last_ms = now

    def record(self, value: float, now: int) -> None:
        self._refill(now)
        self.tokens = min(self.burst, self.tokens - value)

    def measure(self, now: int) -> float:
        self._refill(now)
        return self.tokens


def replay_token_bucket(
    events: Iterable[tuple[int, float]], limit: float, *, samples: int = 11, window_ms: int = 1000
) -> list[ReplayStep]:
    """Like :func:`replay`, for ``controller_mutation_rate``: throttle ``round(−tokens / quota × 1000)`` once the
    bucket is below zero (``ControllerMutationQuotaManager.throttleTimeMs``). ``rate`` holds the tokens left."""
    if limit <= 0:
        raise ValueError("the quota must be greater than 0")
    bucket = TokenBucket(limit, samples, window_ms)
    out = []
    last = None
    for t, v in events:
        if last is not None and t < last:
            raise ValueError(f"event at {t} ms goes back in time (previous event at {last} ms)")
        last = t
        bucket.record(v, t)
        tokens = bucket.measure(t)
        throttle = java_round(-tokens / limit * 1000) if tokens < 0 else 0
        out.append(ReplayStep(t, v, tokens, samples * window_ms, throttle))
    return out
