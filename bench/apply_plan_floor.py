"""``apply`` into an empty chroot and an in-sync ``plan``, each against its raw kazoo floor measured in the same run.

For each size (``BENCH_SIZES``, default ``10000,100000`` entities; the manifest of :mod:`bench.manifest_apply`):

1. apply: ``python -m kquotactl --zookeeper ZK/chrootN apply -f m.yaml --yes`` (a subprocess: start-up, YAML,
   validation, describe, plan, batched compare-and-set transactions) vs the floor: raw kazoo reads the entity
   paths (pipelined), then creates the same znodes and one notification each in ~1,000-op multis
   (:func:`bench.manifest_apply.kazoo_floor`), each into a fresh chroot;
2. in-sync plan: ``plan -f m.yaml`` against the applied chroot (exit 0, nothing to change) vs the floor: raw kazoo
   discovers and reads the same state, pipelined (list the three roots, get every user, list the clients of users
   that have children, get every pair, client and ip).

Median of ``BENCH_RUNS`` (default 3) runs each; the ratio is CLI / floor, both from this run, then each run's own
ratio to the floor run just before it. Wall time and CPU time
(user + system of the CLI process from ``wait4``, including start-up; of this process's threads for the floor, kazoo's
included) are both reported: on a machine shared with other work the wall times of both sides stretch with the
ZooKeeper server's share of the cores, the CPU times much less. Peak RSS (``ru_maxrss``) of each CLI process is
reported. Figures are printed, never asserted.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.manifest_apply import desired, kazoo_floor, write_manifest
from kquotactl.testing.servers import ZooKeeperServer

SIZES = [int(x) for x in os.environ.get("BENCH_SIZES", "10000,100000").split(",")]
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def cli(args: list[str], expect: int = 0) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of ``python -m kquotactl ARGS`` (this checkout's code)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kquotactl", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    err = proc.stderr.read().decode() if proc.stderr else ""
    if code != expect:
        raise RuntimeError(f"kquotactl {' '.join(args[:4])}... exited {code}: {err[-2000:]}")
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def cpu_and_wall(fn: Any, *args: Any) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds (all threads) of ``fn(*args)``."""
    c = time.process_time()
    wall = fn(*args)
    return wall, time.process_time() - c


def read_floor(client: Any, root: str) -> float:
    """Raw kazoo, pipelined: everything an in-sync plan must read to know the quota state."""
    from kazoo.exceptions import NoNodeError

    def gets(paths: list[str], call: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for start in range(0, len(paths), 5000):
            pending = [(p, call(p)) for p in paths[start : start + 5000]]
            for p, ar in pending:
                try:
                    out[p] = ar.get(timeout=60)
                except NoNodeError:
                    out[p] = None
        return out

    t = time.perf_counter()
    base = f"{root}/config"
    roots = gets([f"{base}/users", f"{base}/clients", f"{base}/ips"], client.get_children_async)
    users = gets([f"{base}/users/{u}" for u in roots[f"{base}/users"]], client.get_async)
    with_pairs = [p for p, r in users.items() if r is not None and r[1].numChildren]
    lists = gets([p + "/clients" for p in with_pairs], client.get_children_async)
    gets([f"{p}/{c}" for p, kids in lists.items() for c in kids or []], client.get_async)
    gets([f"{base}/clients/{c}" for c in roots[f"{base}/clients"]], client.get_async)
    gets([f"{base}/ips/{c}" for c in roots[f"{base}/ips"]], client.get_async)
    return time.perf_counter() - t


class Runs:
    """Wall and CPU seconds (and peak RSS) of repeated runs; medians."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.rss: list[float] = []

    def add(self, wall: float, cpu: float, rss: float | None = None) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)
        if rss is not None:
            self.rss.append(rss)

    def line(self, floor: Runs | None = None) -> str:
        w, c = statistics.median(self.wall), statistics.median(self.cpu)
        if floor is None:
            return f"{w:7.2f} s        {c:7.2f} s"
        fw, fc = statistics.median(floor.wall), statistics.median(floor.cpu)
        per_run = " ".join(
            f"{a / b:.2f}/{x / y:.2f}" for a, b, x, y in zip(self.wall, floor.wall, self.cpu, floor.cpu, strict=True)
        )
        return (
            f"{w:7.2f} s {w / fw:4.2f}x {c:7.2f} s {c / fc:4.2f}x  peak RSS {max(self.rss):.0f} MiB\n"
            f"      each run against the floor run before it, wall/cpu: {per_run}"
        )


def main() -> None:
    from kazoo.client import KazooClient

    with tempfile.TemporaryDirectory() as tmp, ZooKeeperServer(heap="1g") as zk:
        admin = KazooClient(zk.connect, timeout=30)
        admin.start()
        print(f"python {sys.version.split()[0]}, median of {RUNS} runs, CLI = python -m kquotactl (subprocess)")
        for n in SIZES:
            state = desired(n)
            manifest = Path(tmp) / f"quotas-{n}.yaml"
            write_manifest(state, manifest)
            floor, apply, plan_floor, plan = Runs(), Runs(), Runs(), Runs()
            for i in range(RUNS):
                for root in (f"/f{n}-{i}", f"/a{n}-{i}"):
                    admin.ensure_path(root + "/brokers/ids")  # a chroot brokers use
                floor.add(*cpu_and_wall(kazoo_floor, admin, f"/f{n}-{i}", state))
                apply.add(*cli(["--zookeeper", f"{zk.connect}/a{n}-{i}", "apply", "-f", str(manifest), "--yes"]))
            for _ in range(RUNS):
                plan_floor.add(*cpu_and_wall(read_floor, admin, f"/a{n}-0"))
                plan.add(*cli(["--zookeeper", f"{zk.connect}/a{n}-0", "plan", "-f", str(manifest)]))
            print(f"{n} entities (manifest {manifest.stat().st_size // 1024} KiB):          wall            cpu")
            print(f"  apply floor (raw kazoo: read paths, ~1000-op multis) {floor.line()}")
            print(f"  kquotactl apply -f --yes (empty chroot)              {apply.line(floor)}")
            print(f"  plan floor (raw kazoo: list + get, pipelined)        {plan_floor.line()}")
            print(f"  kquotactl plan -f (in sync, exit 0)                  {plan.line(plan_floor)}")
        admin.stop()
        admin.close()


if __name__ == "__main__":
    main()
