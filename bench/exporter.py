"""`kquotactl exporter`: a scrape of /metrics and its memory at 100,000 quota entities and 100,000 active quota-ids
(one broker: a usage and a throttle sample each), against the floor of the same series held by a static
prometheus_client registry (a labelled Gauge child per series), each in a fresh process; then the cost of one
refresh after a single change through the ZooKeeper watch, against a real ZooKeeper holding N entities.

Sizes: BENCH_EXPORTER_IDS (default 100000), BENCH_EXPORTER_ZK (default "1000,10000,100000").
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import row, time_call
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.observe.throttled import Sample

N = int(os.environ.get("BENCH_EXPORTER_IDS", "100000"))
ZK_SIZES = [int(x) for x in os.environ.get("BENCH_EXPORTER_ZK", "1000,10000,100000").split(",") if x]
MODE = "BENCH_EXPORTER_MODE"
ROUNDS = 15  # single changes a size


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def inputs() -> tuple[list[QuotaRecord], list[Sample]]:
    records = [
        QuotaRecord(
            Entity(user=f"u{i}", client_id=f"c{i}") if i % 2 else Entity(client_id=f"c{i}"),
            {"producer_byte_rate": 1000 + i},
        )
        for i in range(N)
    ]
    samples = []
    for i in range(N):
        u = f"u{i}" if i % 2 else ""
        samples.append(Sample("byte_rate", "b1:7071", 1500.0, "Produce", user=u, client_id=f"c{i}"))
        samples.append(Sample("throttle_time", "b1:7071", float(i % 7), "Produce", user=u, client_id=f"c{i}"))
    return records, samples


def child(mode: str) -> None:
    """One side in its own process: build, scrape 3 times; print the figures as JSON."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    from kquotactl.observe.exposition import FAMILIES, build
    from kquotactl.services.exporter import Exporter

    records, samples = inputs()
    gc.collect()
    base = _kib("VmRSS")
    if mode == "exporter":
        ex = Exporter(lambda: None, listen=("127.0.0.1", 0))  # type: ignore[arg-type,return-value]
        ex._state.records = {r.entity: r for r in records}
        ex._state.samples = {"b1:7071": samples}
        ex.rebuild()
        registry = ex.registry
        for c in list(registry._collector_to_names):  # the quota series only: as the floor holds
            if type(c).__name__ != "_Collector":
                registry.unregister(c)
    else:
        from kquotactl.core.precedence import QuotaIndex

        exp = build(records, QuotaIndex(records), samples)
        registry = CollectorRegistry()
        for name, (text, labels) in FAMILIES.items():
            gauge = Gauge(name, text, labels, registry=registry)
            for values, value in exp.families[name]:
                gauge.labels(*values).set(value)
        del exp
    del records, samples
    gc.collect()
    held = _kib("VmRSS") - base
    size = len(generate_latest(registry))
    scrape = time_call(lambda: generate_latest(registry), runs=3, warmup=0)
    print(json.dumps({"held_kib": held, "peak_kib": _kib("VmHWM") - base, "scrape_s": scrape, "bytes": size}))


