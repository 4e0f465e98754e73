"""A session-scoped local SparkSession for the impact tests (UI off, few shuffle partitions, quick-start JVM), and
a real standalone cluster (a master and two workers in their own JVMs) for the ``spark-submit`` tests.

Tests that use either are marked ``spark``; each is started once per test session and stopped at the end.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: a JVM that starts fast on a small, shared machine: one GC thread, the quick JIT only
QUICK_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.driver.extraJavaOptions": QUICK_JVM,
    "spark.sql.adaptive.enabled": "true",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kquotactl.impact.spark import session

    s = session("local[2]", TEST_CONF)
    yield s
    s.stop()


# -- a real standalone cluster: a master and two workers, each in its own JVM -----------------------------


@dataclass(frozen=True)
class StandaloneCluster:
    """A running standalone cluster: its ``spark://`` URL, the environment to ``spark-submit`` with, and each
    worker's work directory (an application's executors write ``<work>/<app id>/<executor id>/stderr``)."""

    master_url: str
    env: dict[str, str]
    work_dirs: tuple[Path, ...]

    def submit(self, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``spark-submit`` to this cluster: one 1-core executor per worker, started before any task runs."""
        conf = {
            "spark.executor.memory": "512m",
            "spark.executor.cores": "1",
            "spark.cores.max": str(len(self.work_dirs)),
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",  # both executors up before the first task
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "60s",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.extraJavaOptions": QUICK_JVM,
            "spark.executor.extraJavaOptions": QUICK_JVM,
        }
        confs = [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]
        return subprocess.run(
            [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url, *confs, *args],
            capture_output=True, text=True, env=self.env, cwd=cwd, timeout=timeout,
        )  # fmt: skip

    def tasks_per_worker(self, submit_log: str) -> list[int]:
        """How many tasks each worker's executors ran for the application ``submit_log`` (spark-submit's
        stderr) names: counted in the executors' own logs, which only a worker writes."""
        found = re.search(r"app ID (app-[0-9-]+)", submit_log)
        assert found, f"no application id in spark-submit's log:\n{submit_log[-3000:]}"
        return [
            sum(p.read_text(errors="replace").count("Running task ") for p in (d / found[1]).glob("*/stderr"))
            for d in self.work_dirs
        ]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _wait_for_log(path: Path, needle: str, proc: subprocess.Popen[bytes], deadline_s: float) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if needle in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    raise AssertionError(f"{needle!r} not in {path.name}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A Spark standalone master and two workers (1 core, 1 GiB each) on 127.0.0.1, started with
    ``spark-class`` as docs/impact.md describes; shared by the ``spark-submit`` tests."""
    from kquotactl.testing.servers import free_port

    d = tmp_path_factory.mktemp("spark-cluster")
    home = spark_home()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM,
    }
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    klass = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, args: list[str], ready: str) -> None:
        log = d / f"{name}.log"
        out = log.open("w")
        proc = subprocess.Popen([klass, *args], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        procs.append(proc)
        _wait_for_log(log, ready, procs[-1], 90)

    try:
        master = "org.apache.spark.deploy.master.Master"
        start("master", [master, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())],
              "I have been elected leader")  # fmt: skip
        work_dirs = tuple(d / f"work-{i}" for i in (1, 2))
        for i, work in enumerate(work_dirs, 1):
            start(
                f"worker-{i}",
                ["org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(work)],
                "Successfully registered with master",
            )  # fmt: skip
        yield StandaloneCluster(master_url, env, work_dirs)
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, 15)
                p.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, 9)
