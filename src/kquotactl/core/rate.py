"""An emulation of Kafka's sampled ``Rate`` (``SampledStat`` + ``WindowedSum``) and the quota check on it.

Brokers measure a client's rate over ``quota.window.num`` samples of ``quota.window.size.seconds`` each
(11 x 1 s by default) and throttle a recording that takes the rate above the quota by
``round((rate − quota) / quota × window)``, where *window* is the time the samples actually cover:

- a recording goes into the current sample; a sample older than one window size is complete and the
  next recording starts a new one (a ring of samples, recycled);
- samples with nothing recent are purged (older than ``samples × window size``);
- the window is measured from the oldest retained sample's start, and padded to at least
  ``(samples − 1)`` full windows — a fresh sensor is always measured over 10 s by default, which is what
  lets a new client burst — and at least 1 ms (Kafka 3.3+; before, a window of 0 ms with ``--window-num 1``
  divides by zero: an infinite or NaN rate, as Java has it).

Kafka 3.8 changed two details (a ring of ``samples + 1``, purging by the last event instead of the sample
start); ``legacy=True`` gives the ≤ 3.7 behaviour. :func:`sampled_stat_for` picks both flags for a version.
Java's arithmetic is kept exactly (:mod:`kquotactl.core.throttle`), so limits of 0 or below replay as on a broker;
``tests/test_oracle_rate.py`` and ``tests/test_oracle_mutation.py`` check every step against Kafka's own classes.
Both reproduce Kafka's own test case
(``ClientQuotaManagerTest.testQuotaViolation``): quota 500 B/s, 400 B at t = 0, 1000, …, 9000 ms, then
2300 B at 10500 ms is throttled 2100 ms.

Pure: time is whatever the caller says it is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kquotactl.core.kafkaversions import behaviour
from kquotactl.core.throttlemath import java_div, java_int, java_round, quota_throttle_ms

#: The clock a replay's time 0 stands for (a broker's wall clock; only the token bucket's first refill sees it).
DEFAULT_EPOCH_MS = 1_700_000_000_000


def sampled_stat_for(kafka_version: tuple[int, ...] | None) -> dict[str, bool]:
    """``SampledRate`` flags for a Kafka version (None: the latest): the ≤ 3.7 ``SampledStat`` and the 1 ms window
    floor, which shipped in 3.3.0 (KAFKA-13801's fix, cherry-picked to 3.3 before 3.4)."""
    b = behaviour(kafka_version)
    return {"legacy": not b.has("sample_ring"), "min_window_1ms": b.has("min_window_1ms")}


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
        return self._window(now)

    def _window(self, now: int) -> int:
        oldest = min([s.start_ms for s in self._ring]) if self._ring else now
        elapsed = now - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1) if self.min_window_1ms else elapsed

    def total(self, now: int) -> float:
        self._purge(now)
        total = 0.0
        for s in self._ring:  # WindowedSum.combine: plain left-to-right double sums, in ring order
            total += s.value
        return total

    def measure(self, now: int) -> float:
        """Units per second, as ``Rate.measure`` with ``TimeUnit.SECONDS`` (a 0 ms window divides by zero)."""
        return self.measure_and_window(now)[0]

    def measure_and_window(self, now: int) -> tuple[float, int]:
        """:meth:`measure` and :meth:`window_size_ms` at ``now`` with one purge (the second finds nothing to purge)."""
        self._purge(now)
        total = 0.0
        for s in self._ring:  # WindowedSum.combine: plain left-to-right double sums, in ring order
            total += s.value
        window = self._window(now)
        return java_div(total, window / 1000.0), window


@dataclass(frozen=True, slots=True)
class ReplayStep:
    time_ms: int
    value: float
    rate: float  # measured right after recording (the token bucket: tokens left)
    window_ms: int
    throttle_ms: int
    rejected: bool = False  # controller mutations, strict mode: refused, not recorded


