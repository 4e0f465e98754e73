"""Apply 1,000 and 10,000 entity changes through the admin API (KIP-546): kquotactl's batched alter (one
AlterClientQuotas request per 2,000 entities, current state read with one describe) vs one request per
entity over the same connection (what a kafka-configs loop does, minus its JVM start-ups), on a KRaft broker
(Kafka 4.x) and, with BENCH_ZK_BROKER=1, a ZooKeeper-mode broker (Kafka 3.9).

One request per entity for 10,000 entities takes minutes on a 2-core box; it is measured on the first
BENCH_PER_ENTITY_SAMPLE (default 1,000) entities and scaled, and labelled so. BENCH_PER_ENTITY_FULL=1
measures all of them.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kquotactl.backends.kafka.quotas import AdminBackend, entity_to_wire
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import Entity
from kquotactl.testing.kafka import KRaftKafkaServer, ZkKafkaServer

SIZES = [int(x) for x in os.environ.get("BENCH_SIZES", "1000,10000").split(",")]
SAMPLE = int(os.environ.get("BENCH_PER_ENTITY_SAMPLE", "1000"))
FULL = os.environ.get("BENCH_PER_ENTITY_FULL") == "1"


def changes(n: int, value: int) -> list[EntityChange]:
    """A mix: 60% users, 25% (user, client-id) pairs, 15% client-ids."""
    out = []
    for i in range(n):
        m = i % 20
        if m < 12:
            e = Entity(user=f"svc-{i}")
        elif m < 17:
            e = Entity(user=f"svc-{i - 12}", client_id=f"app-{i}")
        else:
            e = Entity(client_id=f"client-{i}")
        out.append(EntityChange(e, {"producer_byte_rate": value + i, "consumer_byte_rate": 2 * value + i}))
    return out


def wipe(b: AdminBackend) -> None:
    recs = b.describe()
    if recs:
        b.alter([EntityChange(r.entity, remove=frozenset(r.config)) for r in recs])
        wait_count(b, 0)


def wait_count(b: AdminBackend, n: int, limit: float = 60.0) -> float:
    """KRaft brokers apply the controller's metadata asynchronously: wait until describe shows ``n`` entities."""
    t = time.perf_counter()
    while len(b.describe()) != n:
        if time.perf_counter() - t > limit:
            raise AssertionError(f"describe did not reach {n} entities in {limit}s")
        time.sleep(0.05)
    return time.perf_counter() - t


def run(label: str, bootstrap: str) -> None:
    print(f"{label} ({bootstrap}):")
    with AdminBackend.connect(bootstrap, timeout=120) as b:
        b.wait_visible = False  # measure the writes; visibility is measured separately below
        wipe(b)
        for n in SIZES:
            t = time.perf_counter()
            results = b.alter(changes(n, 1000))
            batched = time.perf_counter() - t
            assert all(r.outcome.value == "applied" for r in results), {r.outcome for r in results}
            visible = wait_count(b, n)
            t = time.perf_counter()
            b.alter(changes(n, 5000))  # an update of every entity: describe + batched alter
            update = time.perf_counter() - t
            wipe(b)
            m = n if FULL else min(n, SAMPLE)
            todo = changes(m, 1000)
            t = time.perf_counter()
            for ch in todo:
                ops = [(k, float(v), False) for k, v in ch.set.items()]
                [o] = b.wire.alter([(entity_to_wire(ch.entity), ops)], False)
                assert o.error_code == 0, o
            per_entity = (time.perf_counter() - t) * n / m
            wipe(b)
            scaled = "" if m == n else f" (measured on {m}, scaled)"
            print(
                f"  {n:>6} entities, 2 keys each: batched create {batched:7.2f} s (+{visible:.2f} s until describe "
                f"shows all), batched update {update:7.2f} s"
            )
            print(
                f"  {'':>6}                    one request per entity {per_entity:7.2f} s{scaled}"
                f"  -> batched is {per_entity / batched:.0f}x faster"
            )


def main() -> None:
    with KRaftKafkaServer() as kraft:
        run("KRaft broker, Kafka 4.4 (combined broker+controller)", kraft.bootstrap)
    if os.environ.get("BENCH_ZK_BROKER") == "1":
        from kquotactl.testing.servers import ZooKeeperServer

        with ZooKeeperServer(heap="512m") as zk, ZkKafkaServer(zookeeper=zk.connect + "/bench") as broker:
            run("ZooKeeper-mode broker, Kafka 3.9", broker.bootstrap)


if __name__ == "__main__":
    main()
