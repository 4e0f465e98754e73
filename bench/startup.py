"""Start-up cost: `kquotactl --help` and a one-entity `describe` (json and table) against local ZooKeeper, each
against its floor, all measured in one run.

Floors: `python -c "import click"` for `--help`; `python -c "import click, kazoo.client, rich.table"` (what any Python
ZooKeeper tool that prints a table loads) for `describe`. The commands run in turn, round after round (A B C ... A B
C ...), so a ratio is taken within one round and holds when the shared machine's speed drifts; the figures are the
min / median / max over the rounds. ``BENCH_ROUNDS`` sets the number of rounds (default 21, after 2 warm-up rounds).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kquotactl.testing.servers import ZooKeeperServer

ZK_FLOOR = "floor: python -c 'import click, kazoo.client, rich.table'"


def _env() -> dict[str, str]:
    # byte-code caching left on, as in an installed package (see bench/_util.time_command)
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - t


def rounds(commands: dict[str, list[str]], n: int, warmup: int = 2) -> dict[str, list[float]]:
    """Wall seconds of each command, ``n`` rounds of all commands in turn (after ``warmup`` rounds not counted)."""
    env = _env()
    out: dict[str, list[float]] = {label: [] for label in commands}
    for i in range(warmup + n):
        for label, cmd in commands.items():
            t = _wall(cmd, env)
            if i >= warmup:
                out[label].append(t)
    return out


def _mmm(xs: list[float], scale: float = 1.0, fmt: str = "{:7.1f}") -> str:
    return " / ".join(fmt.format(x * scale) for x in (min(xs), statistics.median(xs), max(xs)))


def main() -> None:
    py = sys.executable
    n = int(os.environ.get("BENCH_ROUNDS", "21"))
    kq = [py, "-m", "kquotactl"]
    with ZooKeeperServer() as zk:
        from kazoo.client import KazooClient

        admin = KazooClient(zk.connect)
        admin.start()
        admin.ensure_path("/bench/brokers/ids")  # a chroot brokers use: kquotactl writes only there
        admin.stop()
        admin.close()
        conn = zk.connect + "/bench"
        subprocess.run(
            [*kq, "--zookeeper", conn, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1048576"],
            check=True,
            stdout=subprocess.DEVNULL,
            env=_env(),
        )
        describe = [*kq, "--zookeeper", conn, "describe", "--user", "alice"]
        commands = {
            "python -c pass": [py, "-c", "pass"],
            "floor: python -c 'import click'": [py, "-c", "import click"],
            ZK_FLOOR: [py, "-c", "import click, kazoo.client, rich.table"],
            "python -m kquotactl --help": [*kq, "--help"],
            "python -m kquotactl describe --user alice -o json": [*describe, "-o", "json"],
            "python -m kquotactl describe --user alice -o table": [*describe, "-o", "table"],
        }
        walls = rounds(commands, n)
    floors = {
        "python -m kquotactl --help": "floor: python -c 'import click'",
        "python -m kquotactl describe --user alice -o json": ZK_FLOOR,
        "python -m kquotactl describe --user alice -o table": ZK_FLOOR,
    }
    print(f"wall ms, min / median / max of {n} rounds (all commands in turn each round; local ZooKeeper):")
    for label, xs in walls.items():
        print(f"  {label:<58} {_mmm(xs, 1000)}")
    print("ratio to its floor, round by round (min / median / max):")
    for label, floor in floors.items():
        ratios = [a / b for a, b in zip(walls[label], walls[floor], strict=True)]
        print(f"  {label:<58} {_mmm(ratios, fmt='{:.2f}x')}   (floor: {floor.removeprefix('floor: ')})")


if __name__ == "__main__":
    main()
