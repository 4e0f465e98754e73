"""The topic-threshold model on both engines: random traffic, identical per-topic drops (and the whole report)."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kquotactl.core.entities import Entity
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact import spark as spark_engine
from kquotactl.impact.engine import Runner, topic_threshold
from kquotactl.impact.replay import Window
from kquotactl.impact.topic import TOPIC_RATES, TopicConfig
from kquotactl.testing.oracle import fresh_seed

pytestmark = pytest.mark.spark


def _traffic(rng: random.Random, path) -> None:
    topics = [f"t{i}" for i in range(rng.randrange(2, 7))]
    rows = []
    t = 1.7e9 + rng.random()
    for _ in range(rng.randrange(500, 1500)):
        t += rng.choice([0.0, rng.random() * 0.3, rng.random() * 3, 5.0])
        rows.append((t, rng.choice(["u1", "u2"]), rng.choice(topics), rng.choice([0, rng.randrange(1, 200_000)])))
    ts, users, tps, sizes = zip(*rows, strict=True)
    pq.write_table(pa.table({"ts": ts, "user": users, "topic": tps, "produce_bytes": sizes}), path)


def test_both_engines_give_identical_topic_drops_on_random_traffic(spark, tmp_path):
    seed = fresh_seed()
    rng = random.Random(seed)
    path = str(tmp_path / "t.parquet")
    _traffic(rng, path)
    index = QuotaIndex({Entity(user="u1"): {"producer_byte_rate": 20_000}})
    window = Window()
    local = Runner(path, "local", window)
    local.analyze(index)
    on_spark = Runner(path, "spark", window)
    on_spark._spark = spark  # the test session's, not a second one
    on_spark._traffic = spark_engine.read_traffic(spark, path, window)
    on_spark.analyze(index)
    total = float(rng.randrange(5_000, 60_000))
    cfg_topics = {"t0": total * rng.random() * 0.5}
    dropped = 0
    for rate in TOPIC_RATES:
        cfg = TopicConfig(total, cfg_topics, rate)
        want = topic_threshold(local, index, cfg)
        got = topic_threshold(on_spark, index, cfg)
        assert got == want, f"seed {seed} ({rate}): spark {got} != local {want}"
        dropped += want["bytes_dropped"]
        assert want["client_quota_throttled_bytes"] > 0, f"seed {seed}: u1's quota throttled nothing"
    assert dropped > 0, f"seed {seed}: nothing dropped, the comparison is empty"


def test_cli_runs_the_model_on_spark_as_on_the_local_engine(spark, cli, tmp_path):
    import json

    from kquotactl.impact import generate

    generate.write(generate.generate(3000, users=10, clients=20, rate=1000), tmp_path / "t.parquet")
    generate.write_manifest(generate.quotas(10, 20), tmp_path / "q.yaml")
    args = ["-o", "json", "impact", "run", str(tmp_path / "t.parquet"), "-f", str(tmp_path / "q.yaml")]
    args += ["--model", "topic-threshold", "--total-threshold", "1MiB", "--topic-threshold", "topic-1=256KiB"]
    out = {}
    for engine in ("local", "spark"):
        r = cli(*args, "--engine", engine)
        assert r.exit_code == 0, r.stderr
        out[engine] = json.loads(r.stdout)["topic_threshold"]
    assert out["spark"] == out["local"] and out["local"]["bytes_dropped"] > 0
