"""Fixtures for the reliability suite: private ZooKeeper servers to kill, and invariant checks.

Fault tests never touch the shared session server: each gets its own :class:`ZooKeeperServer`, which
it may SIGKILL, SIGSTOP or restart on the same port and data directory. The helpers read a whole
chroot back and check the invariants every test relies on (what lives where, notifications per
entity), with pipelined reads so 10,000-entity trees stay quick.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kquotactl.testing.servers import ZooKeeperServer

ALLOWED_UNDER_CONFIG = ("/config/users", "/config/clients", "/config/ips", "/config/changes")


def fuzz_examples(ci_default: int) -> int:
    """How many hypothesis examples a fuzz test runs: ``KQUOTACTL_FUZZ_EXAMPLES`` (long mode) or the CI default."""
    raw = os.environ.get("KQUOTACTL_FUZZ_EXAMPLES")
    return int(raw) if raw else ci_default


def fault_rounds(ci_default: int) -> int:
    """How many kill/restart rounds a fault test runs: ``KQUOTACTL_FAULT_ROUNDS`` or the CI default."""
    raw = os.environ.get("KQUOTACTL_FAULT_ROUNDS")
    return int(raw) if raw else ci_default


@dataclass
class FaultCounter:
    """Counts what the suite injected and checked, printed at the end of the session (for the report)."""

    faults: int = 0
    fuzzed: int = 0
    lost_updates: int = 0
    checked_updates: int = 0


COUNTS = FaultCounter()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # pragma: no cover - reporting
    if COUNTS.faults or COUNTS.fuzzed or COUNTS.checked_updates:
        terminalreporter.write_line(
            f"reliability: faults injected {COUNTS.faults}, cases fuzzed {COUNTS.fuzzed}, "
            f"updates checked {COUNTS.checked_updates}, updates lost {COUNTS.lost_updates}"
        )


@pytest.fixture
def counts() -> FaultCounter:
    return COUNTS


@pytest.fixture
def own_zk() -> Iterator[ZooKeeperServer]:
    """A private ZooKeeper this test may kill, hang and restart (same port, same data)."""
    server = ZooKeeperServer(heap="256m")
    server.start()
    try:
        yield server
    finally:
        server.close()


def admin_client(connect: str):
    from kazoo.client import KazooClient

    client = KazooClient(connect, timeout=10)
    client.start(timeout=30)
    return client


def walk(zk, root: str = "") -> dict[str, bytes]:
    """Every znode under ``root`` (paths relative to it) with its data: pipelined reads, one level at a time,
    listing children only of nodes that have some."""
    out: dict[str, bytes] = {}
    level = [""]
    while level:
        gets = [(p, zk.get_async(root + p or "/")) for p in level]
        parents = []
        for p, ar in gets:
            data, stat = ar.get(timeout=120)
            out[p or "/"] = data
            if stat.numChildren:
                parents.append(p)
        kids = [(p, zk.get_children_async(root + p or "/")) for p in parents]
        level = [f"{p}/{c}" for p, ar in kids for c in ar.get(timeout=120)]
    return out


def check_layout(tree: dict[str, bytes]) -> list[str]:
    """Paths written outside ``/config/users|clients|ips`` and ``/config/changes`` (should be none)."""
    bad = []
    for p in tree:
        if p in ("/", "/config", "/brokers", "/brokers/ids"):  # /brokers: the test's stand-in for a registered broker
            continue
        if not any(p == a or p.startswith(a + "/") for a in ALLOWED_UNDER_CONFIG):
            bad.append(p)
    return bad


def notification_counts(tree: dict[str, bytes]) -> Counter[str]:
    """entity_path -> how many v2 notifications name it."""
    out: Counter[str] = Counter()
    for p, data in tree.items():
        if p.startswith("/config/changes/config_change_"):
            doc = json.loads(data)
            assert doc["version"] == 2, doc
            out[doc["entity_path"]] += 1
    return out


def entity_configs(tree: dict[str, bytes]) -> dict[str, dict[str, str]]:
    """entity_path -> stored config, for every entity znode that holds data."""
    out: dict[str, dict[str, str]] = {}
    for p, data in tree.items():
        parts = p.split("/")
        if len(parts) < 4 or parts[1] != "config" or parts[2] == "changes" or not data:
            continue
        if parts[2] == "users" and len(parts) == 5:  # /config/users/u/clients
            continue
        out[p[len("/config/") :]] = json.loads(data)["config"]
    return out
