"""How many DescribeClientQuotas requests each broker receives from ``apply --verify`` and a staged apply
(``apply --stages``) of 10,000 entities on a real 3-broker KRaft cluster (the newest release the harness runs),
counted by the brokers themselves: ``kafka.network:type=RequestMetrics,name=RequestsPerSec,request=*`` (its
``Count``), read through the JMX exporter agent attached to each broker, before and after each command.

kquotactl is given broker 1 only (``--bootstrap-server``), so the apply's own reads (the current state before
writing, then read-your-writes until broker 1 shows them) land on broker 1; the checks ask every broker by id.
Measured in turn, each a CLI in a fresh process: a plain ``apply`` (its own describes), an ``apply --verify``,
and ``apply --stages S --interval 0s``; each changes every entity's values. The checks' describes per broker are
those of brokers 2 and 3 as counted (only the checks ask them); broker 1 also answers the apply's own reads (compare
the plain apply) and the staged apply's read of the live values before each stage. The target: at most one
describe per broker per check round, one round when the brokers have applied the stage by the time it is checked.

``BENCH_STAGED_N`` (default 10,000) and ``BENCH_STAGED_STAGES`` (default 3) set the sizes; ``BENCH_STAGED_SRC``
runs the CLI from another source tree (``.../src``) for a before/after. Figures are printed, never asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from bench.manifest_apply import desired
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.keys import Number
from kquotactl.manifests.export import dump_manifest_yaml, export_document
from kquotactl.testing.kafka import KRaftCluster
from kquotactl.testing.observe import jmx_agent_opts
from kquotactl.testing.servers import free_port
from kquotactl.testing.versions import NEWEST

N = int(os.environ.get("BENCH_STAGED_N", "10000"))
STAGES = int(os.environ.get("BENCH_STAGED_STAGES", "3"))
SRC = os.environ.get("BENCH_STAGED_SRC", str(Path(__file__).resolve().parent.parent / "src"))
REQUESTS = ("DescribeClientQuotas", "AlterClientQuotas", "Metadata")

#: the JMX exporter agent's rules: the brokers' request counters, nothing else
RULES = """includeObjectNames: ["kafka.network:type=RequestMetrics,name=RequestsPerSec,*"]
rules:
  - pattern: 'kafka.network<type=RequestMetrics, name=RequestsPerSec, request=(\\w+), version=(\\d+)><>Count'
    name: bench_requests
    type: GAUGE
    labels:
      request: "$1"
      version: "$2"
"""


def counts(ports: list[int]) -> list[Counter[str]]:
    """Each broker's requests received so far, by API (every version summed), from its exporter."""
    import requests
    from prometheus_client.parser import text_string_to_metric_families

    out = []
    for port in ports:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
        seen: Counter[str] = Counter()
        for family in text_string_to_metric_families(text):
            if family.name == "bench_requests":
                for s in family.samples:
                    seen[s.labels["request"]] += int(s.value)
        out.append(seen)
    return out


def write(state: dict[Entity, dict[str, Number]], path: Path) -> str:
    path.write_text(dump_manifest_yaml(export_document([QuotaRecord(e, c) for e, c in state.items()])))
    return str(path)


def scaled(state: dict[Entity, dict[str, int]], divisor: int) -> dict[Entity, dict[str, Number]]:
    return {e: {k: max(1, v // divisor) for k, v in c.items()} for e, c in state.items()}


def kq(*args: str) -> float:
    """Wall seconds of ``python -m kquotactl ARGS`` (the CLI from ``SRC``, a fresh process); exit 0 or raise."""
    env = {**os.environ, "PYTHONPATH": SRC}
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "kquotactl", *args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"kquotactl {' '.join(args[2:6])}... exited {p.returncode}: {p.stderr[-2000:]}")
    return time.perf_counter() - t


def delta(before: list[Counter[str]], after: list[Counter[str]], api: str) -> list[int]:
    return [a[api] - b[api] for b, a in zip(before, after, strict=True)]


def main() -> None:
    base = desired(N)
    ports = [free_port() for _ in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.yaml"
        rules.write_text(RULES)
        manifests = {d: write(scaled(base, d), Path(tmp) / f"q{d}.yaml") for d in (1, 2, 3, 64)}
        cluster = KRaftCluster(node_jvm_opts=[jmx_agent_opts(p, rules) for p in ports])
        cluster.start()
        try:
            bs = ["--bootstrap-server", cluster.nodes[0].bootstrap, "--timeout", "120"]
            print(f"Kafka {NEWEST}, 3 KRaft nodes (broker+controller each), {N:,} entities; CLI from {SRC}")
            kq(*bs, "apply", "-f", manifests[1], "--yes")
            time.sleep(2)  # every broker applies the metadata
            rows = []
            for label, args in (
                ("apply (plain: its own describes)", ["apply", "-f", manifests[2], "--yes"]),
                ("apply --verify", ["apply", "-f", manifests[3], "--yes", "--verify"]),
                (
                    f"apply --stages {STAGES} --interval 0s",
                    ["apply", "-f", manifests[64], "--yes", "--stages", str(STAGES), "--interval", "0s"],
                ),
            ):
                before = counts(ports)
                took = kq(*bs, *args)
                after = counts(ports)
                rows.append((label, took, {api: delta(before, after, api) for api in REQUESTS}))
            print(f"{'command':<40} {'wall':>8}  DescribeClientQuotas per broker 1/2/3, AlterClientQuotas, Metadata")
            for label, took, d in rows:
                desc = "/".join(map(str, d["DescribeClientQuotas"]))
                alters, metadata = sum(d["AlterClientQuotas"]), sum(d["Metadata"])
                print(f"{label:<40} {took:6.1f} s  {desc:>16}   {alters:>4}   {metadata:>5}")
            verify = rows[1][2]["DescribeClientQuotas"]
            staged = rows[2][2]["DescribeClientQuotas"]
            per_stage = f"{staged[1] / STAGES:.2f}/{staged[2] / STAGES:.2f}"
            print(
                "checks' describes on brokers 2 and 3 (only the checks ask them): apply --verify "
                f"{verify[1]}/{verify[2]}, staged {staged[1]}/{staged[2]} = {per_stage} per stage; broker 1 also "
                "answers the apply's own reads and the staged apply's read before each stage"
            )
        finally:
            cluster.close()


if __name__ == "__main__":
    main()
