"""validate / plan / apply / export end to end against a real ZooKeeper."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from conftest import run_cli, write_manifest, zk_cli
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange, Outcome
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.plan import make_plan
from kquotactl.manifests.loader import load_text

pytestmark = pytest.mark.zookeeper

D = DEFAULT

MANIFEST = """\
prune: ["users/svc-*", "clients/*"]
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 1048576, consumer_byte_rate: 2097152}
  - entity: {user: alice, client-id: "batch job"}
    config: {request_percentage: 50}
    owner: team-a
    ticket: OPS-1
  - entity: {user: "<default>"}
    config: {producer_byte_rate: 102400}
  - entity: {user: "<default>", client-id: "<default>"}
    config: {request_percentage: 100}
  - entity: {ip: 192.0.2.10}
    config: {connection_creation_rate: 20}
  - entity: {user: svc-a}
    config: {consumer_byte_rate: 10MiB}
"""


def backend(chroot, **kw) -> ZooKeeperBackend:
    return ZooKeeperBackend(ZkSettings(connect=chroot.connect, connect_timeout=10, op_timeout=15, **kw))


def seed(chroot, changes: dict[Entity, dict]) -> None:
    with backend(chroot) as b:
        results = b.alter([EntityChange(e, c) for e, c in changes.items()])
    assert all(r.outcome is Outcome.APPLIED for r in results)


def live(chroot) -> dict[Entity, dict]:
    with backend(chroot) as b:
        return {r.entity: dict(r.config) for r in b.describe()}


# -- exit codes, convergence, idempotence ------------------------------------------------------------------


def test_plan_exit_codes_apply_converges_and_a_second_apply_writes_nothing(chroot, tmp_path) -> None:
    m = write_manifest(tmp_path, MANIFEST)
    before = chroot.snapshot()
    r = zk_cli(chroot, "plan", "-f", m)
    assert r.exit_code == 2, r.stderr
    assert "users/alice/clients/'batch job'" in r.stdout and "OPS-1" in r.stdout
    assert "6 entities to change: 6 to create" in r.stdout
    assert chroot.snapshot() == before  # plan writes nothing

    r = zk_cli(chroot, "apply", "-f", m, "--yes")
    assert r.exit_code == 0, r.stderr
    assert "applied 6 entities, 0 already as desired, 0 failed" in r.stdout
    assert live(chroot) == load_text(Path(m).read_text()).config_map()
    assert (
        chroot.get("/config/users/alice/clients/batch%20job") == b'{"version":1,"config":{"request_percentage":"50.0"}}'
    )
    notes = chroot.notifications()
    assert len(notes) == 6

    r = zk_cli(chroot, "plan", "-f", m)
    assert r.exit_code == 0 and "in sync: 6 entities as declared" in r.stdout
    snap = chroot.snapshot()
    r = zk_cli(chroot, "apply", "-f", m, "--yes")
    assert r.exit_code == 0 and "in sync" in r.stdout
    assert chroot.snapshot() == snap  # no writes, no notifications


def test_plan_json_and_apply_json_carry_sources_and_metadata(chroot, tmp_path) -> None:
    m = write_manifest(tmp_path, MANIFEST)
    r = zk_cli(chroot, "-o", "json", "plan", "-f", m)
    assert r.exit_code == 2
    plan = json.loads(r.stdout)
    pair = next(c for c in plan["changes"] if c["path"] == "users/alice/clients/batch job")
    assert pair["owner"] == "team-a" and pair["ticket"] == "OPS-1" and pair["source"] == f"{m}:5"
    assert pair["keys"] == [{"key": "request_percentage", "op": "add", "old": None, "new": 50.0}]
    assert plan["summary"]["create"] == 6 and "6 entities to change" in r.stderr
    log = tmp_path / "apply.log"
    r = zk_cli(chroot, "apply", "-f", m, "--yes", "-o", "json", "--log", str(log))
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["summary"]["applied"] == 6
    header, *lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(header["plan"]["changes"]) == 6  # the plan first: what apply --resume LOG continues
    assert {x["outcome"] for x in lines} == {"applied"} and len(lines) == 6
    assert next(x for x in lines if x.get("owner")) | {"time": None} == {
        "time": None,
        "entity": {"user": "alice", "client-id": "batch job"},
        "outcome": "applied",
        "before": {},
        "after": {"request_percentage": 50.0},
        "path": "users/alice/clients/batch job",
        "source": f"{m}:5",
        "owner": "team-a",
        "ticket": "OPS-1",
    }


def test_changes_show_old_and_new_and_apply_updates_in_place(chroot, tmp_path) -> None:
    seed(chroot, {Entity(user="alice"): {"producer_byte_rate": 1000, "request_percentage": 10.0}})
    m = write_manifest(tmp_path, "quotas:\n- {entity: {user: alice}, config: {producer_byte_rate: 2000}}\n")
    r = zk_cli(chroot, "plan", "-f", m)
    assert r.exit_code == 2
    row = next(line for line in r.stdout.splitlines() if "producer_byte_rate" in line).split()
    assert " ".join(row) == f"update users/alice producer_byte_rate change 1000 B/s 1.95 KiB/s (2000) {m}:2"
    assert "request_percentage" not in r.stdout  # not pruned: without --prune, keys are only added/changed
    assert zk_cli(chroot, "apply", "-f", m, "--yes").exit_code == 0
    assert live(chroot) == {Entity(user="alice"): {"producer_byte_rate": 2000, "request_percentage": 10.0}}


# -- bad manifests: file:line, exit 1, nothing written ----------------------------------------------------------


@pytest.mark.parametrize("command", ["validate", "plan", "apply"])
def test_bad_manifests_give_line_numbered_errors_and_write_nothing(chroot, tmp_path, command) -> None:
    m = write_manifest(
        tmp_path,
        """\
        quotas:
          - entity: {user: alice}
            config: {producer_byte_rate: 1048576}
          - entity: {user: bob}
            config:
              consumer_byte_rate: 1.5
          - entity: {ip: 192.0.2.1, user: x}
            config: {connection_creation_rate: 5}
        """,
    )
    before = chroot.snapshot()
    args = [command, "-f", m] + (["--yes"] if command == "apply" else [])
    r = zk_cli(chroot, *args)
    assert r.exit_code == 1
    assert f"{m}:6: invalid value '1.5' for consumer_byte_rate: must be a whole number" in r.stderr
    if command == "validate":
        assert f"{m}:7: INVALID_REQUEST" in r.stderr
        assert "2 problems in the manifest; nothing was written" in r.stderr
    else:
        assert r.stderr.count("\n") == 1  # one line
    assert chroot.snapshot() == before


def test_validate_reports_shadowed_quotas_with_the_entry_that_hides_them(tmp_path) -> None:
    m = write_manifest(
        tmp_path,
        """\
        quotas:
          - entity: {user: "<default>"}
            config: {consumer_byte_rate: 1MiB}
          - entity: {client-id: app1}
            config: {consumer_byte_rate: 2MiB, producer_byte_rate: 1MiB}
          - entity: {client-id: "<default>"}
            config: {consumer_byte_rate: 3MiB}
        """,
    )
    r = run_cli("validate", "-f", m)
    assert r.exit_code == 0
    assert (
        f"{m}:5: warning: clients/app1 consumer_byte_rate never applies: every connection it could match resolves "
        f"consumer_byte_rate at users/<default> ({m}:2) first" in r.stderr
    )
    assert f"{m}:7: warning: clients/<default> never applies" in r.stderr
    assert "valid: 3 entities (1 user, 2 clients) in 1 file, 2 warnings" in r.stdout
    assert run_cli("validate", "-f", m, "--strict").exit_code == 1


# -- prune scope and the deletion guard ---------------------------------------------------------------------------


def test_prune_removes_only_inside_the_scope_and_only_with_prune(chroot, tmp_path) -> None:
    seed(
        chroot,
        {
            Entity(user="svc-a"): {"consumer_byte_rate": 1, "request_percentage": 5.0},  # extra key, in scope
            Entity(user="svc-old"): {"producer_byte_rate": 1},  # in scope, not declared -> deleted
            Entity(user="svc-old", client_id="c"): {"producer_byte_rate": 1},  # its pair: in scope too
            Entity(client_id="legacy"): {"producer_byte_rate": 1},  # clients/* -> deleted
            Entity(client_id=D): {"producer_byte_rate": 7},  # default: wildcards do not own it
            Entity(user="bob"): {"producer_byte_rate": 1},  # out of scope -> kept
            Entity(user="alice"): {"request_percentage": 9.0},  # declared, out of scope: extra key kept
        },
    )
    m = write_manifest(tmp_path, MANIFEST)
    r = zk_cli(chroot, "apply", "-f", m, "--yes")
    assert r.exit_code == 0, r.stderr
    state = live(chroot)
    assert Entity(user="svc-old") in state and state[Entity(user="svc-a")]["request_percentage"] == 5.0

    r = zk_cli(chroot, "-o", "json", "plan", "-f", m, "--prune")
    assert r.exit_code == 2
    plan = json.loads(r.stdout)
    assert {c["path"]: c["action"] for c in plan["changes"]} == {
        "users/svc-a": "update",
        "users/svc-old/clients/c": "delete",
        "users/svc-old": "delete",
        "clients/legacy": "delete",
    }
    assert [c["path"] for c in plan["changes"]][-1] == "clients/legacy"  # removals last, specific first
    r = zk_cli(chroot, "apply", "-f", m, "--prune", "--yes")
    assert r.exit_code == 0, r.stderr
    state = live(chroot)
    assert state[Entity(user="svc-a")] == {"consumer_byte_rate": 10485760}
    assert Entity(user="svc-old") not in state and Entity(client_id="legacy") not in state
    assert state[Entity(client_id=D)] == {"producer_byte_rate": 7}
    assert state[Entity(user="bob")] == {"producer_byte_rate": 1}
    assert state[Entity(user="alice")] == {
        "producer_byte_rate": 1048576,
        "consumer_byte_rate": 2097152,
        "request_percentage": 9.0,
    }
    assert not chroot.exists("/config/users/svc-old")  # pair and user nodes removed, no empty parents left
    assert zk_cli(chroot, "plan", "-f", m, "--prune").exit_code == 0


def test_the_deletion_guard_refuses_and_writes_nothing_until_raised(chroot, tmp_path) -> None:
    seed(chroot, {Entity(user=f"svc-{i}"): {"producer_byte_rate": 1} for i in range(4)})
    m = write_manifest(
        tmp_path, 'prune: ["users/svc-*"]\nquotas:\n- {entity: {user: svc-0}, config: {producer_byte_rate: 1}}\n'
    )
    before = chroot.snapshot()
    for args in (["plan"], ["apply", "--yes"]):
        r = zk_cli(chroot, *args, "-f", m, "--prune", "--max-deletions", "2")
        assert r.exit_code == 1
        assert "removes quotas from 3 entities, more than --max-deletions 2" in r.stderr
    assert chroot.snapshot() == before
    r = zk_cli(chroot, "apply", "-f", m, "--prune", "--max-deletions", "3", "--yes")
    assert r.exit_code == 0, r.stderr
    assert list(live(chroot)) == [Entity(user="svc-0")]


def test_prune_without_a_scope_is_refused(chroot, tmp_path) -> None:
    m = write_manifest(tmp_path, "quotas:\n- {entity: {user: a}, config: {producer_byte_rate: 1}}\n")
    r = zk_cli(chroot, "plan", "-f", m, "--prune")
    assert r.exit_code == 1 and "needs a prune scope" in r.stderr


# -- export round trip ---------------------------------------------------------------------------------------------

EVERY_KIND = {
    Entity(user="alice"): {"producer_byte_rate": 1048576, "request_percentage": 12.5},
    Entity(user=D): {"consumer_byte_rate": 2048},
    Entity(user="alice", client_id="app 1"): {"controller_mutation_rate": 1e7},
    Entity(user="alice", client_id=D): {"request_percentage": 100.0},
    Entity(user=D, client_id="app1"): {"producer_byte_rate": 1},
    Entity(user=D, client_id=D): {"producer_byte_rate": 2},
    Entity(client_id="ünïcødé/x"): {"producer_byte_rate": 3},
    Entity(client_id=D): {"consumer_byte_rate": 4},
    Entity(user="<default>"): {"producer_byte_rate": 5},  # a real user named <default>
    Entity(user="CN=a,O=b c*"): {"producer_byte_rate": 6},
    Entity(user="007"): {"producer_byte_rate": 7},
    Entity(ip="192.0.2.10"): {"connection_creation_rate": 20},
    Entity(ip="2001:db8::1"): {"connection_creation_rate": 21},
    Entity(ip=D): {"connection_creation_rate": 22},
}


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_export_round_trips_every_entity_kind_and_is_a_no_op_to_apply(
    chroot, zk_server, zk_admin, tmp_path, fmt
) -> None:
    seed(chroot, EVERY_KIND)
    r = zk_cli(chroot, "-o", fmt, "export")
    assert r.exit_code == 0, r.stderr
    assert zk_cli(chroot, "-o", fmt, "export").stdout == r.stdout  # deterministic
    exported = r.stdout
    if fmt == "yaml":
        assert '- entity: {user: "<default>"}\n  config: {consumer_byte_rate: 2048}\n' in exported
        assert '- entity: {user: {name: "<default>"}}\n' in exported
    else:
        doc = json.loads(exported)
        assert {"entity": {"user": {"name": "<default>"}}, "config": {"producer_byte_rate": 5}} in doc["quotas"]
        assert isinstance(doc["quotas"][0]["config"].get("consumer_byte_rate"), int)
    path = write_manifest(tmp_path, exported, f"export.{fmt}")
    # plan of an export is a no-op, and so is export | apply -f -
    assert zk_cli(chroot, "plan", "-f", path).exit_code == 0
    snap = chroot.snapshot()
    r = zk_cli(chroot, "apply", "-f", "-", "--yes", input=exported)
    assert r.exit_code == 0 and "in sync: 14 entities" in r.stdout, r.stderr
    assert chroot.snapshot() == snap
    # apply to an empty cluster: the same quotas, byte for byte the same znodes
    zk_admin.ensure_path(chroot.root + "-copy/brokers/ids")
    try:
        copy = f"{zk_server.connect}{chroot.root}-copy"
        r = run_cli("--zookeeper", copy, "apply", "-f", path, "--yes")
        assert r.exit_code == 0, r.stderr
        with ZooKeeperBackend(ZkSettings(connect=copy)) as b:
            assert {x.entity: dict(x.config) for x in b.describe()} == EVERY_KIND
        for e in EVERY_KIND:
            assert zk_admin.get(f"{chroot.root}-copy/config/{e.path}")[0] == chroot.get(f"/config/{e.path}")
    finally:
        zk_admin.delete(chroot.root + "-copy", recursive=True)


# -- stale plans and concurrent changes ----------------------------------------------------------------------------


def test_apply_refuses_a_plan_made_before_a_concurrent_change(chroot, tmp_path) -> None:
    seed(chroot, {Entity(user="alice"): {"producer_byte_rate": 1}})
    m = write_manifest(tmp_path, MANIFEST)
    plan_file = tmp_path / "plan.json"
    r = zk_cli(chroot, "-o", "json", "plan", "-f", m, "--out", str(plan_file))
    assert r.exit_code == 2 and json.loads(plan_file.read_text())["fingerprint"].startswith("sha256:")
    seed(chroot, {Entity(user="bob"): {"producer_byte_rate": 1}})  # someone else writes meanwhile
    before = chroot.snapshot()
    r = zk_cli(chroot, "apply", "--plan", str(plan_file), "--yes")
    assert r.exit_code == 1 and "changed since the plan" in r.stderr and "nothing was written" in r.stderr
    assert chroot.snapshot() == before
    # a fresh plan applies; the saved plan is applied as saved
    r = zk_cli(chroot, "plan", "-f", m, "--out", str(plan_file))
    assert r.exit_code == 2
    r = zk_cli(chroot, "apply", "--plan", str(plan_file), "--yes")
    assert r.exit_code == 0, r.stderr
    assert zk_cli(chroot, "plan", "-f", m).exit_code == 0


def test_an_entity_changed_between_plan_and_write_is_rejected_not_overwritten(chroot) -> None:
    seed(chroot, {Entity(user="alice"): {"producer_byte_rate": 1}})
    manifest = load_text(MANIFEST)
    with backend(chroot) as b:
        plan = make_plan(manifest, b.describe())
        seed(chroot, {Entity(user="alice"): {"producer_byte_rate": 2}})  # lands after the plan's read
        results = b.alter(plan.changes(), expected=plan.expected())
    by = {r.entity: r for r in results}
    assert by[Entity(user="alice")].outcome is Outcome.REJECTED and "stale plan" in by[Entity(user="alice")].message
    assert all(r.outcome is Outcome.APPLIED for e, r in by.items() if e != Entity(user="alice"))
    assert live(chroot)[Entity(user="alice")] == {"producer_byte_rate": 2}


# -- partial failure ----------------------------------------------------------------------------------------------


def test_a_rejected_entity_is_named_the_rest_applied_and_a_rerun_converges(chroot, tmp_path) -> None:
    m = write_manifest(
        tmp_path,
        "quotas:\n- {entity: {user: ok}, config: {producer_byte_rate: 1}}\n"
        "- {entity: {user: '..'}, config: {producer_byte_rate: 1}}\n",
    )
    r = zk_cli(chroot, "apply", "-f", m, "--yes")
    assert r.exit_code == 1
    assert "rejected user=..: " in r.stderr and "cannot be stored in ZooKeeper" in r.stderr
    assert "1 entity not applied (user=..); 1 entity as planned" in r.stderr
    assert "applied 1 entity," in r.stdout
    assert live(chroot) == {Entity(user="ok"): {"producer_byte_rate": 1}}
    m = write_manifest(tmp_path, "quotas:\n- {entity: {user: ok}, config: {producer_byte_rate: 1}}\n")
    assert zk_cli(chroot, "apply", "-f", m, "--yes").exit_code == 0


@pytest.mark.reliability
def test_a_connection_lost_midway_reports_exactly_what_was_applied_and_a_rerun_converges(tmp_path, monkeypatch) -> None:
    from kazoo.client import KazooClient

    from kquotactl.testing.servers import ZooKeeperServer

    n = 1500  # three transactions of 500 entities
    text = "quotas:\n" + "".join(
        f"- {{entity: {{user: u{i:04d}}}, config: {{producer_byte_rate: {i + 1}}}}}\n" for i in range(n)
    )
    m = write_manifest(tmp_path, text)
    with ZooKeeperServer() as server:
        admin = KazooClient(server.connect)
        admin.start()
        admin.ensure_path("/c/brokers/ids")
        admin.stop()
        admin.close()
        connect = server.connect + "/c"
        original = ZooKeeperBackend.alter

        def alter_then_crash(self, changes, **kw):
            def progress(done: int) -> None:
                server.stop(signal.SIGKILL)  # the server dies after the first transaction commits

            return original(self, changes, **{**kw, "progress": progress})

        monkeypatch.setattr(ZooKeeperBackend, "alter", alter_then_crash)
        r = run_cli("--zookeeper", connect, "--timeout", "3", "apply", "-f", m, "--yes")
        assert r.exit_code == 1
        (report,) = {w.rstrip(";:") for x in r.stderr.splitlines() for w in x.split() if "kquotactl-apply-" in w}
        every = Path(report).read_text().splitlines()
        Path(report).unlink()
        applied = [x.split(": ", 1)[1] for x in every if x.startswith("applied: ")]
        missing = [x.split(": ", 1)[1] for x in every if x.startswith("not applied: ")]
        unknown = [x.split(": ", 1)[1] for x in every if x.startswith("outcome unknown: ")]
        # the commit after the crash may have been sent before kazoo saw the connection drop: then its
        # outcome is unknown (all or none; the server is gone, so it cannot be read back), otherwise it is
        # plainly not applied
        assert len(applied) == 500 and len(missing) + len(unknown) == n - 500 and len(unknown) in (0, 500)
        assert "partial apply: 500 entities applied, " in r.stderr
        monkeypatch.setattr(ZooKeeperBackend, "alter", original)
        server.start()
        with ZooKeeperBackend(ZkSettings(connect=connect)) as b:
            state = {x.entity.label() for x in b.describe()}
        assert state in (set(applied), set(applied) | set(unknown))  # nothing half-written
        r = run_cli("--zookeeper", connect, "apply", "-f", m, "--yes")
        assert r.exit_code == 0 and f"applied {n - len(state)} entities" in r.stdout, r.stderr
        assert run_cli("--zookeeper", connect, "plan", "-f", m).exit_code == 0


# -- confirmation, dry run, usage --------------------------------------------------------------------------------


def test_apply_without_a_terminal_needs_yes_and_dry_run_writes_nothing(chroot, tmp_path) -> None:
    m = write_manifest(tmp_path, MANIFEST)
    before = chroot.snapshot()
    r = zk_cli(chroot, "apply", "-f", m)
    assert r.exit_code == 1 and "pass --yes" in r.stderr
    r = zk_cli(chroot, "apply", "-f", m, "--dry-run")
    assert r.exit_code == 2, r.stderr
    assert "would apply 6 entities" in r.stdout and "dry run, nothing written" in r.stdout
    assert chroot.snapshot() == before
    r = zk_cli(chroot, "apply", "-f", m, "--plan", str(tmp_path / "p.json"), "--yes")
    assert r.exit_code == 1 and "not both" in r.stderr
    r = zk_cli(chroot, "-o", "kafka", "plan", "-f", m)
    assert r.exit_code == 1 and "-o kafka is for describe" in r.stderr
    assert chroot.snapshot() == before


def test_an_unreachable_cluster_is_one_line_and_exit_1(tmp_path) -> None:
    from kquotactl.testing.servers import free_port

    m = write_manifest(tmp_path, MANIFEST)
    r = run_cli("--zookeeper", f"127.0.0.1:{free_port()}", "--connect-timeout", "1", "plan", "-f", m)
    assert r.exit_code == 1 and "cannot connect to ZooKeeper" in r.stderr and r.stderr.count("\n") == 1
