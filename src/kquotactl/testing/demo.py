"""``make demo``: a throw-away ZooKeeper on 127.0.0.1, a few real kquotactl calls, then clean up.

Each step runs the real console command in a subprocess and shows it, so what you see is exactly what
you would type.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from kquotactl.testing.servers import ZooKeeperServer

STEPS: list[tuple[str, list[str]]] = [
    (
        "Give user alice 10 MiB/s of produce and 50% request time",
        ["alter", "--user", "alice", "--add-config", "producer_byte_rate=10MiB,request_percentage=50"],
    ),
    (
        "A tighter limit for alice's batch job (a (user, client-id) pair)",
        ["alter", "--user", "alice", "--client-id", "batch job", "--add-config", "producer_byte_rate=1MiB"],
    ),
    (
        "Defaults for every other user",
        ["alter", "--user-defaults", "--add-config", "producer_byte_rate=512KiB,consumer_byte_rate=1MiB"],
    ),
    (
        "Limit new connections from one address",
        ["alter", "--ip", "192.0.2.10", "--add-config", "connection_creation_rate=20"],
    ),
    (
        "Mistakes are refused before anything is written",
        ["alter", "--user", "alice", "--add-config", "producer_byte_rat=5"],
    ),
    (
        "An ip cannot be combined with a user (Kafka: INVALID_REQUEST)",
        ["alter", "--ip", "192.0.2.10", "--user", "alice", "--add-config", "connection_creation_rate=5"],
    ),
    ("Everything, as a table", ["describe", "-o", "table"]),
    ("One entity, as JSON", ["describe", "--user", "alice", "--client-id", "batch job", "-o", "json"]),
    (
        "kafka-configs' flat form and output, for existing scripts",
        [
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--delete-config",
            "request_percentage",
        ],
    ),
    ("", ["--describe", "--entity-type", "users"]),
]


def main() -> int:
    print("Starting a throw-away ZooKeeper on 127.0.0.1 (jars from Maven Central) ...", flush=True)
    failures = 0
    with ZooKeeperServer() as zk:
        connect = zk.connect + "/kafka-demo"
        from kazoo.client import KazooClient

        admin = KazooClient(zk.connect)
        admin.start(timeout=30)
        admin.ensure_path("/kafka-demo/brokers/ids")  # as a broker would have registered
        env = {**os.environ, "KQUOTACTL_ZOOKEEPER": connect, "NO_COLOR": "1"}
        print(f"ZooKeeper is up at {zk.connect}; using chroot /kafka-demo (KQUOTACTL_ZOOKEEPER={connect})\n")
        for title, args in STEPS:
            if title:
                print(f"# {title}")
            print("$ kquotactl " + " ".join(shlex.quote(a) for a in args), flush=True)
            p = subprocess.run([sys.executable, "-m", "kquotactl", *args], env=env, capture_output=True, text=True)
            sys.stdout.write(p.stdout)
            sys.stdout.write(p.stderr)
            print(f"(exit {p.returncode})\n", flush=True)
            expect_fail = "refused" in title or "INVALID_REQUEST" in title
            if (p.returncode != 0) != expect_fail:
                failures += 1
        changes = sorted(admin.get_children("/kafka-demo/config/changes"))
        print(f"# What brokers see: {len(changes)} change notifications, e.g.")
        for c in changes[:3]:
            print(f"  /config/changes/{c}: {admin.get('/kafka-demo/config/changes/' + c)[0].decode()}")
        print("# and the entity node they point brokers to:")
        print(f"  /config/users/alice: {admin.get('/kafka-demo/config/users/alice')[0].decode()}")
        admin.stop()
        admin.close()
    print("\nZooKeeper stopped and its data removed." + (f" {failures} step(s) misbehaved!" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
