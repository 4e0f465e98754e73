"""``make demo``: the paths an operator takes in 2026, each against a throw-away server on 127.0.0.1.

1. A Kafka 4.4 KRaft broker through ``--bootstrap-server`` (the admin API: since Kafka 4.0 there is no ZooKeeper),
   with Kafka's own kafka-configs (``org.apache.kafka.tools.ConfigCommand``) reading what kquotactl wrote.
2. ZooKeeper, for the clusters still in ZooKeeper mode (Kafka ≤ 3.9): the znodes and change notifications brokers
   read.

Each step runs the real console command in a subprocess and shows it, so what you see is exactly what
you would type.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time

from kquotactl.testing.servers import ZooKeeperServer

KRAFT_STEPS: list[tuple[str, list[str]]] = [
    (
        "Give user alice 10 MiB/s of produce and 50% request time",
        ["alter", "--user", "alice", "--add-config", "producer_byte_rate=10MiB,request_percentage=50"],
    ),
    (
        "A default for every client-id of alice's, and for every other user",
        ["alter", "--user", "alice", "--client-defaults", "--add-config", "consumer_byte_rate=2MiB"],
    ),
    ("", ["alter", "--user-defaults", "--add-config", "producer_byte_rate=512KiB"]),
    (
        "An unset variable is never a target: an empty name is refused",
        ["alter", "--user", "", "--add-config", "producer_byte_rate=1MiB"],
    ),
    ("Everything, as a table", ["describe", "-o", "table"]),
    (
        "Which quota applies to a connection, and from which of Kafka's levels",
        ["explain", "--user", "alice", "--client-id", "billing", "-o", "table"],
    ),
]

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


def _run(title: str, args: list[str], env: dict[str, str]) -> bool:
    """Show and run one step; True when it behaved as its title says (refusals are expected to fail)."""
    if title:
        print(f"# {title}")
    print("$ kquotactl " + " ".join(shlex.quote(a) for a in args), flush=True)
    p = subprocess.run([sys.executable, "-m", "kquotactl", *args], env=env, capture_output=True, text=True)
    sys.stdout.write(p.stdout)
    sys.stdout.write(p.stderr)
    print(f"(exit {p.returncode})\n", flush=True)
    expect_fail = "refused" in title or "INVALID_REQUEST" in title
    return (p.returncode != 0) == expect_fail


def kraft_demo() -> int:
    """The admin-API path on a Kafka 4.4 KRaft broker; returns the number of steps that misbehaved."""
    from kquotactl.testing.kafka import KRaftKafkaServer
    from kquotactl.testing.versions import NEWEST, RELEASES

    release = RELEASES[NEWEST]
    print(f"Starting a throw-away Kafka {release.text} KRaft broker on 127.0.0.1 (jars from Maven Central) ...")
    t = time.monotonic()
    failures = 0
    with KRaftKafkaServer() as kafka:
        env = {**os.environ, "KQUOTACTL_BOOTSTRAP_SERVER": kafka.bootstrap, "NO_COLOR": "1", "COLUMNS": "80"}
        env.pop("KQUOTACTL_ZOOKEEPER", None)
        print(f"Kafka is up at {kafka.bootstrap} ({time.monotonic() - t:.0f} s; KQUOTACTL_BOOTSTRAP_SERVER set)\n")
        for title, args in KRAFT_STEPS:
            failures += not _run(title, args, env)
        describe = ["--bootstrap-server", kafka.bootstrap, "--describe", "--entity-type", "users"]
        print("# Kafka's own kafka-configs reads what kquotactl wrote")
        print("$ kafka-configs.sh " + " ".join(shlex.quote(a) for a in describe), flush=True)
        p = subprocess.run(kafka.java(release.config_command, *describe), capture_output=True, text=True)
        sys.stdout.write(p.stdout)
        print(f"(exit {p.returncode})\n", flush=True)
        failures += p.returncode != 0 or "producer_byte_rate=1.048576E7" not in p.stdout
    print(f"Kafka {release.text} stopped and its data removed.\n")
    return failures


def zookeeper_demo() -> int:
    """The ZooKeeper path (clusters in ZooKeeper mode); returns the number of steps that misbehaved."""
    print("Starting a throw-away ZooKeeper on 127.0.0.1 (jars from Maven Central) ...", flush=True)
    failures = 0
    with ZooKeeperServer() as zk:
        connect = zk.connect + "/kafka-demo"
        from kazoo.client import KazooClient

        admin = KazooClient(zk.connect)
        admin.start(timeout=30)
        admin.ensure_path("/kafka-demo/brokers/ids")  # as a broker would have registered
        env = {**os.environ, "KQUOTACTL_ZOOKEEPER": connect, "NO_COLOR": "1", "COLUMNS": "80"}
        env.pop("KQUOTACTL_BOOTSTRAP_SERVER", None)
        print(f"ZooKeeper is up at {zk.connect}; using chroot /kafka-demo (KQUOTACTL_ZOOKEEPER={connect})\n")
        for title, args in STEPS:
            failures += not _run(title, args, env)
        changes = sorted(admin.get_children("/kafka-demo/config/changes"))
        print(f"# What brokers see: {len(changes)} change notifications, e.g.")
        for c in changes[:3]:
            print(f"  /config/changes/{c}: {admin.get('/kafka-demo/config/changes/' + c)[0].decode()}")
        print("# and the entity node they point brokers to:")
        print(f"  /config/users/alice: {admin.get('/kafka-demo/config/users/alice')[0].decode()}")
        admin.stop()
        admin.close()
    print("\nZooKeeper stopped and its data removed.")
    return failures


def main() -> int:
    print("== 1. Kafka 4.x (KRaft): the admin API through --bootstrap-server ==\n")
    failures = kraft_demo()
    print("== 2. ZooKeeper-mode clusters (Kafka 3.9 and older): --zookeeper ==\n")
    failures += zookeeper_demo()
    if failures:
        print(f"{failures} step(s) misbehaved!")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
