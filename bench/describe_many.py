"""`describe` of 10,000 entities against local ZooKeeper: the whole CLI (subprocess, JSON and table output)
and the backend alone (async reads in windows of 1,000)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import KQUOTACTL, row, time_call, time_command
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.testing.servers import ZooKeeperServer

N = int(os.environ.get("BENCH_ENTITIES", "10000"))


def entities(n: int) -> list[EntityChange]:
    """A realistic mix: 50% users, 30% (user, client-id) pairs, 15% client-ids, 5% ips, plus defaults."""
    out = [
        EntityChange(Entity(user=DEFAULT), {"producer_byte_rate": 1048576}),
        EntityChange(Entity(client_id=DEFAULT), {"consumer_byte_rate": 2097152}),
    ]
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
        key = "connection_creation_rate" if e.ip is not None else "producer_byte_rate"
        out.append(EntityChange(e, {key: 1000 + i}))
        i += 1
    return out


def main() -> None:
    with ZooKeeperServer(heap="512m") as zk:
        from kazoo.client import KazooClient

        admin = KazooClient(zk.connect)
        admin.start()
        admin.ensure_path("/bench/brokers/ids")  # a chroot brokers use
        admin.stop()
        conn = zk.connect + "/bench"
        backend = ZooKeeperBackend(ZkSettings(connect=conn))
        import time

        t = time.perf_counter()
        backend.alter(entities(N))
        print(f"loaded {N} entities in {time.perf_counter() - t:.2f}s (one alter call, batched transactions)")
        recs = backend.describe()
        assert len(recs) == N, len(recs)
        print(f"median wall time for describe of {N} entities:")
        print(row("backend.describe() in-process (5 runs)", time_call(backend.describe)))
        backend.close()
        cmd = [KQUOTACTL, "--zookeeper", conn, "describe"]
        print(
            row("kquotactl describe -o json > /dev/null (5 runs)", time_command([*cmd, "-o", "json"], runs=5, warmup=1))
        )
        print(
            row(
                "kquotactl describe -o kafka > /dev/null (5 runs)",
                time_command([*cmd, "-o", "kafka"], runs=5, warmup=1),
            )
        )
        print(
            row(
                "kquotactl describe -o table > /dev/null (5 runs)",
                time_command([*cmd, "-o", "table"], runs=5, warmup=1),
            )
        )


if __name__ == "__main__":
    main()
