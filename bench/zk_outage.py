"""What riding out a ZooKeeper outage costs, and what the bounded read window costs.

- a 10,000-entity alter with no fault, and with the server SIGKILLed after the 5th transaction and restarted
  after 2 s (the alter waits for the reconnect, settles the lost transaction and finishes);
- backend.describe() of 10,000 entities with the read window at 250 (the default: kazoo blocks forever past
  ~278 requests queued while disconnected), 128, 1,000 and 5,000 (what a window would cost to give up safety).

``BENCH_ENTITIES`` overrides the count.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import row, time_call
from kquotactl.backends.zookeeper import session as zkmod
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange, Outcome
from kquotactl.core.entities import Entity
from kquotactl.testing.servers import ZooKeeperServer

N = int(os.environ.get("BENCH_ENTITIES", "10000"))


def changes(value: int) -> list[EntityChange]:
    return [EntityChange(Entity(user=f"u{i}"), {"producer_byte_rate": value + i}) for i in range(N)]


def fresh_root(zk: ZooKeeperServer, name: str) -> str:
    from kazoo.client import KazooClient

    admin = KazooClient(zk.connect)
    admin.start()
    admin.ensure_path("/" + name + "/brokers/ids")  # a chroot brokers use
    admin.stop()
    admin.close()
    return f"{zk.connect}/{name}"


def main() -> None:
    with ZooKeeperServer(heap="512m") as zk:
        conn = fresh_root(zk, "plain")
        with ZooKeeperBackend(ZkSettings(connect=conn)) as b:
            t = time.perf_counter()
            b.alter(changes(1000))
            plain = time.perf_counter() - t
        print(f"{N} entities, one alter call:")
        print(row("no fault", plain))

        conn = fresh_root(zk, "outage")
        killed = threading.Event()
        done = [0]

        def progress(n: int) -> None:
            done[0] += 1
            if done[0] == 5:
                zk.kill()
                killed.set()

        def restart() -> None:
            killed.wait()
            time.sleep(2.0)
            zk.start()

        threading.Thread(target=restart, daemon=True).start()
        with ZooKeeperBackend(ZkSettings(connect=conn, op_timeout=30)) as b:
            t = time.perf_counter()
            results = b.alter(changes(1000), progress=progress)
            outage = time.perf_counter() - t
        assert all(r.outcome is Outcome.APPLIED for r in results)
        print(row("server killed after 5 transactions, back after 2 s", outage, plain))

        print(f"backend.describe() of {N} entities, median of 3, by read window:")
        with ZooKeeperBackend(ZkSettings(connect=conn)) as b:
            base = None
            for window in (128, 250, 1000, 5000):
                zkmod.READ_WINDOW = window
                s = time_call(b.describe, runs=3)
                base = base or s
                print(row(f"READ_WINDOW={window}", s, base))
            zkmod.READ_WINDOW = 250


if __name__ == "__main__":
    main()
