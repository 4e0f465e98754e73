"""Kafka's own classes as a test oracle: one JVM per (Kafka version, driver) for the whole session.

Differential tests draw a fresh seed each run (printed in every failure; ``KQUOTACTL_ORACLE_SEED`` replays it) and
``KQUOTACTL_ORACLE_CASES`` random cases (default 2,000), ask kquotactl and Kafka, and compare case by case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kquotactl.testing.oracle import VERSIONS, JavaOracle, fresh_seed

ORACLE_VERSIONS = sorted(VERSIONS)


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
    for oracle in started.values():
        oracle.close()


@pytest.fixture
def oracle_seed() -> int:
    return fresh_seed()
