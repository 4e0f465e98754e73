"""`spark-submit` of ``kquotactl recommend`` to a real standalone Spark cluster: a master and two workers, each in
its own JVM on 127.0.0.1, the package zip (``make impact-zip``) as ``--py-files`` and ``scripts/recommend_job.py``
as the application. The executors on both workers must have run tasks, and the JSON report (limits,
distributions, replay) must equal the local engine's on the same random traffic (seed printed in every failure;
set it with ``KQUOTACTL_FUZZ_SEED``)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from fixtures_spark import StandaloneCluster
from kquotactl.impact.package import write_zip
from recommend_cases import random_request_logs, random_traffic

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What ``make impact-zip`` builds."""
    return write_zip(tmp_path_factory.mktemp("zip") / "kquotactl.zip")


def on_both(
    cluster: StandaloneCluster, package: Path, cwd: Path, args: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``-o json`` report of ``recommend ARGS`` on the local engine, and through spark-submit on ``cluster``
    (asserting that both workers' executors ran tasks of it)."""
    from conftest import run_cli

    local = run_cli("-o", "json", "recommend", *args, "--engine", "local")
    assert local.exit_code == 0, f"seed {SEED}: {local.stderr}"
    job = str(ROOT / "scripts" / "recommend_job.py")
    submit = cluster.submit("--py-files", str(package), job, *args, "-o", "json", cwd=cwd)
    assert submit.returncode == 0, f"seed {SEED}: " + submit.stdout[-2000:] + submit.stderr[-3000:]
    tasks = cluster.tasks_per_worker(submit.stderr)
    assert len(tasks) == 2 and all(tasks), f"tasks per worker {tasks}: not run on both workers' executors"
    return json.loads(local.stdout), json.loads(submit.stdout)


def test_a_table_with_a_broker_column_gives_the_local_engines_recommendation(
    standalone_cluster: StandaloneCluster, package: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    traffic = random_traffic(tmp_path / "t.csv", rng)
    percentile = rng.choice(["50", "90", "99", "99.9"])
    policy = ["--percentile", percentile, "--headroom", "10%", "--tail-share", "5%", "--exempt", "u7"]
    local, submitted = on_both(standalone_cluster, package, tmp_path, [str(traffic), *policy])
    assert local["limits"] and local["distributions"], f"seed {SEED}: nothing recommended"
    assert submitted == local, f"seed {SEED}"


def test_per_broker_request_logs_give_the_local_engines_recommendation(
    standalone_cluster: StandaloneCluster, package: Path, tmp_path: Path
) -> None:
    logs = random_request_logs(tmp_path, random.Random(SEED))
    tight = ["--percentile", "50", "--headroom", "0"]  # so that the replay has throttled quota-ids to compare
    args = ["--input-format", "kafka-request-log", "--per-broker", *logs, *tight]
    local, submitted = on_both(standalone_cluster, package, tmp_path, args)
    assert {lim["brokers"] for lim in local["limits"]} == {2}, f"seed {SEED}"
    assert local["replayed"]["summary"]["throttled_quota_ids"] > 0, f"seed {SEED}"
    assert submitted == local, f"seed {SEED}"
