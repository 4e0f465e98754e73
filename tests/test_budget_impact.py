"""``impact run --brokers N``: cluster-wide traffic spread evenly over N brokers is the traffic against limits × N."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conftest import run_cli
from kquotactl.core.budget import spread_evenly
from kquotactl.core.entities import display_name
from kquotactl.manifests.loader import load_manifests


def test_even_spread_over_three_brokers_equals_the_limits_times_three(tmp_path: Path) -> None:
    r = run_cli(
        "impact", "generate", str(tmp_path / "t.parquet"), "--rows", "20000", "--users", "100", "--clients", "400",
        "--rate", "4000", "--quotas-out", str(tmp_path / "q.yaml"),
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    scaled = spread_evenly(load_manifests([str(tmp_path / "q.yaml")]).records(), 3)
    doc = {
        "quotas": [
            {"entity": {t.value: display_name(n) for t, n in r.entity.components().items()}, "config": dict(r.config)}
            for r in scaled
        ]
    }
    (tmp_path / "x3.yaml").write_text(yaml.safe_dump(doc))
    run = ("-o", "json", "impact", "run", str(tmp_path / "t.parquet"), "--engine", "local", "-f")
    spread = run_cli(*run, str(tmp_path / "q.yaml"), "--brokers", "3")
    assert spread.exit_code == 0, spread.stderr
    assert "assumed spread evenly over 3 brokers" in spread.stderr
    times3 = run_cli(*run, str(tmp_path / "x3.yaml"))
    one = run_cli(*run, str(tmp_path / "q.yaml"))
    got, want, single = (json.loads(x.stdout) for x in (spread, times3, one))
    assert got["quota_ids"] == want["quota_ids"]
    assert got["summary"]["throttled_quota_ids"] < single["summary"]["throttled_quota_ids"]
