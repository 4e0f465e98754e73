"""Cluster-wide budgets against a real 3-broker KRaft cluster (the ``kraft3`` fixture) and a real ZooKeeper whose
``/brokers/ids`` holds ephemeral broker registrations, as Kafka writes them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Chroot, run_cli, write_manifest, zk_cli
from kquotactl.backends.kafka.quotas import AdminBackend
from kquotactl.core.entities import Entity

pytestmark = pytest.mark.kafka

MiB = 1024**2
BUDGET = """\
quotas:
  - entity: {user: team-a}
    cluster: {producer_byte_rate: 200MiB, controller_mutation_rate: 10}
    config: {consumer_byte_rate: 1MiB}
"""


def _live(bootstrap: str, user: str = "team-a") -> dict:
    with AdminBackend.connect(bootstrap) as b:
        records = [r for r in b.describe() if r.entity == Entity.of(user=user)]
        return dict(records[0].config) if records else {}


def _eventually(fn, want, timeout: float = 15.0):
    """KRaft brokers apply the controller's metadata asynchronously: read until ``want`` (or time out)."""
    deadline = time.monotonic() + timeout
    got = fn()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.1)
        got = fn()
    return got


def test_alter_cluster_wide_writes_the_share_and_says_the_broker_count(kraft3):
    bs = ("--bootstrap-server", kraft3.bootstrap)
    r = run_cli(*bs, "alter", "--user", "team-b", "--cluster-wide", "--add-config", "consumer_byte_rate=300MiB")
    assert r.exit_code == 0, r.stderr
    assert (
        "user=team-b: consumer_byte_rate 300 MiB/s (314572800) cluster-wide = 100 MiB/s (104857600) per broker × 3"
        in (r.stderr)
    )
    assert _eventually(lambda: _live(kraft3.bootstrap, "team-b"), {"consumer_byte_rate": 100 * MiB}) == {
        "consumer_byte_rate": 100 * MiB
    }
    r = run_cli(*bs, "-o", "json", "explain", "--user", "team-b", "--cluster-wide")
    assert r.exit_code == 0, r.stderr
    view = json.loads(r.stdout)["cluster_wide"]
    assert view == [
        {
            "key": "consumer_byte_rate",
            "per_broker": 100 * MiB,
            "brokers": 3,
            "cluster_wide": 300 * MiB,
            "split": "divided",
        }
    ]
    r = run_cli(*bs, "alter", "--user", "team-b", "--cluster-wide", "--add-config", "request_percentage=50")
    assert r.exit_code == 1 and "request_percentage cannot be a cluster-wide budget" in r.stderr


def test_plan_divides_by_three_brokers_every_broker_enforces_the_share_and_a_lost_broker_is_drift(kraft3, tmp_path):
    with AdminBackend.connect(kraft3.bootstrap) as b:
        assert b.broker_ids() == [1, 2, 3]
    path = write_manifest(tmp_path, BUDGET)
    bs = ("--bootstrap-server", kraft3.nodes[0].bootstrap)
    r = run_cli(*bs, "plan", "-f", path)
    assert r.exit_code == 2, r.stderr
    assert "200 MiB/s (209715200) cluster-wide = 66.7 MiB/s (69905066) per broker × 3 brokers" in r.stderr
    assert "2 B/s of the budget is unassigned" in r.stderr
    assert "controller_mutation_rate 10 mutations/s cluster-wide = 10 mutations/s as configured" in r.stderr
    r = run_cli(*bs, "apply", "-f", path, "--yes")
    assert r.exit_code == 0, r.stderr
    want = {"producer_byte_rate": 69905066, "consumer_byte_rate": MiB, "controller_mutation_rate": 10.0}
    for node in kraft3.nodes:  # each broker's own view of the quota: the share, not the budget
        assert _eventually(lambda n=node: _live(n.bootstrap), want) == want, node.node_id
    assert run_cli(*bs, "plan", "-f", path).exit_code == 0  # in sync at 3 brokers

    kraft3.stop_broker(2)  # broker 3 leaves: the 2 left each still allow 1/3 of the budget
    r = run_cli(*bs, "plan", "-f", path, "-o", "json")
    assert r.exit_code == 2, r.stderr
    assert "the budget divided by 3 brokers: the broker count changed to 2 since the last apply" in r.stderr
    change = json.loads(r.stdout)["changes"][0]["keys"][0]
    assert (change["key"], change["old"], change["new"]) == ("producer_byte_rate", 69905066, 100 * MiB)


@pytest.fixture
def brokers_registered(chroot: Chroot) -> Iterator[list]:
    """Three brokers registered as Kafka does: an ephemeral /brokers/ids/<id> znode, each in its own session."""
    from kazoo.client import KazooClient

    sessions = []
    connect = chroot.connect
    for broker_id in (0, 1, 2):
        zk = KazooClient(connect)
        zk.start(timeout=30)
        data = {"version": 5, "host": "127.0.0.1", "port": 9092 + broker_id, "endpoints": []}
        zk.create(f"/brokers/ids/{broker_id}", json.dumps(data).encode(), ephemeral=True)
        sessions.append(zk)
    yield sessions
    for zk in sessions:
        zk.stop()
        zk.close()


@pytest.mark.zookeeper
def test_zookeeper_backend_reads_the_registered_brokers_and_sees_one_leave(chroot, brokers_registered, tmp_path: Path):
    path = write_manifest(tmp_path, BUDGET)
    r = zk_cli(chroot, "apply", "-f", path, "--yes")
    assert r.exit_code == 0, r.stderr
    assert "per broker × 3 brokers" in r.stderr
    r = zk_cli(chroot, "-o", "json", "describe", "--user", "team-a")
    assert json.loads(r.stdout)[0]["config"]["producer_byte_rate"] == 69905066
    brokers_registered[2].stop()  # its session ends: ZooKeeper deletes the ephemeral registration
    r = zk_cli(chroot, "plan", "-f", path)
    assert r.exit_code == 2
    assert "the budget divided by 3 brokers: the broker count changed to 2 since the last apply" in r.stderr
    r = zk_cli(chroot, "apply", "-f", path, "--yes")
    assert r.exit_code == 0, r.stderr
    assert zk_cli(chroot, "plan", "-f", path).exit_code == 0
