"""The ZooKeeper -> KRaft migration (KIP-866, Kafka 3.9): kquotactl reads the migration state from ZooKeeper,
refuses ``--zookeeper`` writes once a KRaft controller quorum in migration mode exists (they would never reach the
KRaft metadata log), still reads with a warning, and carries the quotas over (export, apply, plan).

The pure tests decode znodes exactly as Kafka 3.9 wrote them in a real run of the harness below
(``kquotactl.testing.migration``); ``test_recorded_znodes_are_kafkas_own`` holds the recordings to a live run. The
others run on a real ZooKeeper, a Kafka 3.9 KRaft controller in migration mode and a ZooKeeper-mode broker with
the migration enabled, after the migration has completed (dual-write).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli, write_manifest
from kquotactl.core.entities import Entity
from kquotactl.core.keys import KEYS, PRODUCE_KEY
from kquotactl.core.migration import MigrationState, Phase, ZooKeeperWriteLost, decode_migration

CONSUME_KEY, PERCENT_KEY = "consumer_byte_rate", "request_percentage"
assert CONSUME_KEY in KEYS and PERCENT_KEY in KEYS

# -- Kafka 3.9's own znodes, recorded from ZkMigration (zk_migration below) ---------------------------------------

#: the KRaft controller is up in migration mode, no ZooKeeper broker has joined yet (ZkMigration.before_brokers)
PREPARING = {
    "/controller": None,
    "/controller_epoch": None,
    "/migration": b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,"kraft_metadata_epoch":-1,'
    b'"kraft_controller_epoch":-1}',
}
#: after "Completed migration of metadata from ZooKeeper to KRaft", in dual-write (ZkMigration.znodes())
MIGRATED = {
    "/controller": b'{"version":2,"brokerid":3000,"timestamp":"1795905381476","kraftControllerEpoch":1}',
    "/controller_epoch": b"2",
    "/migration": b'{"version":0,"kraft_metadata_offset":24,"kraft_controller_id":3000,"kraft_metadata_epoch":1,'
    b'"kraft_controller_epoch":1}',
}
#: a Kafka 3.9 ZooKeeper broker elected controller, no migration (the zk_kafka fixture's broker)
ZK_CONTROLLER = {
    "/controller": b'{"version":2,"brokerid":0,"timestamp":"1795905518495","kraftControllerEpoch":-1}',
    "/controller_epoch": b"1",
    "/migration": None,
}


def decoded(znodes: dict[str, bytes | None]) -> MigrationState:
    return decode_migration(znodes["/controller"], znodes["/migration"], znodes["/controller_epoch"])


def test_a_zookeeper_cluster_is_not_migrating() -> None:
    assert decoded(ZK_CONTROLLER) == MigrationState(Phase.NONE, zk_controller_epoch=1)
    assert not decoded(ZK_CONTROLLER).writes_lost
    assert decode_migration(None, None) == MigrationState(Phase.NONE)  # no broker has been controller yet


def test_a_controller_quorum_waiting_for_the_brokers_is_preparing() -> None:
    state = decoded(PREPARING)
    assert state == MigrationState(Phase.PREPARING, metadata_offset=-1)
    assert state.writes_lost  # the copy may start between our check and our write: refused as well


def test_a_kraft_controller_in_controller_is_migrated() -> None:
    state = decoded(MIGRATED)
    assert state == MigrationState(Phase.MIGRATED, 3000, 1, 24, 2)
    assert (
        state.summary()
        == "the cluster is migrating (or migrated) to KRaft: KRaft controller 3000 holds /controller, epoch 1"
    )


def test_a_kraft_controller_still_copying() -> None:
    """Between claiming /controller and recording the migrated offset, /migration still holds -1."""
    state = decode_migration(MIGRATED["/controller"], PREPARING["/migration"], b"2")
    assert state.phase is Phase.COPYING and state.writes_lost


def test_after_finalization_or_a_lost_migration_znode_the_kraft_controller_decides() -> None:
    """The KRaft controller's /controller is persistent: it outlives the migration. Without /migration (removed by
    hand) the cluster is still KRaft's."""
    assert decode_migration(MIGRATED["/controller"], None).phase is Phase.MIGRATED


