"""Shared fixtures: a real ZooKeeper (session-scoped) and a fresh chroot per test.

The server comes from Maven Central jars run with the machine's Java (``kquotactl.testing``); nothing is
mocked. Each test gets its own chroot, so tests never see each other's znodes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

from kquotactl.testing.servers import ZooKeeperServer

# Property tests are reproducible by default: a fixed seed per test and no per-example deadline (a loaded CI
# machine must not turn a slow example into a failure). The long fuzz mode (KQUOTACTL_FUZZ_EXAMPLES) explores.
settings.register_profile("reproducible", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile("explore" if os.environ.get("KQUOTACTL_FUZZ_EXAMPLES") else "reproducible")

# Fixture modules beside this file (``fixtures_kafka.py``, ``fixtures_spark.py``...) are plugins: each
# feature area keeps its servers and helpers in its own file.
pytest_plugins = sorted(p.stem for p in Path(__file__).parent.glob("fixtures_*.py"))


@pytest.fixture(scope="session")
def zk_server() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer()
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def zk_admin(zk_server: ZooKeeperServer):
    from kazoo.client import KazooClient

    client = KazooClient(zk_server.connect)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@dataclass
class Chroot:
    """A throw-away chroot: ``connect`` for kquotactl, ``zk``/``root`` to inspect what it wrote."""

    connect: str
    root: str
    zk: object

    def get(self, path: str) -> bytes:
        return self.zk.get(self.root + path)[0]

    def exists(self, path: str) -> bool:
        return self.zk.exists(self.root + path) is not None

    def children(self, path: str) -> list[str]:
        return sorted(self.zk.get_children(self.root + path))

    def notifications(self) -> list[bytes]:
        if not self.exists("/config/changes"):
            return []
        return [self.get("/config/changes/" + c) for c in self.children("/config/changes")]

    def store_foreign(self, path: str, config: dict[str, str]) -> None:
        """Write an entity znode as some other tool would (no kquotactl check): e.g. a ``request_rate`` key."""
        import json

        full = self.root + path
        data = json.dumps({"version": 1, "config": config}).encode()
        if self.zk.exists(full) is None:
            self.zk.create(full, data, makepath=True)
        else:
            self.zk.set(full, data)

    def snapshot(self) -> dict[str, bytes]:
        """Every znode under the chroot with its data (to prove that nothing was written)."""
        out: dict[str, bytes] = {}

        def walk(p: str) -> None:
            full = self.root + p
            data, _ = self.zk.get(full)
            out[p or "/"] = data
            for c in self.zk.get_children(full):
                walk(f"{p}/{c}")

        walk("")
        return out


@pytest.fixture
def chroot(zk_server: ZooKeeperServer, zk_admin) -> Iterator[Chroot]:
    root = f"/t-{uuid.uuid4().hex[:12]}"
    zk_admin.ensure_path(root + "/brokers/ids")  # what a broker registers: kquotactl refuses to write without it
    yield Chroot(connect=f"{zk_server.connect}{root}", root=root, zk=zk_admin)
    zk_admin.delete(root, recursive=True)


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def run_cli(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    """Run the CLI in-process (fast) through the same ``main`` as the console script."""
    from kquotactl.cli.app import main

    runner = CliRunner()
    result = runner.invoke(_MainShim(main), list(args), env=env, input=input, catch_exceptions=False)
    return Result(result.exit_code, result.stdout, result.stderr)


def zk_cli(chroot: Chroot, *args: str, input: str | None = None) -> Result:
    """``kquotactl --zookeeper <chroot> ARGS``."""
    return run_cli("--zookeeper", chroot.connect, *args, input=input)


def write_manifest(tmp_path: Path, text: str, name: str = "quotas.yaml") -> str:
    """Write ``text`` (dedented) to ``tmp_path/name``; its path."""
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


class _MainShim:
    """Lets CliRunner drive ``kquotactl.cli.app.main`` (argv normalisation and error mapping included)."""

    def __init__(self, main):
        self._main = main
        self.name = "kquotactl"

    def main(self, args, prog_name=None, **extra):
        self._main(args, prog_name="kquotactl")


def run_subprocess(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Result:
    """Run the real console entry point in a subprocess (start-up, signals, exit codes)."""
    full_env = {**os.environ, **(env or {})}
    p = subprocess.run(
        [sys.executable, "-m", "kquotactl", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )
    return Result(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def cli():
    return run_cli
