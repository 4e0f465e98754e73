"""Start-up cost: `kquotactl --help` and a one-entity `describe` against local ZooKeeper, next to the bare
imports of click and of click+kazoo+rich, all in the same run (median wall time of 15 runs each)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import KQUOTACTL, row, time_command
from kquotactl.testing.servers import ZooKeeperServer


def main() -> None:
    py = sys.executable
    with ZooKeeperServer() as zk:
        from kazoo.client import KazooClient

        admin = KazooClient(zk.connect)
        admin.start()
        admin.ensure_path("/bench/brokers/ids")  # a chroot brokers use: kquotactl writes only there
        admin.stop()
        conn = zk.connect + "/bench"
        import subprocess

        subprocess.run(
            [KQUOTACTL, "--zookeeper", conn, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1048576"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        base = time_command([py, "-c", "pass"])
        print("median wall time, 15 runs each (2 warm-up):")
        print(row("python -c pass", base))
        click_t = time_command([py, "-c", "import click"])
        print(row("python -c 'import click'", click_t))
        print(
            row(
                "python -c 'import click, kazoo.client, rich'",
                time_command([py, "-c", "import click, kazoo.client, rich"]),
            )
        )
        print(row("kquotactl --help", time_command([KQUOTACTL, "--help"]), click_t))
        describe = [KQUOTACTL, "--zookeeper", conn, "describe", "--user", "alice"]
        print(
            row(
                "kquotactl describe --user alice -o json (local ZooKeeper)",
                time_command([*describe, "-o", "json"]),
                click_t,
            )
        )
        print(
            row(
                "kquotactl describe --user alice -o table (local ZooKeeper)",
                time_command([*describe, "-o", "table"]),
                click_t,
            )
        )
    print("(ratios are against `import click`)")


if __name__ == "__main__":
    main()
