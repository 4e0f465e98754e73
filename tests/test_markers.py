"""The marker guard (tests/fixtures_markers.py) itself: a server started or a server fixture used without its
marker fails the test, so ``make test-fast`` (``-m "not server and not slow"``) can start none."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import fixtures_markers


@dataclass
class FakeItem:
    nodeid: str
    fixturenames: list[str]
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


def test_a_server_fixture_used_through_another_needs_its_marker() -> None:
    item = FakeItem("t::zk", ["chroot", "zk_server", "zk_admin", "tmp_path"])
    assert fixtures_markers.unmarked(item) == ["zookeeper"]
    item.markers = {"zookeeper"}
    assert fixtures_markers.unmarked(item) == []
    observed = FakeItem("t::top", ["observed_kraft"], {"kafka"})
    assert fixtures_markers.unmarked(observed) == ["prometheus"]


def test_starting_a_server_without_its_marker_fails_before_it_starts() -> None:
    started = []
    start = fixtures_markers._guarded(lambda: started.append(1), "zookeeper")
    fixtures_markers._running.append(FakeItem("t::unmarked", []))
    try:
        with pytest.raises(pytest.fail.Exception, match=r"starts a ZooKeeper server without @pytest.mark.zookeeper"):
            start()
        assert started == []
        fixtures_markers._running[-1] = FakeItem("t::marked", [], {"zookeeper"})
        start()
        assert started == [1]
    finally:
        fixtures_markers._running.pop()


def test_every_start_point_is_guarded() -> None:
    """The session's start points are the wrapped ones (a new way to start a server goes in _start_points)."""
    for owner, name, marker in fixtures_markers._start_points():
        assert getattr(owner, name).__wrapped__, (owner, name, marker)
        assert marker in fixtures_markers.SERVER_MARKERS


@pytest.mark.parametrize("marker", sorted(fixtures_markers.SERVER_MARKERS))
def test_each_server_marker_is_registered(marker: str, request: pytest.FixtureRequest) -> None:
    registered = [line.split(":")[0] for line in request.config.getini("markers")]
    assert marker in registered and "server" in registered
