"""Manifest apply against local ZooKeeper, compared in the same run with the raw kazoo floor.

1. Apply a 10,000-entity manifest to an empty chroot: ``kquotactl apply -f m.yaml --yes`` (a subprocess: start-up,
   YAML, validation, describe, plan, batched compare-and-set transactions) and the same pipeline in-process,
   vs the floor: read the entity paths, then create the same znodes plus one notification each in raw kazoo
   multi-op transactions of ~1,000 ops.
2. 1% drift on that 10,000-entity cluster: ``plan`` and ``apply`` after 100 entities were changed behind the
   manifest's back, vs the floor: read all entity nodes, then write the 100 entities and notifications in one
   transaction.

``BENCH_ENTITIES`` overrides the count. Figures are printed, never asserted.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import KQUOTACTL
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.codec import encode_entity, encode_notification
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.plan import make_plan
from kquotactl.manifests.export import dump_manifest_yaml, export_document
from kquotactl.manifests.loader import load_manifests
from kquotactl.testing.servers import ZooKeeperServer

N = int(os.environ.get("BENCH_ENTITIES", "10000"))


def desired(n: int) -> dict[Entity, dict[str, int]]:
    """50% users, 30% (user, client-id) pairs, 15% client-ids, 5% ips, plus two defaults."""
    out: dict[Entity, dict[str, int]] = {
        Entity(user=DEFAULT): {"producer_byte_rate": 1048576},
        Entity(client_id=DEFAULT): {"consumer_byte_rate": 2097152},
    }
    i = 0
    while len(out) < n:
        m = i % 20
        if m < 10:
            e = Entity(user=f"svc-{i}")
        elif m < 16:
            e = Entity(user=f"svc-{i - 10}", client_id=f"app-{i}")
        elif m < 19:
            e = Entity(client_id=f"client-{i}")
        else:
            e = Entity(ip=f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}")
        if e.ip is not None:
            out[e] = {"connection_creation_rate": 10 + i % 100}
        else:
            out[e] = {"producer_byte_rate": 1000 + i, "consumer_byte_rate": 2000 + i}
        i += 1
    return out


def write_manifest(state: dict[Entity, dict[str, int]], path: Path) -> None:
    doc = export_document([QuotaRecord(e, c) for e, c in state.items()])
    path.write_text(dump_manifest_yaml({"prune": ["users/svc-*", "clients/*"], **doc}))


def kazoo_floor(client, root: str, state: dict[Entity, dict[str, int]], read_all: bool = True) -> float:
    """Raw kazoo: read every entity path (async), then entity znodes + notifications, ~1,000 ops per multi."""
    from kazoo.exceptions import NoNodeError

    from kquotactl.core.keys import KEYS, format_value

    t = time.perf_counter()
    paths = [f"{root}/config/{e.path}" for e in state]
    if read_all:
        for start in range(0, len(paths), 5000):
            pending = [client.get_async(p) for p in paths[start : start + 5000]]
            for ar in pending:
                with contextlib.suppress(NoNodeError):
                    ar.get(timeout=30)
    for p in ("/config", "/config/changes", "/config/users", "/config/clients", "/config/ips"):
        client.ensure_path(root + p)
    ops: list = []
    parents: set[str] = set()

    def flush() -> None:
        if ops:
            tx = client.transaction()
            for op in ops:
                op(tx)
            res = tx.commit()
            assert not any(isinstance(r, Exception) for r in res), res
            ops.clear()

    # users first so that pairs find their parent in an earlier (or the same) transaction
    for e in sorted(state, key=lambda e: e.client_id is not None and e.user is not None):
        data = encode_entity({k: format_value(KEYS[k], v) for k, v in state[e].items()})
        path = f"{root}/config/{e.path}"
        if e.user is not None and e.client_id is not None:
            user_path = path.rsplit("/clients/", 1)[0]
            for parent in (user_path, user_path + "/clients"):
                if parent not in parents:
                    ops.append(lambda tx, p=parent: tx.create(p, b""))
                    parents.add(parent)
        elif e.user is not None:
            parents.add(path)
        ops.append(lambda tx, p=path, d=data: tx.create(p, d))
        ops.append(
            lambda tx, e=e: tx.create(
                f"{root}/config/changes/config_change_", encode_notification(e.path), sequence=True
            )
        )
        if len(ops) >= 1000:
            flush()
    flush()
    return time.perf_counter() - t


def drift_floor(client, root: str, state: dict[Entity, dict[str, int]], drifted: list[Entity]) -> float:
    """Raw kazoo for the 1% drift: read all entity nodes, then write the drifted ones back in one multi."""
    from kquotactl.core.keys import KEYS, format_value

    t = time.perf_counter()
    paths = [f"{root}/config/{e.path}" for e in state]
    stats = {}
    for start in range(0, len(paths), 5000):
        pending = [(p, client.get_async(p)) for p in paths[start : start + 5000]]
        for p, ar in pending:
            stats[p] = ar.get(timeout=30)[1]
    tx = client.transaction()
    for e in drifted:
        p = f"{root}/config/{e.path}"
        tx.set_data(
            p, encode_entity({k: format_value(KEYS[k], v) for k, v in state[e].items()}), version=stats[p].version
        )
        tx.create(f"{root}/config/changes/config_change_", encode_notification(e.path), sequence=True)
    res = tx.commit()
    assert not any(isinstance(r, Exception) for r in res), res
    return time.perf_counter() - t


def run(cmd: list[str], expect: tuple[int, ...] = (0,)) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t
    if p.returncode not in expect:
        raise RuntimeError(f"{' '.join(cmd[:6])}... exited {p.returncode}: {p.stderr[-2000:]}")
    return took


def drift(client, root: str, entities: list[Entity]) -> None:
    """Change 1% of the entities behind the manifest's back (raw writes, like another tool would)."""
    for e in entities:
        client.set(f"{root}/config/{e.path}", encode_entity({"producer_byte_rate": "7"}))


