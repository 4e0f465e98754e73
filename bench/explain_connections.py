"""`explain --connections` of 100,000 connections against a 10,000-entity quota set: the whole CLI against a
local ZooKeeper (JSON lines to /dev/null), and in process (resolver alone; resolver + JSON contract + encoding).

Sizes: BENCH_CONNECTIONS (default 100000), BENCH_ENTITIES (default 10000).
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import KQUOTACTL
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.explain import Connection, LineEncoder, ThrottleModel, explain_json
from kquotactl.core.precedence import QuotaIndex
from kquotactl.render.explain import json_lines

N_CONN = int(os.environ.get("BENCH_CONNECTIONS", "100000"))
N_ENT = int(os.environ.get("BENCH_ENTITIES", "10000"))


def quota_set(n: int) -> list[EntityChange]:
    """Users, pairs, client-ids and ips with defaults at every level, so every level gets hits."""
    out: dict[Entity, dict] = {
        Entity(user=DEFAULT): {"producer_byte_rate": 1048576},
        Entity(client_id=DEFAULT): {"consumer_byte_rate": 2097152},
        Entity(user=DEFAULT, client_id=DEFAULT): {"request_percentage": 50.0},
        Entity(ip=DEFAULT): {"connection_creation_rate": 20},
    }
    i = 0
    while len(out) < n:
        m = i % 20
        if m < 10:
            out[Entity(user=f"svc-{i}")] = {"producer_byte_rate": 1000 + i}
        elif m < 14:
            out[Entity(user=f"svc-{i - 10}", client_id=f"app-{i % 120}")] = {"consumer_byte_rate": 5000 + i}
        elif m < 16:
            out[Entity(user=f"svc-{i - 12}", client_id=DEFAULT)] = {"request_percentage": 10.0 + m}
        elif m < 19:
            out[Entity(client_id=f"app-{i % 120}")] = {"controller_mutation_rate": 5.0}
        else:
            out[Entity(ip=f"10.0.{(i >> 8) & 255}.{i & 255}")] = {"connection_creation_rate": 5}
        i += 1
    return [EntityChange(e, cfg) for e, cfg in out.items()]


def connections(n: int, n_ent: int) -> list[Connection]:
    rnd = random.Random(42)
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.1:
            out.append(Connection(None, None, f"10.0.{rnd.randrange(256)}.{rnd.randrange(256)}"))
        else:
            out.append(Connection(f"svc-{rnd.randrange(n_ent)}", f"app-{rnd.randrange(150)}", None))
    return out


def csv_text(conns: list[Connection]) -> str:
    lines = ["user,client-id,ip"]
    for c in conns:
        lines.append(f"{c.user or ''},{c.client_id or ''},{c.ip or ''}")
    return "\n".join(lines) + "\n"


def main() -> None:
    changes = quota_set(N_ENT)
    conns = connections(N_CONN, N_ENT)
    index = QuotaIndex({c.entity: dict(c.set) for c in changes})
    print(f"{N_CONN} connections against {len(index)} quota entities")

    print(f"  {'':<56} {'wall':>14} {'CPU time':>14}")

    def resolve_only() -> None:
        for c in conns:
            if c.user is not None:
                index.resolve_all(c.user, c.client_id or "")
            else:
                index.resolve_all_ip(c.ip or "")

    obs = ThrottleModel({"producer_byte_rate": 2e6})
    enc, enc_obs = LineEncoder(index), LineEncoder(index, obs)
    for label, fn in (
        ("in-process resolver only (Resolution objects)", resolve_only),
        (
            "in-process explain_json dicts + json encoding",
            lambda: json_lines((explain_json(index, c) for c in conns), io.StringIO()),
        ),
        ("in-process LineEncoder (what the CLI runs)", lambda: json_lines(map(enc.line, conns), io.StringIO())),
        ("in-process LineEncoder with --observed", lambda: json_lines(map(enc_obs.line, conns), io.StringIO())),
    ):
        w, cpu = time.perf_counter(), time.process_time()
        fn()
        w, cpu = time.perf_counter() - w, time.process_time() - cpu
        print(f"  {label:<56} {N_CONN / w:9,.0f} c/s {N_CONN / cpu:9,.0f} c/s")

    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.testing.servers import ZooKeeperServer

    with ZooKeeperServer(heap="512m") as zk, tempfile.TemporaryDirectory() as tmp:
        from kazoo.client import KazooClient

        admin = KazooClient(zk.connect)
        admin.start()
        admin.ensure_path("/bench/brokers/ids")  # a chroot brokers use
        admin.stop()
        conn = zk.connect + "/bench"
        backend = ZooKeeperBackend(ZkSettings(connect=conn))
        backend.alter(changes)
        backend.close()
        f = Path(tmp) / "conns.csv"
        f.write_text(csv_text(conns))
        one = Path(tmp) / "one.csv"
        one.write_text(csv_text(conns[:1]))
        manifest = Path(tmp) / "quotas.yaml"
        manifest.write_text(manifest_text(changes))
        for label, group, source in (
            ("CLI -o json, live ZooKeeper (10k entities read)", ["--zookeeper", conn], []),
            ("CLI -o json, offline -f manifest (10k entries)", [], ["-f", str(manifest)]),
        ):
            fixed_w, fixed_cpu = run(
                [KQUOTACTL, *group, "explain", *source, "--connections", str(one), "-o", "json"], 1
            )
            w, cpu = run([KQUOTACTL, *group, "explain", *source, "--connections", str(f), "-o", "json"], N_CONN)
            print(f"  {label:<56} {N_CONN / w:9,.0f} c/s {N_CONN / cpu:9,.0f} c/s  (whole run: {w:.1f} s wall)")
            print(
                f"  {'  the same after start-up and loading (' + format(fixed_w, '.1f') + ' s wall)':<56} "
                f"{N_CONN / (w - fixed_w):9,.0f} c/s {N_CONN / (cpu - fixed_cpu):9,.0f} c/s"
            )


def run(cmd: list[str], expect_lines: int) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, of the child) of one CLI run, its output going to a file."""
    import resource

    with tempfile.TemporaryFile() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, check=True)
        dt = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: out.read(1 << 20), b""))
    assert lines == expect_lines, (lines, p.stderr[-500:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dt, cpu


def manifest_text(changes: list[EntityChange]) -> str:
    import json

    def name(n: object) -> str:
        return "<default>" if n is DEFAULT else str(n)

    lines = ["quotas:"]
    for c in changes:
        ent = ", ".join(f"{k}: {json.dumps(name(v))}" for k, v in c.entity.components().items())
        cfg = ", ".join(f"{k}: {v}" for k, v in c.set.items())
        lines.append(f"  - entity: {{{ent}}}\n    config: {{{cfg}}}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
