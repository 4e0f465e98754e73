"""``kquotactl describe`` vs Kafka's own ``kafka-configs.sh --describe`` (``ConfigCommand``, Java in kafka-tools
from 4.2, run from the same Maven jars with the same JVM flags as the broker's tools would use) against the same KRaft
broker holding BENCH_ENTITIES (default 200) user quotas: median wall time per call, and the ratio.
Both print kafka-configs' bootstrap-mode lines for ``--entity-type users``, in the same order (Java's HashMap order)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from bench._util import row, time_command
from kquotactl.backends.kafka.quotas import AdminBackend
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import Entity
from kquotactl.testing.kafka import KRaftKafkaServer
from kquotactl.testing.servers import classpath
from kquotactl.testing.versions import NEWEST, RELEASES

ROOT = Path(__file__).resolve().parent.parent
N = int(os.environ.get("BENCH_ENTITIES", "200"))
RUNS = int(os.environ.get("BENCH_RUNS", "7"))


def main() -> None:
    with KRaftKafkaServer() as kraft:
        with AdminBackend.connect(kraft.bootstrap) as b:
            b.alter([EntityChange(Entity(user=f"user-{i}"), {"producer_byte_rate": 1024 * (i + 1)}) for i in range(N)])
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        ours = [sys.executable, "-m", "kquotactl", "--bootstrap-server", kraft.bootstrap]
        ours += ["--describe", "--entity-type", "users"]
        log4j = kraft.workdir / "tools-log4j2.yaml"
        log4j.write_text("Configuration:\n  Loggers:\n    Root:\n      level: ERROR\n")
        theirs = ["java", "-Xmx256m", f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath(kraft.jars)]
        theirs += [RELEASES[NEWEST].config_command, "--bootstrap-server", kraft.bootstrap]
        theirs += ["--describe", "--entity-type", "users"]
        a = subprocess.run(ours, capture_output=True, text=True, env=env, check=True).stdout
        k = subprocess.run(theirs, capture_output=True, text=True, check=True).stdout
        # kafka-configs also lists users' SCRAM credentials (the broker has one SCRAM user): not quotas.
        quota_lines = [x for x in k.splitlines() if not x.startswith("SCRAM credential configs")]
        same = a.splitlines() == quota_lines
        print(f"{N} user quotas on a KRaft broker (Kafka 4.4); quota lines identical, in kafka-configs' order: {same}")
        if not same:
            print("  only kquotactl:", sorted(set(a.splitlines()) - set(quota_lines))[:3])
            print("  only kafka-configs:", sorted(set(quota_lines) - set(a.splitlines()))[:3])
        t_ours = time_command(ours, runs=RUNS, warmup=1, env=env)
        t_theirs = time_command(theirs, runs=RUNS, warmup=1)
        print(f"median wall time per call ({RUNS} runs each):")
        print(row("kafka-configs --describe --entity-type users (JVM)", t_theirs))
        print(row("kquotactl --describe --entity-type users", t_ours, t_theirs))
        print(f"  ratio: kquotactl is {t_theirs / t_ours:.1f}x faster")


if __name__ == "__main__":
    main()
