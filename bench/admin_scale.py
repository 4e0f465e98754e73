"""100,000 entities through the admin API on a KRaft broker (the newest release the harness runs), each step done
by the kquotactl CLI in a fresh process against a raw floor measured in the same run:

1. ``apply -f m.yaml --yes`` into an empty cluster vs the floor: one DescribeClientQuotas of everything (what
   apply reads first), the same AlterClientQuotas requests batched by the same bounds (:func:`chunks`, 5,000 ops /
   2,000 entries), then DescribeClientQuotas until the broker shows every entity (apply's read-your-writes);
2. an in-sync ``plan -f m.yaml`` (exit 0) vs the floor: one DescribeClientQuotas of everything, decoded (the floor
   issue 30 names); and vs a second, fairer one: that describe plus the manifest's bytes read and parsed by libyaml's
   C event parser alone (``yaml.parse`` with ``CSafeLoader``: the events, nothing built from them), which a plan
   cannot do without;
3. ``describe -o json`` of everything vs the same floor.

The floor drives kafka-python (the library kquotactl's wire client wraps) directly, in this process: its network
selector and connection manager, the generated request messages, no kquotactl code on the way. Wall and CPU seconds
(the CLI's from ``wait4``, start-up included; this process's threads for the floor) and the CLI's peak RSS; the
broker's Java heap (``jcmd GC.heap_info``: used, then live after a full GC) before and after. Runs alternate floor
and CLI (``BENCH_ADMIN_RUNS``, default 1); between apply runs everything is removed again (raw requests).

``BENCH_ADMIN_N`` (default 100,000) sets the entity count; ``BENCH_ADMIN_HEAP`` the broker's -Xmx (default
1 GiB: the harness's 384 MiB runs out at 100,000). The manifest is :func:`bench.manifest_apply.desired`'s: users,
(user, client-id) pairs, client-ids with two byte-rate keys, ips with the connection-rate key. Figures are printed,
never asserted. Runs from a fresh clone: the harness fetches the Kafka jars from Maven Central as the tests do.

The floors run in this process, which holds the 100,000 entities' desired state and requests: they are frozen out
of the cycle collector (``gc.freeze``) once built, so that a floor's collections walk what the floor made, not the
bench's own data (they did before 2026-11-29: up to 0.5 s of a 1.7 s describe floor).
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from bench.apply_plan_floor import Runs, cli
from bench.manifest_apply import desired, write_manifest
from kquotactl.backends.kafka.quotas import MAX_ENTRIES_PER_REQUEST, MAX_OPS_PER_REQUEST, chunks, entity_to_wire
from kquotactl.testing.kafka import KRaftKafkaServer
from kquotactl.testing.versions import NEWEST

N = int(os.environ.get("BENCH_ADMIN_N", "100000"))
RUNS = int(os.environ.get("BENCH_ADMIN_RUNS", "1"))
#: the broker's heap: the harness's 384 MiB (a third of it the log cleaner's 128 MiB dedupe buffer) ran out of memory
#: at 100,000 entities (GC thrash from the 30th alter on; DescribeClientQuotas then UNKNOWN_SERVER_ERROR)
HEAP = os.environ.get("BENCH_ADMIN_HEAP", "-Xmx1g")
TIMEOUT = 300.0  # seconds, every request of either side

Entry = tuple[list[tuple[str, str | None]], list[tuple[str, float, bool]]]


class RawAdmin:
    """kafka-python's network layer driven directly: one connection to the bootstrap broker, requests sent and
    awaited in turn (what kquotactl's ``QuotaWire`` does, without it)."""

    def __init__(self, bootstrap: str) -> None:
        from kafka.admin.client import KafkaAdminClient
        from kafka.net.manager import KafkaConnectionManager
        from kafka.net.selector import NetworkSelector

        cfg = dict(KafkaAdminClient.DEFAULT_CONFIG)
        cfg.update(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000), metrics=None)
        self.net = NetworkSelector(**cfg)
        self.manager = KafkaConnectionManager(self.net, **cfg)
        self.net.start()

        async def connect() -> Any:
            node = self.manager.cluster.bootstrap_brokers()[0]
            conn = self.manager.get_connection(node.node_id, timeout_ms=10_000, refresh_metadata_on_err=False)
            await self.manager.wait_for(conn.init_future, 10_000)
            return conn

        self.conn = self.manager.run(connect)

    def send(self, request: Any) -> Any:
        async def go() -> Any:
            fut = self.conn.send_request(request, request_timeout_ms=int(TIMEOUT * 1000))
            return await self.manager.wait_for(fut, int(TIMEOUT * 1000) + 1000)

        return self.manager.run(go)

    def describe_all(self) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        """DescribeClientQuotas of every entity (no components, not strict), decoded to {entity: {key: value}}."""
        from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest

        resp = self.send(DescribeClientQuotasRequest(components=[], strict=False))
        assert not resp.error_code, resp
        return {
            tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
            for entry in resp.entries or []
        }

    def alter(self, entries: list[Entry]) -> None:
        from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest

        E = AlterClientQuotasRequest.EntryData
        req = AlterClientQuotasRequest(
            entries=[
                E(
                    entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                    ops=[E.OpData(key=k, value=v, remove=r) for k, v, r in ops],
                )
                for entity, ops in entries
            ],
            validate_only=False,
        )
        resp = self.send(req)
        bad = [e for e in resp.entries if e.error_code]
        assert not bad, f"{len(bad)} entries refused: {bad[0]}"

    def close(self) -> None:
        self.manager.close()
        self.net.stop(timeout_ms=2000)


