"""`spark-submit` of the impact job to a real standalone Spark cluster (a master and a worker in their own JVMs).

The documented cluster path: the package as a zip for ``--py-files`` and ``scripts/impact_job.py`` as the
application; the executors run in the worker's JVM, not the driver's. The report must equal the local engine's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kquotactl.impact.package import write_zip
from kquotactl.testing.servers import free_port

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _wait_for_log(path: Path, needle: str, proc: subprocess.Popen, deadline_s: float) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if needle in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    raise AssertionError(f"{needle!r} not in {path.name}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory) -> Iterator[tuple[str, dict[str, str]]]:
    """A Spark standalone master and one worker (1 core, 1 GiB) on 127.0.0.1."""
    d = tmp_path_factory.mktemp("spark-cluster")
    home = _spark_home()
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    klass = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen] = []
    try:
        master_log = d / "master.log"
        master = subprocess.Popen(
            [klass, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(free_port())],
            stdout=master_log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
        procs.append(master)
        _wait_for_log(master_log, "I have been elected leader", master, 90)
        worker_log = d / "worker.log"
        worker = subprocess.Popen(
            [klass, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1", "--cores", "1",
             "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(d / "work")],
            stdout=worker_log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
        procs.append(worker)
        _wait_for_log(worker_log, "Successfully registered with master", worker, 90)
        yield master_url, env
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, 15)
                p.wait(20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(p.pid, 9)


def test_spark_submit_to_a_standalone_cluster_gives_the_local_engines_report(standalone_cluster, tmp_path) -> None:
    from conftest import run_cli

    master_url, env = standalone_cluster
    traffic, quotas = tmp_path / "t.parquet", tmp_path / "q.yaml"
    r = run_cli(
        "impact", "generate", str(traffic), "--rows", "20000", "--users", "100", "--clients", "400", "--rate", "4000",
        "--quotas-out", str(quotas),
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    local = run_cli("-o", "json", "impact", "run", str(traffic), "-f", str(quotas), "--engine", "local")
    assert local.exit_code == 0, local.stderr

    package = write_zip(tmp_path / "kquotactl.zip")  # what `make impact-zip` builds
    where = subprocess.run(
        [sys.executable, "-c", "import kquotactl.cli.app; print(kquotactl.__file__)"],
        capture_output=True, text=True, env={**env, "PYTHONPATH": str(package)}, check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(package))  # the driver imports the package from the zip, ahead of any install
    submit = subprocess.run(
        [str(_spark_home() / "bin" / "spark-submit"), "--master", master_url, "--conf", "spark.executor.memory=512m",
         "--conf", "spark.sql.shuffle.partitions=2", "--py-files", str(package),
         str(ROOT / "scripts" / "impact_job.py"), str(traffic), "-f", str(quotas), "-o", "json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=400,
    )  # fmt: skip
    assert submit.returncode == 0, submit.stdout[-2000:] + submit.stderr[-3000:]
    assert "Granted executor ID" in submit.stderr  # ran on the worker's executor, not in a local[*] driver
    got, want = json.loads(submit.stdout), json.loads(local.stdout)
    assert got["summary"].pop("engine") == "spark" and want["summary"].pop("engine") == "local"
    assert got == want
    assert want["summary"]["throttled_quota_ids"] > 0
