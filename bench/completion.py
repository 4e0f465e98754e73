"""Latency of one completion request (what each Tab costs): static completions (commands, --add-config keys,
--entity-type) against `python -c pass`, and live completions (user names, keys set on an entity) against a
local ZooKeeper holding BENCH_USERS users (default 1,000). Median wall time of 15 runs each; target for static
completion: under 150 ms (feels instant)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import KQUOTACTL, row, time_command
from kquotactl.testing.servers import ZooKeeperServer

USERS = int(os.environ.get("BENCH_USERS", "1000"))


def bash_env(line: str) -> dict[str, str]:
    """What the bash script sends: the raw line up to the cursor and readline's word (here: after the last blank)."""
    word = line.rsplit(" ", 1)[-1]
    proto = {"KQUOTACTL_COMP_LINE": line, "KQUOTACTL_COMP_WORD": word, "_KQUOTACTL_COMPLETE": "bash_complete"}
    return {**os.environ, **proto}


def main() -> None:
    py = sys.executable
    print("median wall time of one completion request, 15 runs each (2 warm-up):")
    base = time_command([py, "-c", "pass"])
    print(row("python -c pass", base))
    static = {
        "kquotactl <Tab> (commands)": "kquotactl ",
        "alter --ip 192.0.2.1 --add-config <Tab>": "kquotactl alter --ip 192.0.2.1 --add-config ",
        "describe --entity-type <Tab>": "kquotactl describe --entity-type ",
        "alter --<Tab> (option names)": "kquotactl alter --",
    }
    for label, line in static.items():
        print(row(f"static: {label}", time_command([KQUOTACTL], env=bash_env(line))))
    print(row("kquotactl completion bash (print the script)", time_command([KQUOTACTL, "completion", "bash"])))

    with ZooKeeperServer() as zk:
        from kazoo.client import KazooClient

        admin = KazooClient(zk.connect)
        admin.start()
        admin.ensure_path("/bench/config/users")
        tx = admin.transaction()
        for i in range(USERS):
            tx.create(f"/bench/config/users/user-{i:05d}", b'{"version":1,"config":{"producer_byte_rate":"1048576"}}')
            if i % 500 == 499:
                tx.commit()
                tx = admin.transaction()
        tx.commit()
        admin.stop()
        conn = zk.connect + "/bench"
        live = {
            f"--user <Tab> ({USERS} users in ZooKeeper)": f"kquotactl --zookeeper {conn} describe --user ",
            f"--user user-0099<Tab> ({USERS} users)": f"kquotactl --zookeeper {conn} describe --user user-0099",
            "alter --user user-00001 --delete-config <Tab>": (
                f"kquotactl --zookeeper {conn} alter --user user-00001 --delete-config "
            ),
        }
        for label, line in live.items():
            print(row(f"live: {label}", time_command([KQUOTACTL], env=bash_env(line))))
        out = subprocess.run([KQUOTACTL], env=bash_env(live[next(iter(live))]), capture_output=True, text=True)
        print(f"  (live --user offered {len(out.stdout.splitlines())} names, capped at 500)")
    dead = "kquotactl --zookeeper 127.0.0.1:9 describe --user "
    print(row("live, unreachable cluster (silent, 1 s timeout)", time_command([KQUOTACTL], runs=3, env=bash_env(dead))))


if __name__ == "__main__":
    main()
