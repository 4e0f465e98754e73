"""Manifests on real brokers: the same plan/apply/prune/export behaviour through the admin API (KRaft 4.x and a
ZooKeeper-mode 3.9 broker), and a ZooKeeper -> KRaft migration with export | apply."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import DEFAULT, Entity

pytestmark = pytest.mark.kafka

D = DEFAULT

MANIFEST = """\
prune: ["users/svc-*", "clients/*"]
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 1048576, consumer_byte_rate: 2097152}
  - entity: {user: alice, client-id: "batch job"}
    config: {request_percentage: 50}
  - entity: {user: "<default>"}
    config: {producer_byte_rate: 102400}
  - entity: {user: "<default>", client-id: "<default>"}
    config: {controller_mutation_rate: 2.5}
  - entity: {ip: 192.0.2.10}
    config: {connection_creation_rate: 20}
  - entity: {user: svc-a}
    config: {consumer_byte_rate: 10MiB}
"""


@pytest.fixture(params=["kraft", pytest.param("zk-broker", marks=pytest.mark.zookeeper)])
def target(request) -> list[str]:
    if request.param == "kraft":
        return ["--bootstrap-server", request.getfixturevalue("kraft").bootstrap]
    return ["--bootstrap-server", request.getfixturevalue("zkmode").bootstrap]


def write(tmp_path: Path, text: str, name: str = "quotas.yaml") -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def describe(target) -> list[dict]:
    r = run_cli(*target, "describe", "-o", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_plan_apply_converge_and_prune_through_the_admin_api(target, tmp_path) -> None:
    m = write(tmp_path, MANIFEST)
    assert run_cli(*target, "plan", "-f", m).exit_code == 2
    r = run_cli(*target, "apply", "-f", m, "--yes")
    assert r.exit_code == 0, r.stderr
    assert "applied 6 entities" in r.stdout
    assert run_cli(*target, "plan", "-f", m).exit_code == 0
    r = run_cli(*target, "apply", "-f", m, "--yes")
    assert r.exit_code == 0 and "in sync: 6 entities" in r.stdout

    # drift and strays, then prune within the scope only
    assert run_cli(*target, "alter", "--user", "svc-old", "--add-config", "producer_byte_rate=1").exit_code == 0
    assert run_cli(*target, "alter", "--user", "bob", "--add-config", "producer_byte_rate=1").exit_code == 0
    assert run_cli(*target, "alter", "--user", "alice", "--add-config", "producer_byte_rate=5").exit_code == 0
    r = run_cli(*target, "-o", "json", "plan", "-f", m, "--prune")
    assert r.exit_code == 2, r.stderr
    assert {c["path"]: c["action"] for c in json.loads(r.stdout)["changes"]} == {
        "users/alice": "update",
        "users/svc-old": "delete",
    }
    assert run_cli(*target, "apply", "-f", m, "--prune", "--max-deletions", "0", "--yes").exit_code == 1
    r = run_cli(*target, "apply", "-f", m, "--prune", "--yes")
    assert r.exit_code == 0, r.stderr
    users = {json.dumps(x["entity"]) for x in describe(target)}
    assert '{"user": "svc-old"}' not in users and '{"user": "bob"}' in users
    assert run_cli(*target, "plan", "-f", m, "--prune").exit_code == 0


@pytest.mark.zookeeper
def test_export_from_zookeeper_and_apply_to_kraft_migrates_every_entity_kind(chroot, kraft, tmp_path) -> None:
    state = {
        Entity(user="alice"): {"producer_byte_rate": 1048576, "request_percentage": 12.5},
        Entity(user=D): {"consumer_byte_rate": 2048},
        Entity(user="alice", client_id="app 1"): {"controller_mutation_rate": 1e7},
        Entity(user="alice", client_id=D): {"consumer_byte_rate": 7},
        Entity(user=D, client_id="app1"): {"producer_byte_rate": 1},
        Entity(user=D, client_id=D): {"producer_byte_rate": 2},
        Entity(client_id="c~*/x"): {"producer_byte_rate": 3},
        Entity(client_id=D): {"consumer_byte_rate": 4},
        Entity(user="<default>"): {"producer_byte_rate": 5},
        Entity(user="CN=a,O=b c"): {"producer_byte_rate": 6},
        Entity(ip="192.0.2.10"): {"connection_creation_rate": 20},
        Entity(ip="2001:db8::1"): {"connection_creation_rate": 21},
        Entity(ip=D): {"connection_creation_rate": 22},
    }
    with ZooKeeperBackend(ZkSettings(connect=chroot.connect)) as b:
        b.alter([EntityChange(e, c) for e, c in state.items()])
    r = run_cli("--zookeeper", chroot.connect, "export")
    assert r.exit_code == 0, r.stderr
    exported = r.stdout
    kraft_target = ["--bootstrap-server", kraft.bootstrap]
    r = run_cli(*kraft_target, "apply", "-f", "-", "--yes", input=exported)
    assert r.exit_code == 0, r.stderr
    assert describe(kraft_target) == describe(["--zookeeper", chroot.connect])
    assert run_cli(*kraft_target, "plan", "-f", write(tmp_path, exported)).exit_code == 0
    assert run_cli(*kraft_target, "export").stdout == exported  # the same manifest from either backend
