"""``recommend --from-prometheus`` streamed: a range read in many slices gives the report one slice gives, bit for
bit (the rates, the distributions, the limits and the replay), on a real Prometheus serving random synthetic
sensors (written as OpenMetrics, turned into blocks by ``promtool tsdb create-blocks-from openmetrics``); seed
printed."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from typing import Any

import pytest

from kquotactl.core.recommend import Level, Policy
from kquotactl.impact.replay import Window
from kquotactl.observe import prometheus
from kquotactl.render.recommend import recommendation_json
from kquotactl.services.impact import Replay
from kquotactl.services.recommend import recommend_from_traffic
from kquotactl.testing.observe import PrometheusServer

pytestmark = pytest.mark.prometheus

SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))
SECONDS = 900


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Eight quota-ids on two brokers, a reading a second: steady, bursty, idle stretches; user and client-id
    sensors."""
    rng = random.Random(SEED)
    work = tmp_path_factory.mktemp("synthetic-sensors")
    end = int(time.time()) - 120
    start = end - SECONDS
    lines = ["# TYPE kafka_quota_byte_rate gauge"]
    for i in range(8):
        broker = f"b{1 + i % 2}:7071"
        labels = f'client_id="c{i % 3}",instance="{broker}",quota_type="Produce",user="u{i % 4}"'
        base, burst = rng.uniform(1e3, 1e6), rng.choice([1, 1, 5])
        for s in range(start, end):
            if rng.random() < 0.1:
                continue  # idle: no reading
            value = base * (burst if s % 120 < 15 else 1) * rng.uniform(0.9, 1.1)
            lines.append(f"kafka_quota_byte_rate{{{labels}}} {value!r} {s}")
    lines.append("# EOF")
    text = work / "sensors.om"
    text.write_text("\n".join(lines) + "\n")
    data = work / "data"
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(text), str(data)], check=True,
                   capture_output=True)  # fmt: skip
    with PrometheusServer(tsdb=data) as prom:
        yield prom, start, end


def _recommend(url: str, start: int, end: int, step: float, level: str) -> dict[str, Any]:
    policy = Policy(percentile=50.0, headroom=0.0, level=Level(level))  # tight: the replay throttles
    source = Replay(Window(), (), url, (start + 1.0, float(end), step), engine="local")
    found = recommend_from_traffic(source, policy)
    doc = {**recommendation_json(found.recommendation, found.distributions), "replayed": found.replayed}
    return json.loads(json.dumps({**doc, "rows": found.rows}))


@pytest.mark.parametrize(("step", "level"), [(1.0, "user-client"), (1.0, "user"), (2.0, "client-id")])
def test_many_slices_give_the_report_of_one(synthetic, monkeypatch, step: float, level: str) -> None:
    prom, start, end = synthetic
    whole = _recommend(prom.url, start, end, step, level)
    monkeypatch.setattr(prometheus, "POINTS_PER_QUERY", 1)  # 60 points a series a query: 15 slices
    sliced = _recommend(prom.url, start, end, step, level)
    assert whole["limits"] and whole["replayed"]["summary"]["throttled_quota_ids"] > 0, f"seed {SEED}"
    assert sliced == whole, f"seed {SEED} (KQUOTACTL_FUZZ_SEED={SEED})"
