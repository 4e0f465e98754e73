"""The optional topic-threshold model (seed 003, "Broker side quota (V1)"): implicit shares, rejection, drops."""

from __future__ import annotations

import json

import pytest

from kquotactl.core.errors import UsageError
from kquotactl.impact.model import Window
from kquotactl.impact.topic import TopicConfig, replay


def test_implicit_share_is_what_explicit_thresholds_leave():
    cfg = TopicConfig(100.0, {"a": 30.0})
    assert cfg.thresholds(["a", "b", "c"]) == {"a": (30.0, True), "b": (35.0, False), "c": (35.0, False)}


def test_a_threshold_set_above_the_total_is_rejected():
    with pytest.raises(UsageError, match="sum to 120 B/s, above"):
        TopicConfig(100.0, {"a": 60.0, "b": 60.0}).check()


def test_drops_only_while_broker_and_topic_are_both_over():
    # N=2 samples of 1 s. t=0 accepts everything (no history); t=1 and t=2: broker 155/160 B/s > 100 and a at
    # 150 B/s > 30 -> a's bytes dropped, b (5 B/s vs its 70 B/s share) accepted; t=3: the dropped bytes were
    # never recorded, so the broker is at 5 B/s and a is accepted again.
    by = {(0, "a"): 300, (0, "b"): 10, (1, "a"): 300, (1, "b"): 10, (2, "a"): 300, (3, "a"): 300}
    out = replay(by, 0, 3, TopicConfig(100.0, {"a": 30.0}), Window(num=2, size_s=1))
    rows = {r["topic"]: r for r in out["topics"]}
    assert rows["a"] == {
        "topic": "a",
        "threshold": 30.0,
        "explicit": True,
        "bytes_in": 1200,
        "bytes_dropped": 600,
        "seconds_dropping": 2,
    }
    assert (rows["b"]["threshold"], rows["b"]["bytes_dropped"]) == (70.0, 0)
    assert (out["bytes_in"], out["bytes_dropped"], out["share_dropped"]) == (1220, 600, 600 / 1220)


def test_cli_reports_drops_next_to_client_quotas(cli, tmp_path):
    from kquotactl.impact import generate

    generate.write(generate.generate(5000, users=20, clients=50, rate=1000), tmp_path / "t.parquet")
    generate.write_manifest(generate.quotas(20, 50), tmp_path / "q.yaml")
    args = [
        "-o",
        "json",
        "impact",
        "run",
        str(tmp_path / "t.parquet"),
        "-f",
        str(tmp_path / "q.yaml"),
        "--engine",
        "local",
        "--model",
        "topic-threshold",
        "--total-threshold",
        "1MiB",
        "--topic-threshold",
        "topic-1=512KiB",
    ]
    r = cli(*args)
    assert r.exit_code == 0, r.stderr
    t = json.loads(r.stdout)["topic_threshold"]
    assert t["bytes_dropped"] > 0 and t["topics"][0]["bytes_dropped"] == max(x["bytes_dropped"] for x in t["topics"])
    assert {"client_quota_throttled_bytes", "threshold", "explicit"} <= set(t["topics"][0])
    bad = cli(*args[:-1], "topic-1=2MiB")
    assert bad.exit_code == 1 and "above total.bytes.in.per.sec.threshold" in bad.stderr
    spark = cli(*[a if a != "local" else "spark" for a in args])
    assert spark.exit_code == 1 and "runs on the local engine" in spark.stderr