def main() -> None:
    from kazoo.client import KazooClient

    state = desired(N)
    with tempfile.TemporaryDirectory() as tmp, ZooKeeperServer(heap="512m") as zk:
        manifest = Path(tmp) / "quotas.yaml"
        write_manifest(state, manifest)
        print(
            f"{N} entities: {sum(len(c) for c in state.values())} keys, manifest {manifest.stat().st_size // 1024} KiB"
        )
        admin = KazooClient(zk.connect)
        admin.start()
        for root in ("/floor", "/cli", "/inproc", "/floor2"):
            admin.ensure_path(root + "/brokers/ids")  # a chroot brokers use

        floor = kazoo_floor(admin, "/floor", state)
        print(f"  raw kazoo floor (read {N} paths, {N} entities + {N} notifications, ~1000-op multis) {floor:8.2f} s")

        cli = run([KQUOTACTL, "--zookeeper", zk.connect + "/cli", "apply", "-f", str(manifest), "--yes"])
        print(
            f"  kquotactl apply -f (subprocess, empty chroot)                          {cli:8.2f} s"
            f"  ({cli / floor:.2f}x floor)"
        )

        t = time.perf_counter()
        m = load_manifests([str(manifest)])
        t_load = time.perf_counter() - t
        with ZooKeeperBackend(ZkSettings(connect=zk.connect + "/inproc", op_timeout=60)) as b:
            t1 = time.perf_counter()
            plan = make_plan(m, b.describe(), prune=True)
            t_plan = time.perf_counter() - t1
            t2 = time.perf_counter()
            results = b.alter(plan.changes(), expected=plan.expected())
            t_alter = time.perf_counter() - t2
        assert len(results) == N
        inproc = t_load + t_plan + t_alter
        print(
            f"  in-process: load {t_load:.2f} s + describe/plan {t_plan:.2f} s + alter {t_alter:.2f} s"
            f" = {inproc:.2f} s  ({inproc / floor:.2f}x floor)"
        )

        # 1% drift on the 10,000-entity cluster applied by the CLI
        drifted = [e for e in state if e.ip is None][::100][: max(1, N // 100)]
        drift(admin, "/cli", drifted)
        plan_t = run([KQUOTACTL, "--zookeeper", zk.connect + "/cli", "plan", "-f", str(manifest), "--prune"], (2,))
        apply_t = run([KQUOTACTL, "--zookeeper", zk.connect + "/cli", "apply", "-f", str(manifest), "--prune", "--yes"])
        noop_t = run([KQUOTACTL, "--zookeeper", zk.connect + "/cli", "plan", "-f", str(manifest), "--prune"], (0,))
        kazoo_floor(admin, "/floor2", state, read_all=False)
        drift(admin, "/floor2", drifted)
        dfloor = drift_floor(admin, "/floor2", state, drifted)
        print(f"  1% drift ({len(drifted)} entities changed) on {N}:")
        print(
            f"    raw kazoo floor (read {N} nodes, write {len(drifted)} + notifications in one multi) {dfloor:8.2f} s"
        )
        print(
            f"    kquotactl plan --prune (exit 2)                                      {plan_t:8.2f} s"
            f"  ({plan_t / dfloor:.2f}x floor)"
        )
        print(
            f"    kquotactl apply --prune --yes                                        {apply_t:8.2f} s"
            f"  ({apply_t / dfloor:.2f}x floor)"
        )
        print(f"    kquotactl plan --prune after apply (in sync, exit 0)                 {noop_t:8.2f} s")
        admin.stop()
        admin.close()


if __name__ == "__main__":
    main()
