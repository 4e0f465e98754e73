"""The one retry/polling policy (core/retry.py): its schedule is arithmetic, and its runner stops exactly when the
tries are used up or the deadline has passed, on whatever clock it is given."""

from __future__ import annotations

import pytest

from kquotactl.core.retry import RetryPolicy


class FakeTime:
    """A clock that moves only when slept on (and ``tick`` per reading, for work that takes time)."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now = 0.0
        self.tick = tick
        self.slept: list[float] = []

    def clock(self) -> float:
        self.now += self.tick
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_schedule_backs_off_to_the_cap_and_counts_tries() -> None:
    cas = RetryPolicy(delay=0.01, backoff=2.0, max_delay=0.2, max_tries=25)
    waits = cas.schedule(100)
    assert len(waits) == 24  # a wait between each two of 25 tries
    assert waits[:6] == pytest.approx([0.01, 0.02, 0.04, 0.08, 0.16, 0.2])
    assert set(waits[5:]) == {0.2}
    assert RetryPolicy(delay=0.1).schedule(3) == [0.1, 0.1, 0.1]  # a steady poll


def test_jitter_adds_up_to_its_fraction() -> None:
    p = RetryPolicy(delay=1.0, jitter=0.5)
    assert p.wait_after(1, 0.0) == 1.0
    assert p.wait_after(1, 0.999) == pytest.approx(1.4995)
    assert p.schedule(2, spread=lambda: 0.5) == [1.25, 1.25]


def test_allows_counts_for_a_counter_kept_elsewhere() -> None:
    outages = RetryPolicy(delay=0.0, max_tries=10)
    assert outages.allows(10) and not outages.allows(11)
    assert RetryPolicy(delay=0.0).allows(10**9)


def test_runner_stops_after_max_tries_and_the_for_else_says_so() -> None:
    t = FakeTime()
    numbers = []
    for attempt in RetryPolicy(delay=0.01, backoff=2.0, max_tries=4).tries(t.clock, t.sleep):
        numbers.append(attempt.number)
    else:
        gave_up = True
    assert numbers == [1, 2, 3, 4] and gave_up
    assert t.slept == pytest.approx([0.01, 0.02, 0.04])  # no wait after the last try


def test_runner_polls_until_the_deadline_and_the_last_try_is_read_after_the_work() -> None:
    t = FakeTime()
    seen = []
    for attempt in RetryPolicy(delay=1.0).within(3.5).tries(t.clock, t.sleep):
        seen.append((attempt.number, attempt.last))
        if attempt.last:
            break
    assert seen == [(1, False), (2, False), (3, False), (4, False), (5, True)]  # at 3 s: not yet; at 4 s: past
    assert t.slept == [1.0, 1.0, 1.0, 1.0]


def test_a_try_whose_caller_saw_last_false_is_followed_by_another() -> None:
    """``last`` is decided once: a clock that moved on between the caller's reading and the runner's never ends
    the iteration behind the caller's back (the callers return from inside the loop)."""
    t = FakeTime(tick=0.6)
    tries = 0
    for attempt in RetryPolicy(delay=0.0, deadline=1.0).tries(t.clock, t.sleep):
        tries += 1
        if attempt.last:
            break
        assert not attempt.last  # the same answer again, though the clock moved past the deadline
    assert tries == 2


def test_success_stops_without_waiting() -> None:
    t = FakeTime()
    for attempt in RetryPolicy(delay=5.0, deadline=60).tries(t.clock, t.sleep):
        if attempt.number == 2:
            break
    assert t.slept == [5.0]


def test_the_async_runner_has_the_same_schedule_and_awaits_its_sleep() -> None:
    """``atries`` (the admin client's throttle wait, on kafka-python's I/O thread): the tries of ``tries``."""
    import asyncio

    t = FakeTime()

    async def sleep(seconds: float) -> None:
        t.sleep(seconds)
        await asyncio.sleep(0)

    async def run() -> list[tuple[int, bool]]:
        seen = []
        async for attempt in RetryPolicy(delay=1.0).within(3.5).atries(t.clock, sleep):
            seen.append((attempt.number, attempt.last))
            if attempt.last:
                break
        return seen

    assert asyncio.run(run()) == [(1, False), (2, False), (3, False), (4, False), (5, True)]
    assert t.slept == [1.0, 1.0, 1.0, 1.0]


def test_no_polling_loop_in_the_backends_outside_the_policy() -> None:
    """A ``while`` loop that sleeps (or polls a client) in backends/ is a retry the policy should run."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "src" / "kquotactl" / "backends"
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.While):
                continue
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute | ast.Name):
                    name = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
                    if name == "sleep":
                        found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, f"sleeping while loops (use kquotactl.core.retry.RetryPolicy): {found}"
