"""A session-scoped local SparkSession for the impact tests (UI off, few shuffle partitions, quick-start JVM).

Tests that use it are marked ``spark``; it is started once per test session and stopped at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
    "spark.sql.adaptive.enabled": "true",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kquotactl.impact.spark import session

    s = session("local[2]", TEST_CONF)
    yield s
    s.stop()