def in_time_order(events: Iterable[tuple[int, float]]) -> Iterator[tuple[int, float]]:
    """The (time in ms, value) events as given; a ValueError at the first that goes back in time (a replay cannot
    record into the past)."""
    last: int | None = None
    for t, v in events:
        if last is not None and t < last:
            raise ValueError(f"event at {t} ms goes back in time (previous event at {last} ms)")
        last = t
        yield t, v


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
    ``unrecord_throttled`` takes a recording whose throttle is above 0 back out, as the fetch and connection paths
    do. Any limit is accepted, 0 and negative ones included (see :func:`kquotactl.core.throttlemath.quota_throttle_ms`).
    """
    rate = SampledRate(samples, window_ms, legacy=legacy, min_window_1ms=min_window_1ms)
    out = []
    for t, v in in_time_order(events):
        rate.record(v, t)
        measured, w = rate.measure_and_window(t)
        throttle = quota_throttle_ms(measured, limit, w, cap_ms)
        if unrecord_throttled and throttle > 0:
            rate.record(-v, t)
        out.append(ReplayStep(t, v, measured, w, throttle))
    return out


class TokenBucket:
    """Kafka's ``TokenBucket`` stat (KIP-599, ``controller_mutation_rate``, Kafka 2.7+): credits refill at the quota
    per second up to a burst of ``samples × window × quota``; a recording takes its value out; below zero is
    throttled. Kafka's bucket starts empty at clock 0 and is refilled on first use, so ``epoch_ms`` (the broker's
    clock at the replay's time 0) decides where it starts: full for any positive quota on a real clock."""

    def __init__(self, limit: float, samples: int = 11, window_ms: int = 1000, epoch_ms: int = DEFAULT_EPOCH_MS):
        self.limit = limit
        self.burst = samples * (window_ms / 1000.0) * limit
        self.epoch_ms = epoch_ms
        self.tokens = 0.0
        self.last_ms = 0

    def _refill(self, now: int) -> None:
        now += self.epoch_ms
        self.tokens = _java_min(self.burst, self.tokens + self.limit * ((now - self.last_ms) / 1000.0))
        self.last_ms = now

    def record(self, value: float, now: int) -> None:
        self._refill(now)
        self.tokens = _java_min(self.burst, self.tokens - value)

    def measure(self, now: int) -> float:
        self._refill(now)
        return self.tokens


def _java_min(a: float, b: float) -> float:
    """``Math.min(double, double)``: NaN if either is."""
    if a != a or b != b:
        return math.nan
    return min(a, b)


MUTATION_MODES = ("strict", "permissive")


def replay_token_bucket(
    events: Iterable[tuple[int, float]],
    limit: float,
    *,
    samples: int = 11,
    window_ms: int = 1000,
    mode: str = "strict",
    epoch_ms: int = DEFAULT_EPOCH_MS,
    kafka_version: tuple[int, ...] | None = None,
) -> list[ReplayStep]:
    """Like :func:`replay`, for ``controller_mutation_rate``, one request's mutations per recording.

    ``strict`` (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): the bucket is checked *before*
    recording; a request arriving with the bucket below zero is rejected (THROTTLING_QUOTA_EXCEEDED) and not
    recorded. ``permissive`` (older request versions): recorded, then checked. Either way the throttle is
    ``max(0, Math.round(−tokens / quota × 1000))`` narrowed to int (``ControllerMutationQuotaManager.throttleTimeMs``,
    ``AbstractControllerMutationQuota.throttleTime``; from 4.2 narrowed first, then ``max(0, ...)``, so a throttle
    beyond 2^31 ms wraps). ``rate`` holds the tokens left."""
    narrow_first = behaviour(kafka_version).has("mutation_throttle_narrowed_first")
    if mode not in MUTATION_MODES:
        raise ValueError(f"mutation mode {mode!r}: expected strict or permissive")
    bucket = TokenBucket(limit, samples, window_ms, epoch_ms)
    out = []
    for t, v in in_time_order(events):
        rejected = False
        throttle_long = 0
        if mode == "strict":
            tokens = bucket.measure(t)
            if tokens < 0:
                rejected = True
                throttle_long = java_round(java_div(-tokens, limit) * 1000)
            else:
                bucket.record(v, t)
        else:
            bucket.record(v, t)
            tokens = bucket.measure(t)
            if tokens < 0:
                throttle_long = java_round(java_div(-tokens, limit) * 1000)
        throttle = max(0, java_int(throttle_long)) if narrow_first else java_int(max(0, throttle_long))
        out.append(ReplayStep(t, v, bucket.measure(t), samples * window_ms, throttle, rejected))
    return out


def mutation_window_load(observed: float, window_num: int, window_size_seconds: float) -> list[tuple[int, float]]:
    """``observed`` mutations/s kept up for N + 1 samples (one quota window and one more): ``observed × S`` at the
    start of each, then the same request once more (the one whose throttle ``--observed`` shows). From a full bucket
    of ``N × S × quota``, a client at twice its quota is refused (strict) or throttled (permissive) there first."""
    w = int(window_size_seconds * 1000)
    return [(k * w, observed * window_size_seconds) for k in range(window_num + 2)]


def mutation_window_throttle_ms(
    observed: float,
    limit: float,
    window_num: int,
    window_size_seconds: float,
    mode: str = "strict",
    kafka_version: tuple[int, ...] | None = None,
) -> int:
    """The throttle of the last request of :func:`mutation_window_load` through the token bucket."""
    events = mutation_window_load(observed, window_num, window_size_seconds)
    w = int(window_size_seconds * 1000)
    steps = replay_token_bucket(events, limit, samples=window_num, window_ms=w, mode=mode, kafka_version=kafka_version)
    return steps[-1].throttle_ms
