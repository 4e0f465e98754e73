"""``impact run --brokers N``: cluster-wide traffic spread evenly over N brokers is the traffic against limits × N."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
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


@pytest.mark.spark
def test_per_broker_replay_of_request_logs_meters_each_brokers_share(tmp_path: Path) -> None:
    from kquotactl.impact import generate

    traffic = generate.generate(6000, users=10, clients=20, rate=1500)
    halves = [traffic.take(list(range(i, traffic.num_rows, 2))) for i in (0, 1)]  # every other record per broker
    for i, half in enumerate(halves):
        (tmp_path / f"broker{i}").mkdir()
        generate.write_lines(generate.request_log(half, "3.9"), tmp_path / f"broker{i}" / "kafka-request.log")
    (tmp_path / "q.yaml").write_text("quotas:\n- entity: {user: <default>}\n  config: {producer_byte_rate: 20000}\n")
    run = ("-o", "json", "impact", "run", "--input-format", "kafka-request-log", "--engine", "local")
    logs = (str(tmp_path / "broker0"), str(tmp_path / "broker1"))
    r = run_cli(*run, *logs, "-f", str(tmp_path / "q.yaml"), "--per-broker")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["summary"]["brokers"] == list(logs)  # one report, each row naming the broker (its logs) it is for
    one = json.loads(run_cli(*run, *logs, "-f", str(tmp_path / "q.yaml")).stdout)  # as if one broker served it all
    assert out["summary"]["rows"] == one["summary"]["rows"]
    assert out["summary"]["request_log"]["requests"] == one["summary"]["request_log"]["requests"]
    for b in logs:
        rows = [q for q in out["quota_ids"] if q["broker"] == b]
        throttled = [q for q in rows if q["seconds_throttled"] > 0]
        assert 0 < len(throttled) <= one["summary"]["throttled_quota_ids"]
        worst = max(q["total_throttle_ms"] for q in rows)
        assert worst < max(q["total_throttle_ms"] for q in one["quota_ids"])  # each broker sees about half
    for engine in ("spark",):  # the same per-broker replay on Spark
        spark_run = (*run[:-1], engine)
        s = run_cli(*spark_run, *logs, "-f", str(tmp_path / "q.yaml"), "--per-broker")
        assert s.exit_code == 0, s.stderr
        assert json.loads(s.stdout)["quota_ids"] == out["quota_ids"]
    bad = run_cli(*run[:-4], logs[0], "-f", str(tmp_path / "q.yaml"), "--per-broker")
    assert bad.exit_code == 1 and "--per-broker replays broker request logs" in bad.stderr
    both = run_cli(*run, *logs, "-f", str(tmp_path / "q.yaml"), "--per-broker", "--brokers", "2")
    assert both.exit_code == 1 and "--brokers N spreads traffic" in both.stderr