def alter_batched(raw: RawAdmin, entries: list[Entry]) -> int:
    """The entries in requests bounded as kquotactl bounds them; the number of requests."""
    batches = list(chunks(entries, lambda e: e[1], MAX_ENTRIES_PER_REQUEST, MAX_OPS_PER_REQUEST))
    for batch in batches:
        raw.alter(batch)
    return len(batches)


def wait_count(raw: RawAdmin, n: int, limit: float = TIMEOUT) -> None:
    """DescribeClientQuotas until the broker shows ``n`` entities (it applies committed records asynchronously)."""
    deadline = time.monotonic() + limit
    while len(raw.describe_all()) != n:
        if time.monotonic() > deadline:
            raise AssertionError(f"the broker did not describe {n} entities within {limit:g} s")
        time.sleep(0.02)


def apply_floor(raw: RawAdmin, entries: list[Entry]) -> float:
    t = time.perf_counter()
    raw.describe_all()
    alter_batched(raw, entries)
    wait_count(raw, len(entries))
    return time.perf_counter() - t


def describe_floor(raw: RawAdmin) -> float:
    t = time.perf_counter()
    raw.describe_all()
    return time.perf_counter() - t


def plan_parse_floor(raw: RawAdmin, manifest: Path) -> float:
    """The describe floor plus the manifest read and parsed by libyaml's C event parser: every event made, none
    used (no nodes, no validation)."""
    import yaml

    t = time.perf_counter()
    for _ in yaml.parse(manifest.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
        pass
    raw.describe_all()
    return time.perf_counter() - t


def wipe(raw: RawAdmin) -> None:
    found = raw.describe_all()
    alter_batched(raw, [(list(e), [(k, 0.0, True) for k in values]) for e, values in found.items()])
    wait_count(raw, 0)


def heap(pid: int, gc_first: bool = False) -> str:
    """The broker JVM's heap in use (MiB, every generation), ``jcmd GC.heap_info``; after a full GC if asked."""
    if gc_first:
        subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, check=True)
    out = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, check=True).stdout
    used = sum(int(k) for k in re.findall(r"generation\s+total \d+K, used (\d+)K", out))
    total = sum(int(k) for k in re.findall(r"generation\s+total (\d+)K", out))
    return f"{used / 1024:.0f} MiB used of {total / 1024:.0f} MiB"