def test_malformed_znodes_never_raise() -> None:
    assert decode_migration(b"\xff{", b"not json").phase is Phase.PREPARING  # /migration is only ever Kafka's
    assert decode_migration(b"[1]", None, b"x").phase is Phase.NONE
    assert decode_migration(b'{"kraftControllerEpoch":true}', None).phase is Phase.NONE


def test_the_error_carries_data_and_the_cli_words_it() -> None:
    from kquotactl.cli.errorwords import worded

    e = ZooKeeperWriteLost("zk:2181/kafka", decoded(MIGRATED))
    assert e.where == "zk:2181/kafka" and e.state.phase is Phase.MIGRATED and e.exit_code == 1
    assert "--" not in str(e)  # the core names no flag
    assert worded(e) == (
        "ZooKeeper zk:2181/kafka: the cluster is migrating (or migrated) to KRaft: KRaft controller 3000 holds "
        "/controller, epoch 1; a write to ZooKeeper would be lost (it never reaches the KRaft metadata log); "
        "nothing written. Use --bootstrap-server (or --bootstrap-controller)"
    )


# -- a real migration -----------------------------------------------------------------------------------------

ALICE, BATCH, ETL, MALLORY = (
    Entity(user="alice"),
    Entity(client_id="batch"),
    Entity(user="etl"),
    Entity(user="mallory"),
)


def _seed(zookeeper: str) -> None:
    """The quotas the cluster had in ZooKeeper before the migration (written as kquotactl always has)."""
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.changes import EntityChange

    with ZooKeeperBackend(ZkSettings(connect=zookeeper, allow_no_brokers=True)) as b:
        b.alter([EntityChange(ALICE, set={PRODUCE_KEY: 10485760}), EntityChange(BATCH, set={CONSUME_KEY: 1048576})])


#: what the CLI answered while the controller quorum waited for the broker (the "preparing" state)
WHILE_PREPARING: dict[str, object] = {}


def _while_preparing(zookeeper: str) -> None:
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings

    zk = ("--zookeeper", zookeeper, "--allow-no-brokers")  # no broker has registered yet
    WHILE_PREPARING["alter"] = run_cli(*zk, "alter", "--user", "mallory", "--add-config", f"{PRODUCE_KEY}=1MiB")
    WHILE_PREPARING["describe"] = run_cli(*zk, "describe", "--user", "alice", "-o", "json")
    with ZooKeeperBackend(ZkSettings(connect=zookeeper)) as b:
        WHILE_PREPARING["state"] = b.migration()
        WHILE_PREPARING["mallory"] = [r for r in b.describe() if r.entity == MALLORY]


@pytest.fixture(scope="module")
def zk_migration(zk_server) -> Iterator:
    from kquotactl.testing.migration import ZkMigration

    migration = ZkMigration(zk_server.connect)
    migration.start(seed=_seed, preparing=_while_preparing)
    yield migration
    migration.close()


def _config_tree(migration) -> dict[str, bytes]:
    """Every znode under /config with its data: proof that nothing was written."""
    zk = migration.kazoo()
    try:
        out: dict[str, bytes] = {}

        def walk(p: str) -> None:
            out[p] = zk.get(p)[0]
            for c in zk.get_children(p):
                walk(f"{p}/{c}")

        walk("/config")
        return out
    finally:
        zk.stop()
        zk.close()


def _admin_describe(migration) -> dict[Entity, dict]:
    from kquotactl.backends.kafka.quotas import AdminBackend

    with AdminBackend.connect(migration.bootstrap) as admin:
        return {r.entity: dict(r.config) for r in admin.describe()}


