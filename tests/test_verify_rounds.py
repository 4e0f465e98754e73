"""``apply --verify`` and the staged apply's check ask each broker once a round, whatever the number of entities,
on a real 3-broker KRaft cluster (the ``kraft3`` fixture: the newest release the harness runs).

The describes are counted on a real :class:`AdminBackend` (a subclass counting the DescribeClientQuotas it sends
per broker, sending each as usual); ``bench/staged_scale.py`` counts them on the brokers themselves.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from kquotactl.backends.kafka.quotas import AdminBackend
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import Entity
from kquotactl.core.keys import BYTE_RATE_KEYS
from kquotactl.services.verify import verify_applied

pytestmark = pytest.mark.kafka

N = 300


class CountingBackend(AdminBackend):
    """The admin backend, counting the describes it sends to each broker (None: the bootstrap broker)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.asked: Counter[int | None] = Counter()

    def describe(self, flt: Any = None, *, broker: int | None = None) -> Any:
        self.asked[broker] += 1
        return super().describe(flt, broker=broker)


def counting(bootstrap: str) -> CountingBackend:
    b = CountingBackend.connect(bootstrap, timeout=30)
    assert isinstance(b, CountingBackend)
    return b


def wanted(value: int) -> list[tuple[Entity, dict[str, int]]]:
    return [(Entity(user=f"rounds-{i:04d}"), {k: value + i for k in BYTE_RATE_KEYS}) for i in range(N)]


def settle(b: AdminBackend, want: list[tuple[Entity, dict[str, int]]], timeout: float = 20) -> None:
    """Until every broker describes every entity as wanted (a KRaft broker applies records asynchronously)."""
    deadline = time.monotonic() + timeout
    for broker in b.broker_ids():
        while {r.entity: dict(r.config) for r in b.describe(broker=broker)} != dict(want):
            assert time.monotonic() < deadline, f"broker {broker} did not show the {N} entities"
            time.sleep(0.1)


def test_300_entities_on_3_brokers_cost_one_describe_per_broker(kraft3) -> None:
    want = wanted(1000)
    with counting(kraft3.bootstrap) as b:
        b.alter([EntityChange(e, c) for e, c in want])
        settle(b, want)
        b.asked.clear()
        checked = verify_applied(b, want, timeout=10)
        assert all(c.converged for c in checked) and len(checked) == N
        assert [v.broker for v in checked[0].views] == ["broker 1", "broker 2", "broker 3"]
        assert b.asked == Counter({1: 1, 2: 1, 3: 1}), b.asked  # one round: each broker once (it was 900 describes)


def test_a_lagging_entity_costs_one_describe_per_broker_per_round_and_is_named(kraft3) -> None:
    want = wanted(2000)
    with counting(kraft3.bootstrap) as b:
        b.alter([EntityChange(e, c) for e, c in want])
        settle(b, want)
        b.asked.clear()
        never = (want[7][0], {k: 1 for k in BYTE_RATE_KEYS})  # a value no broker has: every round lags on it
        checked = verify_applied(b, [*want[:7], never, *want[8:]], timeout=1.0, poll=0.1)
        late = [c for c in checked if not c.converged]
        assert [c.entity for c in late] == [want[7][0]] and len(late[0].lagging) == 3
        assert all(dict(v.config) == want[7][1] for v in late[0].lagging)  # each broker's own report
        rounds = b.asked[1]
        assert b.asked == Counter({1: rounds, 2: rounds, 3: rounds}) and 2 <= rounds <= 11, b.asked
