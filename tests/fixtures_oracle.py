"""Kafka's own classes as a test oracle: one JVM per (Kafka version, driver) for the whole session.

Differential tests draw a fresh seed each run (printed in every failure; ``KQUOTACTL_ORACLE_SEED`` replays it) and
``KQUOTACTL_ORACLE_CASES`` random cases (default 2,000), ask kquotactl and Kafka, and compare case by case.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import pytest

from kquotactl.testing import oracle
from kquotactl.testing.oracle import JavaOracle, cases_per_run, fresh_seed, mismatches
from kquotactl.testing.versions import NEWEST, ORACLE_LINES, SUITES, sampled

#: Every differential suite parametrized by version runs on these: full on 2.8, 3.9 and the newest, a sample on
#: the 4.x lines between (kquotactl.testing.versions.SUITES).
ORACLE_VERSIONS = list(ORACLE_LINES)
#: The newest release, for tests that run on one version only.
NEWEST_VERSION = NEWEST
#: The ConfigCommand differentials: --zookeeper on 2.8, --bootstrap-server on the newest.
CONFIG_COMMAND_VERSIONS = list(SUITES["config-command"])


@pytest.fixture(autouse=True)
def _sampled_oracle_line(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test parametrized with a Kafka line (its ``version``, or a version-parametrized fixture's) that is a sampled
    one draws a tenth of the cases (cases_per_run)."""
    callspec = getattr(request.node, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    lines = [p for p in params if isinstance(p, str) and p in ORACLE_LINES]  # a `version` or a fixture's param
    oracle.set_sampled_line(lines[0] if lines and sampled(lines[0]) else None)
    yield
    oracle.set_sampled_line(None)


T = TypeVar("T")


@pytest.fixture(scope="session")
def kafka_oracle() -> Iterator[Callable[[str, str], JavaOracle]]:
    """``kafka_oracle(version, driver)``: the session's JVM for that driver on that Kafka version."""
    started: dict[tuple[str, str], JavaOracle] = {}

    def get(version: str, driver: str) -> JavaOracle:
        key = (version, driver)
        if key not in started:
            started[key] = JavaOracle(version, driver)
        return started[key]

    yield get
    for running in started.values():
        running.close()


@pytest.fixture
def oracle_seed() -> int:
    return fresh_seed()


def replay_hint(seed: int, version: str | None = None) -> str:
    """How every differential failure message starts: the seed, how to replay it, and the Kafka version if any."""
    where = f", Kafka {version}" if version else ""
    return f"seed {seed} (KQUOTACTL_ORACLE_SEED={seed}){where}"


def assert_no_mismatches(
    cases: Iterable[Any],
    ours: Iterable[Any],
    kafka: Iterable[Any],
    seed: int,
    version: str | None = None,
    *,
    limit: int = 5,
    show: Callable[[Any, Any, Any], Any] | None = None,
) -> None:
    """kquotactl's answers equal Kafka's case by case; else fail with :func:`replay_hint` and the first ``limit``
    disagreements as ``(case, ours, kafka)`` (or ``show(case, ours, kafka)``)."""
    bad = [show(*m) if show else m for m in mismatches(cases, ours, kafka, limit=limit)]
    assert not bad, f"{replay_hint(seed, version)}: {bad}"


def random_cases(seed: int, make: Callable[[random.Random], T], n: int | None = None) -> list[T]:
    """``n`` (default :func:`cases_per_run`) cases drawn by ``make`` from one generator seeded with ``seed``."""
    rng = random.Random(seed)
    return [make(rng) for _ in range(cases_per_run() if n is None else n)]
