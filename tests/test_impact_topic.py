"""The optional topic-threshold model (seed 003, "Broker side quota (V1)"): implicit shares, rejection, drops with
the design's Meter one-minute rates (and the quota-window variant), the same on both engines."""

from __future__ import annotations

import json

import pytest

from kquotactl.core.errors import UsageError
from kquotactl.impact.replay import Window
from kquotactl.impact.topic import QUOTA_WINDOW, Meter, TopicConfig, replay_one_minute, replay_quota_window


def test_implicit_share_is_what_explicit_thresholds_leave():
    cfg = TopicConfig(100.0, {"a": 30.0})
    assert cfg.thresholds(["a", "b", "c"]) == {"a": (30.0, True), "b": (35.0, False), "c": (35.0, False)}


def test_a_threshold_set_above_the_total_is_rejected_naming_the_topics_and_the_excess():
    with pytest.raises(UsageError) as e:
        TopicConfig(100.0, {"a": 60.0, "b": 60.0}).check()
    assert str(e.value) == (
        "rejected: the explicit topic thresholds (a=60 B/s, b=60 B/s) sum to 120 B/s, 20 B/s above "
        "total.bytes.in.per.sec.threshold 100 B/s; lower a topic threshold or raise --total-threshold"
    )


def test_meter_first_tick_takes_the_instant_rate_then_folds_with_alpha():
    m = Meter()
    m.mark(500)
    assert m.one_minute_rate() == 0.0  # nothing folded before the first tick
    m.tick()
    assert m.one_minute_rate() == pytest.approx(100.0)  # 500 B over 5 s
    m.tick()  # nothing marked: decays by exp(-5/60)
    assert m.one_minute_rate() == pytest.approx(100.0 * 0.9200444146293233)


def test_one_minute_rate_drops_only_while_broker_and_topic_are_both_over():
    # a sends 1000 B every second from t=0; b 10 B/s. Ticks every 5 s from the first produce (both meters at 0).
    # Tick 1 (t=5 s): broker 1010 B/s > 500, a 1000 B/s > 300 -> a dropped until the meters decay; b never.
    cells = []
    for k in range(6):
        cells += [("a", k, k, 0, 5000, 5), ("b", k, k, 1, 50, 5)]
    out = replay_one_minute(cells, {"a": 0, "b": 0}, TopicConfig(500.0, {"a": 300.0}))
    rows = {r["topic"]: r for r in out["topics"]}
    # nothing marked while dropping: the rates decay by exp(-5/60) a tick, 1000 -> 920 -> ... > 300 for 14 ticks
    assert rows["a"]["bytes_dropped"] == 25_000 and rows["a"]["rows_dropped"] == 25
    assert rows["a"]["seconds_dropping"] == 25.0
    assert (rows["b"]["threshold"], rows["b"]["bytes_dropped"]) == (200.0, 0)


def test_implicit_share_is_recomputed_when_a_topic_appears():
    # total 100 B/s, c explicit at 10 B/s: the implicit topics share 90 B/s. a sends 80 B/s (400 B a tick), c 50 B/s
    # until 10 s; b appears at t=12 s, and from then a's share is 45. After tick 2 (t=10 s) the broker is at
    # 130 + alpha·(80 − 130) ≈ 126 > 100 and a at 80: a is under 90 before b exists, over 45 after.
    created = {"a": 0, "c": 0, "b": 12_000_000}
    cells = [("a", 0, 0, 1, 400, 1), ("c", 0, 0, 0, 250, 1), ("a", 1, 1, 1, 400, 1), ("c", 1, 1, 0, 250, 1)]
    cells += [("a", 2, 2, 1, 400, 1), ("b", 2, 0, 2, 10, 1), ("a", 2, 2, 2, 400, 1)]
    rows = {r["topic"]: r for r in replay_one_minute(cells, created, TopicConfig(100.0, {"c": 10.0}))["topics"]}
    # only a's requests from 12 s to the next tick (15 s) are dropped; c (50 > 10) from the first tick on
    assert (rows["a"]["bytes_dropped"], rows["a"]["seconds_dropping"], rows["a"]["threshold"]) == (400, 3.0, 45.0)
    assert (rows["c"]["bytes_dropped"], rows["c"]["seconds_dropping"]) == (250, 5.0)
    assert rows["b"]["bytes_dropped"] == 0


def test_quota_window_variant_drops_only_while_broker_and_topic_are_both_over():
    # N=2 samples of 1 s. t=0 accepts everything (no history); t=1 and t=2: broker 155/160 B/s > 100 and a at
    # 150 B/s > 30 -> a's bytes dropped, b (5 B/s vs its 70 B/s share) accepted; t=3: the dropped bytes were
    # never recorded, so the broker is at 5 B/s and a is accepted again.
    by = {(0, "a"): 300, (0, "b"): 10, (1, "a"): 300, (1, "b"): 10, (2, "a"): 300, (3, "a"): 300}
    out = replay_quota_window(by, 0, 3, TopicConfig(100.0, {"a": 30.0}, QUOTA_WINDOW), Window(num=2, size_s=1))
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


def _args(tmp_path, *extra):
    return [
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
        *extra,
    ]


def test_cli_reports_drops_next_to_client_quotas(cli, tmp_path):
    from kquotactl.impact import generate

    generate.write(generate.generate(5000, users=20, clients=50, rate=1000), tmp_path / "t.parquet")
    generate.write_manifest(generate.quotas(20, 50), tmp_path / "q.yaml")
    for extra, rate in (((), "one-minute-rate"), (("--topic-rate", "quota-window"), "quota-window")):
        r = cli(*_args(tmp_path, *extra))
        assert r.exit_code == 0, r.stderr
        t = json.loads(r.stdout)["topic_threshold"]
        assert t["topic_rate"] == rate
        assert t["bytes_dropped"] > 0
        assert t["topics"][0]["bytes_dropped"] == max(x["bytes_dropped"] for x in t["topics"])
        assert {"client_quota_throttled_bytes", "threshold", "explicit"} <= set(t["topics"][0])
    bad = cli(*_args(tmp_path)[:-1], "topic-1=2MiB")
    assert bad.exit_code == 1
    assert "(topic-1=2 MiB/s) sum to 2 MiB/s, 1 MiB/s above total.bytes.in.per.sec.threshold 1 MiB/s" in bad.stderr


def test_topic_rate_without_the_model_is_refused(cli, tmp_path):
    from kquotactl.impact import generate

    generate.write(generate.generate(100, users=2, clients=2, rate=10), tmp_path / "t.parquet")
    generate.write_manifest(generate.quotas(2, 2), tmp_path / "q.yaml")
    r = cli(
        "impact", "run", str(tmp_path / "t.parquet"), "-f", str(tmp_path / "q.yaml"), "--topic-rate", "quota-window"
    )
    assert r.exit_code == 1 and r.stderr.strip().endswith("--topic-rate needs --model topic-threshold"), r.stderr
