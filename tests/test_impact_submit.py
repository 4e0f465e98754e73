"""`spark-submit` of the impact job to a real standalone Spark cluster (a master and two workers in their own JVMs).

The documented cluster path: the package as a zip for ``--py-files`` and ``scripts/impact_job.py`` as the
application; the executors run in the workers' JVMs, not the driver's. The report must equal the local engine's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures_spark import StandaloneCluster
from kquotactl.impact.package import write_zip

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def test_spark_submit_to_a_standalone_cluster_gives_the_local_engines_report(
    standalone_cluster: StandaloneCluster, tmp_path: Path
) -> None:
    from conftest import run_cli

    env = standalone_cluster.env
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
    submit = standalone_cluster.submit(
        "--py-files", str(package), str(ROOT / "scripts" / "impact_job.py"), str(traffic), "-f", str(quotas),
        "-o", "json", cwd=tmp_path, timeout=400,
    )  # fmt: skip
    assert submit.returncode == 0, submit.stdout[-2000:] + submit.stderr[-3000:]
    assert all(standalone_cluster.tasks_per_worker(submit.stderr))  # the workers' executors ran it, not a local[*]
    got, want = json.loads(submit.stdout), json.loads(local.stdout)
    assert got["summary"].pop("engine") == "spark" and want["summary"].pop("engine") == "local"
    assert got == want
    assert want["summary"]["throttled_quota_ids"] > 0
