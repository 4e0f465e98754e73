"""Every test that starts a server carries its marker, so ``-m "not server"`` (``make test-fast``) starts none.

The harness's start points are wrapped for the test session: starting a ZooKeeper, a Kafka broker, a Spark
session, a Prometheus or a JVM oracle from a test (or from a fixture it uses) without the matching marker fails
that test before anything is started. Each of these markers also adds the umbrella marker ``server``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

#: marker -> what it stands for; ``server`` is added to every test carrying one of them
SERVER_MARKERS = {
    "zookeeper": "a ZooKeeper server",
    "kafka": "a Kafka broker",
    "spark": "a Spark session",
    "prometheus": "a Prometheus server",
    "jvm": "a JVM oracle (Kafka's own classes)",
}

#: fixture -> the marker a test using it (directly or through another fixture) must carry: these start a server
#: once per session, so only the first test to use one would reach a start point
SERVER_FIXTURES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(["zk_server", "own_zk"], ("zookeeper",)),
    **dict.fromkeys(
        ["kraft_server", "zk_kafka", "old_kafka", "early_kafka", "pinned_kafka", "observed_zk_kafka", "kraft3_cluster"],
        ("kafka",),
    ),
    "zk_migration": ("zookeeper", "kafka"),
    **dict.fromkeys(["observed_kraft", "observed_request_log"], ("kafka", "prometheus")),
    "rules_prometheus": ("prometheus",),
    **dict.fromkeys(["spark", "standalone_cluster"], ("spark",)),
    **dict.fromkeys(["kafka_oracle", "exporter_oracle"], ("jvm",)),
}

_running: list[pytest.Item] = []  # the test being set up, run or torn down


def _start_points() -> list[tuple[Any, str, str]]:
    """(owner, attribute, marker) of every way the harness starts a server."""
    from kquotactl.impact import spark
    from kquotactl.testing import kafka, observe, oracle, servers

    return [
        (servers.ZooKeeperServer, "start", "zookeeper"),
        (kafka._KafkaBase, "start", "kafka"),
        (kafka.KRaftCluster, "start", "kafka"),
        (observe.PrometheusServer, "start", "prometheus"),
        (oracle.JavaOracle, "__init__", "jvm"),
        (observe.ExporterOracle, "__init__", "jvm"),
        (spark, "session", "spark"),
    ]


def _guarded(original: Callable[..., Any], marker: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def start(*args: Any, **kwargs: Any) -> Any:
        if _running and _running[-1].get_closest_marker(marker) is None:
            pytest.fail(
                f"{_running[-1].nodeid} starts {SERVER_MARKERS[marker]} without @pytest.mark.{marker}: mark it, "
                f'so that -m "not {marker}" (and make test-fast) leaves it out',
                pytrace=False,
            )
        return original(*args, **kwargs)

    return start


def pytest_configure(config: pytest.Config) -> None:
    for owner, name, marker in _start_points():
        setattr(owner, name, _guarded(owner.__dict__[name], marker))


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(m) for m in SERVER_MARKERS):
            item.add_marker(pytest.mark.server)


def unmarked(item: pytest.Item, names: Iterable[str] | None = None) -> list[str]:
    """The markers ``item`` lacks for the server fixtures it uses (``names``: default, those it declares)."""
    names = set(getattr(item, "fixturenames", ()) if names is None else names)
    needed = {m for f, markers in SERVER_FIXTURES.items() if f in names for m in markers}
    return sorted(m for m in needed if item.get_closest_marker(m) is None)


@pytest.hookimpl(tryfirst=True)  # before the fixtures are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    if missing := unmarked(item):
        pytest.fail(
            f"{item.nodeid} uses a server fixture without @pytest.mark.{', '.join(missing)}: mark it, so that "
            f'-m "not {missing[0]}" (and make test-fast) leaves it out',
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A server fixture taken with ``request.getfixturevalue`` is known only once the test has run."""
    result = yield
    used = getattr(getattr(item, "_request", None), "_fixture_defs", {})  # every fixture set up, dynamic ones too
    if missing := unmarked(item, used):
        pytest.fail(f"{item.nodeid} took a server fixture without @pytest.mark.{', '.join(missing)}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()