def run_child(mode: str) -> dict:
    env = {**os.environ, MODE: mode}
    out = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def refresh_after_one_change(n: int) -> tuple[float, float, float, float]:
    """Seconds from an alter's return to the change patched into the exporter's quotas (the refresh), of which
    the exporter's own handling; to the change in the snapshot /metrics serves; and a snapshot rebuild alone;
    against a fresh ZooKeeper chroot holding ``n`` entities, its change notifications purged as brokers do after
    15 minutes (Kafka's ZkNodeChangeNotificationListener lists /config/changes on every change, and so does the
    watch: that listing follows the changes of the last 15 minutes, not the entities)."""
    from kazoo.client import KazooClient

    from kquotactl.backends.base import WatchedChange
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.changes import EntityChange
    from kquotactl.services.exporter import Exporter

    root = f"/bench-exporter-{n}"
    admin = KazooClient(ZK.connect)
    admin.start(timeout=30)
    admin.ensure_path(root + "/brokers/ids")
    admin.stop()
    admin.close()
    assert ZK is not None
    settings = ZkSettings(connect=ZK.connect + root, op_timeout=60)
    writer = ZooKeeperBackend(settings)
    changes = [EntityChange(Entity(client_id=f"c{i}"), {"producer_byte_rate": 1000 + i}) for i in range(n)]
    writer.alter(changes)
    admin = KazooClient(ZK.connect + root)
    admin.start(timeout=30)
    for child in admin.get_children("/config/changes"):
        admin.delete_async("/config/changes/" + child)
    admin.sync("/config/changes")
    while admin.get_children("/config/changes"):
        time.sleep(0.1)
    admin.stop()
    admin.close()
    started: list[float] = []  # when the watch handed a change to the exporter
    patched: list[float] = []  # when the exporter had it patched in and asked for a rebuild

    class Marked(threading.Event):
        def set(self) -> None:
            patched.append(time.perf_counter())  # taken before the rebuild thread wakes (and takes the GIL)
            super().set()

    class Timed(Exporter):
        def _watched(self, change: WatchedChange) -> None:
            if change.records or change.removed:
                started.append(time.perf_counter())
            super()._watched(change)

    ex = Timed(lambda: ZooKeeperBackend(settings), listen=("127.0.0.1", 0), refresh=3600)
    ex._dirty = Marked()
    ex.start()
    try:
        while not ex.ready or ex.snapshot_generation < 1:
            time.sleep(0.05)
        lags, handled, served = [], [], []
        for k in range(ROUNDS):
            seen, gen = len(started), ex._state.generation
            writer.alter([EntityChange(Entity(client_id=f"c{k}"), {"producer_byte_rate": 7 + k})])
            t = time.perf_counter()
            while ex.snapshot_generation <= gen:  # in the snapshot /metrics serves
                time.sleep(0.001)
            served.append(time.perf_counter() - t)
            assert len(started) == seen + 1
            lags.append(patched[-1] - t)
            handled.append(patched[-1] - started[-1])
            time.sleep(0.2)

        def rebuild() -> None:
            ex._state.index_generation = -1
            ex.rebuild()

        return median(lags), median(handled), median(served), time_call(rebuild, runs=3)
    finally:
        ex.stop()
        writer.close()


def main() -> None:
    ours, floor = run_child("exporter"), run_child("static")
    print(f"exporter: {N} entities, {N} active quota-ids x 1 broker ({ours['bytes'] / 2**20:.0f} MiB of exposition)")
    print(row("floor: static registry, one Gauge child per series: scrape", floor["scrape_s"]))
    print(row("exporter: custom collector over the snapshot: scrape", ours["scrape_s"], floor["scrape_s"]))
    for label, key in (("memory held after the build", "held_kib"), ("peak memory (VmHWM)", "peak_kib")):
        print(
            f"  {label:<40} floor {floor[key] / 1024:7.0f} MiB, exporter {ours[key] / 1024:7.0f} MiB "
            f"({ours[key] / floor[key]:.2f}x)"
        )
    from kquotactl.testing.servers import ZooKeeperServer

    global ZK
    with ZooKeeperServer(heap="1g") as ZK:
        print(f"one change through the ZooKeeper watch (median of {ROUNDS})")
        for n in ZK_SIZES:
            lag, handled, served, rebuild = refresh_after_one_change(n)
            print(
                f"  N={n:>7}: refresh (alter -> patched in) {lag * 1000:6.1f} ms, of which handling "
                f"{handled * 1000:5.2f} ms; -> in /metrics' snapshot {served * 1000:7.1f} ms "
                f"(a rebuild alone: {rebuild * 1000:.0f} ms)"
            )


ZK: Any = None

if __name__ == "__main__":
    if os.environ.get(MODE):
        child(os.environ[MODE])
    else:
        main()