def heap_line(pid: int) -> str:
    return f"{heap(pid)}; live after a full GC {heap(pid, gc_first=True)}"


def main() -> None:
    state = desired(N)
    entries: list[Entry] = [
        (entity_to_wire(e), [(k, float(v), False) for k, v in config.items()]) for e, config in state.items()
    ]
    records = sum(len(ops) for _, ops in entries)
    gc.collect()
    gc.freeze()  # the bench's own data, out of the floors' collections (see the module docstring)
    with tempfile.TemporaryDirectory() as tmp, KRaftKafkaServer(jvm_opts=[HEAP]) as kafka:
        manifest = Path(tmp) / "quotas.yaml"
        write_manifest(state, manifest)
        pid = kafka._proc.pid if kafka._proc else 0
        bs = ["--bootstrap-server", kafka.bootstrap, "--timeout", f"{TIMEOUT:g}"]
        raw = RawAdmin(kafka.bootstrap)
        n_requests = len(list(chunks(entries, lambda e: e[1], MAX_ENTRIES_PER_REQUEST, MAX_OPS_PER_REQUEST)))
        print(
            f"Kafka {NEWEST} KRaft broker (combined broker+controller, {HEAP}), python "
            f"{sys.version.split()[0]}: {N:,} entities, {records:,} records, {n_requests} AlterClientQuotas "
            f"requests; manifest {manifest.stat().st_size // 1024:,} KiB; median of {RUNS} run(s); "
            "CLI = python -m kquotactl in a fresh process"
        )
        print(f"broker heap at start: {heap_line(pid)}")
        floor, apply, plan, describe = Runs(), Runs(), Runs(), Runs()
        for i in range(RUNS):
            if i:
                wipe(raw)
            floor.add(*cpu_and_wall(apply_floor, raw, entries))
            wipe(raw)
            apply.add(*cli([*bs, "apply", "-f", str(manifest), "--yes"]))
        print(f"broker heap after the applies: {heap_line(pid)}")
        assert len(raw.describe_all()) == N
        plan_floor, parse_floor, describe_floor_runs = Runs(), Runs(), Runs()
        for _ in range(RUNS):
            plan_floor.add(*cpu_and_wall(describe_floor, raw))
            parse_floor.add(*cpu_and_wall(plan_parse_floor, raw, manifest))
            plan.add(*cli([*bs, "plan", "-f", str(manifest)]))
            describe_floor_runs.add(*cpu_and_wall(describe_floor, raw))
            describe.add(*cli([*bs, "describe", "-o", "json"]))
        print("                                                              wall            cpu")
        print(f"  apply floor (describe, {n_requests} alters, describe until shown) {floor.line()}")
        print(f"  kquotactl apply -f --yes (empty cluster)                {apply.line(floor)}")
        print(f"  plan floor (one DescribeClientQuotas of all, decoded)    {plan_floor.line()}")
        print(f"  kquotactl plan -f (in sync, exit 0)                     {plan.line(plan_floor)}")
        print(f"  plan floor 2 (that describe + libyaml's C events of the manifest) {parse_floor.line()}")
        print(f"  kquotactl plan -f against floor 2                       {plan.line(parse_floor)}")
        print("  (issue 30 names the first plan floor: the admin client's requests alone)")
        print(f"  describe floor (the same request)                        {describe_floor_runs.line()}")
        print(f"  kquotactl describe -o json                              {describe.line(describe_floor_runs)}")
        print(f"broker heap at the end: {heap_line(pid)}")
        raw.close()


def cpu_and_wall(fn: Any, *args: Any) -> tuple[float, float]:
    """Wall seconds and this process's CPU seconds (all threads, kafka-python's I/O thread included)."""
    c = time.process_time()
    wall = fn(*args)
    return wall, time.process_time() - c


if __name__ == "__main__":
    main()
