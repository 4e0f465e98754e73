"""Retry and polling as one policy object, as kazoo's ``KazooRetry``: how many tries, how long between them, for
how long in all. The compare-and-set loop, the outage counter, the read-back settle and every wait for brokers or
Prometheus share it, so "try again" means one thing and is tested once.

Pure: the schedule is arithmetic, and :meth:`RetryPolicy.tries` runs on the clock and sleep its caller passes.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field, replace


def _no_spread() -> float:
    return 0.0


@dataclass(frozen=True)
class RetryPolicy:
    """Tries with a wait between them: ``delay`` before the second, each next wait ``backoff`` times the one
    before (1: a steady poll) up to ``max_delay``, plus up to ``jitter`` of it at random (spreads contending
    writers); at most ``max_tries`` tries (None: no count) and no new try once ``deadline`` seconds have passed
    since the first (None: no deadline). Both None: until the caller stops."""

    delay: float
    backoff: float = 1.0
    max_delay: float = math.inf
    jitter: float = 0.0
    max_tries: int | None = None
    deadline: float | None = None

    def wait_after(self, attempt: int, spread: float = 0.0) -> float:
        """Seconds to wait after try number ``attempt`` (from 1); ``spread`` in [0, 1) picks the jitter."""
        return min(self.delay * self.backoff ** (attempt - 1), self.max_delay) * (1 + self.jitter * spread)

    def schedule(self, attempts: int, spread: Callable[[], float] = _no_spread) -> list[float]:
        """The waits after the first ``attempts`` tries (fewer when ``max_tries`` says so)."""
        count = attempts if self.max_tries is None else min(attempts, self.max_tries - 1)
        return [self.wait_after(n, spread()) for n in range(1, count + 1)]

    def allows(self, attempt: int) -> bool:
        """Whether try number ``attempt`` may run, by count (for a counter kept across calls)."""
        return self.max_tries is None or attempt <= self.max_tries

    def within(self, seconds: float) -> RetryPolicy:
        """The same policy with a deadline of ``seconds`` (a caller's timeout)."""
        return replace(self, deadline=seconds)

    def tries(
        self, clock: Callable[[], float], sleep: Callable[[float], object], spread: Callable[[], float] = _no_spread
    ) -> Iterator[Try]:
        """Each try in turn, waiting in between: the caller does its work, stops on success, and reads
        :attr:`Try.last` after the work to stop when no try follows. The iteration ends (``for ... else``) when the
        tries are used up or the deadline has passed."""
        started = clock()
        attempt = 1
        while True:
            current = Try(attempt, started, clock, self)
            yield current
            if current.last:
                return
            sleep(self.wait_after(attempt, spread()))
            attempt += 1

    async def atries(
        self,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]],
        spread: Callable[[], float] = _no_spread,
    ) -> AsyncIterator[Try]:
        """:meth:`tries` for a coroutine (``async for``): ``sleep`` is awaited, so the event loop that runs the
        caller (the admin client's I/O thread) goes on meanwhile."""
        started = clock()
        attempt = 1
        while True:
            current = Try(attempt, started, clock, self)
            yield current
            if current.last:
                return
            await sleep(self.wait_after(attempt, spread()))
            attempt += 1


@dataclass
class Try:
    """One try of a :class:`RetryPolicy`: its number (from 1) and the clock since the first."""

    number: int
    started: float
    clock: Callable[[], float]
    policy: RetryPolicy
    _last: bool | None = field(default=None, repr=False)

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def last(self) -> bool:
        """No try follows this one: the count is used up or the deadline has passed (read after the work). Decided
        once: the runner honours what the caller saw, so a caller that read ``last`` as False gets another try."""
        if self._last is None:
            p = self.policy
            used_up = p.max_tries is not None and self.number >= p.max_tries
            self._last = used_up or (p.deadline is not None and self.elapsed >= p.deadline)
        return self._last
