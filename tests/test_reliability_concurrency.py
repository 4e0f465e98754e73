"""16 processes altering overlapping entities at once against a real ZooKeeper: no lost update, every
change notified exactly once.

Each worker process owns one (entity, key) slot and writes 1..ROUNDS into it, sometimes removing the key
first; all workers share four entity znodes (a user, two pairs under that user, and a client-id), so
nearly every write races another on the same znode, and pair deletes race the cleanup of their parents.
A lost update shows as a slot not holding ROUNDS at the end; a duplicate or missing notification as a
count that differs from the number of writes the workers were told were applied.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from fixtures_reliability import COUNTS, check_layout, notification_counts, walk

pytestmark = [pytest.mark.reliability, pytest.mark.zookeeper]

WORKERS = 16
ROUNDS = int(os.environ.get("KQUOTACTL_CONCURRENCY_ROUNDS") or 12)

ENTITIES = [
    {"user": "shared"},
    {"user": "shared", "client_id": "app"},
    {"user": "shared", "client_id": None},  # (shared, <default>)
    {"client_id": "app"},
]
KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"]

WORKER = textwrap.dedent(
    """
    import json, sys
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.entities import DEFAULT, Entity
    from kquotactl.core.changes import EntityChange, Outcome

    connect, spec, key, rounds = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    entity = Entity(**{k: (DEFAULT if v is None else v) for k, v in spec.items()})
    applied = 0
    with ZooKeeperBackend(ZkSettings(connect=connect, op_timeout=60)) as b:
        for i in range(1, rounds + 1):
            if i % 4 == 0:  # remove the key first: may delete the znode (and a pair's empty parents)
                [r] = b.alter([EntityChange(entity, {}, frozenset({key}))])
                assert r.outcome is Outcome.APPLIED, r
                applied += 1
            [r] = b.alter([EntityChange(entity, {key: i})])
            assert r.outcome is Outcome.APPLIED, r
            applied += 1
    print(json.dumps({"path": entity.path, "applied": applied}))
    """
)


def test_sixteen_processes_on_overlapping_entities_lose_nothing_and_notify_each_change_once(chroot) -> None:
    slots = [(e, k) for e in ENTITIES for k in KEYS][:WORKERS]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, chroot.connect, json.dumps(e), k, str(ROUNDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for e, k in slots
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * WORKERS, [err[-2000:] for _, err in outs if err]
    applied: Counter[str] = Counter()
    for out, _ in outs:
        doc = json.loads(out.strip().splitlines()[-1])
        applied[doc["path"]] += doc["applied"]

    tree = walk(chroot.zk, chroot.root)
    assert check_layout(tree) == []
    # no lost update: every slot holds its owner's last value
    lost = 0
    for e, k in slots:
        from kquotactl.core.entities import DEFAULT, Entity

        path = Entity(**{n: (DEFAULT if v is None else v) for n, v in e.items()}).path
        stored = json.loads(tree["/config/" + path])["config"]
        if k not in stored or float(stored[k]) != float(ROUNDS):
            lost += 1
    COUNTS.checked_updates += sum(applied.values())
    COUNTS.lost_updates += lost
    assert lost == 0
    # every applied change notified exactly once, none extra
    assert notification_counts(tree) == applied
    # no empty litter: a pair's parents exist because pairs hold keys
    assert tree["/config/users/shared/clients"] == b""


# -- apply racing with a manual alter -------------------------------------------------------------------------


def test_a_manual_alter_landing_between_applys_read_and_its_commit_is_not_overwritten(chroot, tmp_path) -> None:
    """The narrowest window: apply planned, read the live entity and built its compare-and-set; a manual
    alter lands before the commit. The CAS fails, the entity is re-read, no longer matches what the plan
    saw, and is rejected as a stale plan; every other entity is applied, and a re-run (new plan) converges."""
    import threading

    from conftest import run_cli
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend

    manifest = tmp_path / "q.yaml"
    manifest.write_text(
        "quotas:\n"
        + "".join(f"- {{entity: {{user: u{i}}}, config: {{producer_byte_rate: {1000 + i}}}}}\n" for i in range(50))
    )
    zk = ("--zookeeper", chroot.connect)
    assert run_cli(*zk, "alter", "--user", "u7", "--add-config", "producer_byte_rate=1").exit_code == 0
    real = ZooKeeperBackend._plan_round
    fired = threading.Event()

    def plan_then_race(self, pending, expected, results):
        plans = real(self, pending, expected, results)
        if not fired.is_set() and expected is not None:
            fired.set()
            r = run_cli(*zk, "alter", "--user", "u7", "--add-config", "producer_byte_rate=777")
            assert r.exit_code == 0, r.stderr
        return plans

    ZooKeeperBackend._plan_round = plan_then_race  # type: ignore[method-assign]
    try:
        r = run_cli(*zk, "-o", "json", "apply", "-f", str(manifest), "--yes")
    finally:
        ZooKeeperBackend._plan_round = real  # type: ignore[method-assign]
    assert fired.is_set()
    assert r.exit_code == 1, r.stdout
    assert "not applied (user=u7)" in r.stderr
    [u7] = [x for x in json.loads(r.stdout)["results"] if x["entity"] == {"user": "u7"}]
    assert u7["outcome"] == "rejected" and "stale plan" in u7["message"]
    tree = walk(chroot.zk, chroot.root)
    assert json.loads(tree["/config/users/u7"])["config"] == {"producer_byte_rate": "777"}  # not overwritten
    for i in range(50):
        if i != 7:
            assert json.loads(tree[f"/config/users/u{i}"])["config"] == {"producer_byte_rate": str(1000 + i)}
    COUNTS.checked_updates += 51
    # a new plan sees the manual change and applies over it knowingly
    r = run_cli(*zk, "apply", "-f", str(manifest), "--yes")
    assert r.exit_code == 0, r.stderr
    assert run_cli(*zk, "plan", "-f", str(manifest)).exit_code == 0


def test_sixteen_cli_processes_altering_one_entity_keep_every_key(chroot) -> None:
    """The real console entry point, 16 at once, each setting a different key of the same entity through a
    different spelling (user/client-id pair, flat kafka-configs form): the CAS loop keeps all of them."""
    entity = ["--entity-type", "users", "--entity-name", "race", "--entity-type", "clients", "--entity-name", "app"]
    keys = ["producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = []
    for i in range(WORKERS):
        key = keys[i % len(keys)]
        value = 1000 * (i // len(keys) + 1)  # later processes write bigger values: order is not checked
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "kquotactl", "--zookeeper", chroot.connect, "--alter", *entity,
                 "--add-config", f"{key}={value}"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            )
        )  # fmt: skip
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * WORKERS, [e for _, e in outs if e]
    tree = walk(chroot.zk, chroot.root)
    stored = json.loads(tree["/config/users/race/clients/app"])["config"]
    assert sorted(stored) == sorted(keys)  # no key lost
    notes = notification_counts(tree)
    changed = sum(1 for out, _ in outs if "Completed updating config" in out)
    assert notes == {"users/race/clients/app": changed}
    COUNTS.checked_updates += WORKERS