def _refusal(migration) -> str:
    state = decoded(migration.znodes())
    return (
        f"kquotactl: error: ZooKeeper {migration.zookeeper}: the cluster is migrating (or migrated) to KRaft: "
        f"KRaft controller 3000 holds /controller, epoch {state.kraft_controller_epoch}; a write to ZooKeeper "
        "would be lost (it never reaches the KRaft metadata log); nothing written. Use --bootstrap-server "
        "(or --bootstrap-controller)\n"
    )


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_recorded_znodes_are_kafkas_own(zk_migration) -> None:
    """The recordings above have the fields Kafka 3.9 writes now, and the live znodes decode as recorded."""
    live = zk_migration.znodes()
    for recorded, now in ((MIGRATED, live), (PREPARING, zk_migration.before_brokers)):
        for path in recorded:
            assert (recorded[path] is None) == (now[path] is None), path
            if recorded[path] is not None and path != "/controller_epoch":
                assert json.loads(recorded[path]).keys() == json.loads(now[path]).keys(), path
    state = decoded(live)
    assert state.phase is Phase.MIGRATED and state.kraft_controller_id == 3000
    assert state.kraft_controller_epoch and state.kraft_controller_epoch > 0 and state.metadata_offset >= 0
    assert decoded(zk_migration.before_brokers).phase is Phase.PREPARING


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_while_the_quorum_waits_for_the_brokers_writes_are_refused(zk_migration) -> None:
    """The "preparing" state, live: the KRaft controller has registered /migration, no broker has joined."""
    state = WHILE_PREPARING["state"]
    assert state == MigrationState(Phase.PREPARING, metadata_offset=-1)
    alter, describe = WHILE_PREPARING["alter"], WHILE_PREPARING["describe"]
    assert (alter.exit_code, alter.stderr) == (
        1,
        f"kquotactl: error: ZooKeeper {zk_migration.zookeeper}: {state.summary()}; a write to ZooKeeper would be "
        "lost (it never reaches the KRaft metadata log); nothing written. Use --bootstrap-server (or "
        "--bootstrap-controller)\n",
    )
    assert WHILE_PREPARING["mallory"] == []
    assert describe.exit_code == 0 and json.loads(describe.stdout)[0]["entity"] == {"user": "alice"}
    assert describe.stderr.count("may be stale") == 1


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_zookeeper_alter_is_refused_and_nothing_is_written(zk_migration) -> None:
    before, admin_before = _config_tree(zk_migration), _admin_describe(zk_migration)
    r = run_cli(
        "--zookeeper", zk_migration.zookeeper, "alter", "--user", "mallory", "--add-config", f"{PRODUCE_KEY}=1MiB"
    )
    assert (r.exit_code, r.stdout, r.stderr) == (1, "", _refusal(zk_migration))
    assert _config_tree(zk_migration) == before
    assert _admin_describe(zk_migration) == admin_before and MALLORY not in admin_before


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_zookeeper_apply_and_delete_are_refused(zk_migration, tmp_path: Path) -> None:
    before = _config_tree(zk_migration)
    f = write_manifest(tmp_path, f"quotas:\n- entity: {{user: mallory}}\n  config: {{{PRODUCE_KEY}: 1024}}\n")
    zk = ("--zookeeper", zk_migration.zookeeper)
    for args in (
        ("apply", "-f", f, "--yes"),
        ("apply", "-f", f, "--yes", "--stages", "2"),
        ("alter", "--user", "alice", "--delete-config", PRODUCE_KEY),
    ):
        r = run_cli(*zk, *args)
        assert (r.exit_code, r.stderr.splitlines()[-1] + "\n") == (1, _refusal(zk_migration)), args
    assert _config_tree(zk_migration) == before


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_zookeeper_reads_work_with_one_warning(zk_migration, tmp_path: Path) -> None:
    r = run_cli("--zookeeper", zk_migration.zookeeper, "describe", "--user", "alice", "-o", "json")
    assert r.exit_code == 0
    assert json.loads(r.stdout) == [{"entity": {"user": "alice"}, "config": {PRODUCE_KEY: 10485760}}]
    state = decoded(zk_migration.znodes())
    assert r.stderr == (
        f"kquotactl: warning: ZooKeeper {zk_migration.zookeeper}: {state.summary()}; what ZooKeeper holds may be "
        "stale (the KRaft metadata log decides): read through --bootstrap-server\n"
    )
    f = write_manifest(tmp_path, f"quotas:\n- entity: {{user: alice}}\n  config: {{{PRODUCE_KEY}: 10485760}}\n")
    r = run_cli("--zookeeper", zk_migration.zookeeper, "plan", "-f", f)
    assert r.exit_code == 0 and r.stderr.count("may be stale") == 1
    r = run_cli("--zookeeper", zk_migration.zookeeper, "apply", "-f", f, "--dry-run")  # a read: shown, warned
    assert r.exit_code == 0 and r.stderr.count("may be stale") == 1


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_worked_example_export_apply_plan(zk_migration, tmp_path: Path) -> None:
    """docs/migration.md: export from ZooKeeper, apply through the brokers (the KRaft controller writes), plan in
    sync. The new entity reaches ZooKeeper only through the KRaft controller's dual-write: it went through the
    KRaft metadata log."""
    out = tmp_path / "quotas.yaml"
    r = run_cli("--zookeeper", zk_migration.zookeeper, "export", "--out", str(out))
    assert r.exit_code == 0, r.stderr
    assert "may be stale" in r.stderr
    bs = ("--bootstrap-server", zk_migration.bootstrap)
    assert run_cli(*bs, "plan", "-f", str(out)).exit_code == 0  # the migration copied them
    with out.open("a") as fh:
        fh.write(f"- entity: {{user: etl}}\n  config: {{{PERCENT_KEY}: 50}}\n")
    assert run_cli(*bs, "plan", "-f", str(out)).exit_code == 2
    r = run_cli(*bs, "apply", "-f", str(out), "--yes")
    assert r.exit_code == 0, r.stderr
    r = run_cli(*bs, "plan", "-f", str(out))
    assert (r.exit_code, r.stdout.strip()) == (0, "in sync: 3 entities as declared, nothing to change")
    assert _admin_describe(zk_migration)[ETL] == {PERCENT_KEY: 50.0}
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings

    deadline = time.monotonic() + 20
    with ZooKeeperBackend(ZkSettings(connect=zk_migration.zookeeper)) as b:  # the controller's dual-write
        while {r.entity: dict(r.config) for r in b.describe()}.get(ETL) != {PERCENT_KEY: 50.0}:
            assert time.monotonic() < deadline, "the KRaft controller did not write users/etl to ZooKeeper"
            time.sleep(0.2)
    # one key through the KRaft controller itself (controllers alter, they do not describe)
    r = run_cli(
        "--bootstrap-controller",
        zk_migration.controller_bootstrap,
        "alter",
        "--user",
        "etl",
        "--delete-config",
        PERCENT_KEY,
    )
    assert r.exit_code == 0, r.stderr
    # the ZooKeeper-mode broker answers from ZooKeeper, which the controller's dual-write reaches a moment later
    deadline = time.monotonic() + 20
    while ETL in _admin_describe(zk_migration):
        assert time.monotonic() < deadline, "the deletion through the KRaft controller never reached the broker"
        time.sleep(0.2)


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_a_zookeeper_cluster_without_migration_still_writes(zkmode) -> None:
    """Kafka 3.9 in ZooKeeper mode, no migration: its /controller (kraftControllerEpoch -1) is NONE, writes go on."""
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings

    with ZooKeeperBackend(ZkSettings(connect=zkmode.zookeeper)) as b:
        assert b.migration().phase is Phase.NONE
        raw = b._session.get_raw_many(["/controller", "/controller_epoch"])
        controller = json.loads(raw["/controller"])
    assert controller.keys() == json.loads(ZK_CONTROLLER["/controller"]).keys()
    assert controller["kraftControllerEpoch"] == -1
    r = run_cli("--zookeeper", zkmode.zookeeper, "alter", "--user", "alice", "--add-config", f"{PRODUCE_KEY}=1MiB")
    assert (r.exit_code, r.stderr) == (0, "")
    assert _admin_describe(zkmode)[ALICE] == {PRODUCE_KEY: 1048576}
