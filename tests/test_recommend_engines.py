"""``recommend`` on the Spark and local engines: identical reports (limits, distributions, replay) on random
traffic, seed printed; both against a table with a broker column and per-broker request logs."""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from fixtures_spark import TEST_CONF
from kquotactl.core.recommend import Policy
from kquotactl.impact.replay import Window
from kquotactl.render.recommend import recommendation_json
from kquotactl.services.impact import Replay
from kquotactl.services.recommend import recommend_from_traffic

pytestmark = pytest.mark.spark

SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))
T0 = 1_700_000_000


def random_traffic(path: Path, rng: random.Random) -> Path:
    """Steady, bursty and sparse clients over three brokers, with connections from a few ips."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "ts",
                "user",
                "client_id",
                "ip",
                "broker",
                "produce_bytes",
                "fetch_bytes",
                "requests",
                "request_time_ms",
                "connections",
            ]
        )
        for s in range(180):
            for u in range(8):
                if u >= 5 and rng.random() < 0.7:
                    continue  # sparse
                burst = 5 if (u == 4 and s % 30 < 5) else 1
                for _ in range(rng.randint(1, 4)):
                    ts = T0 + s + rng.random()
                    w.writerow(
                        [
                            f"{ts:.3f}",
                            f"u{u}",
                            f"c{u % 3}",
                            f"10.0.0.{u % 4}",
                            f"b{rng.randint(1, 3)}",
                            rng.randint(0, 50_000) * burst,
                            rng.randint(0, 80_000),
                            1,
                            round(rng.uniform(0, 3), 3),
                            int(rng.random() < 0.05),
                        ]
                    )
    return path


def both(source: Replay, policy: Policy) -> tuple[Any, Any]:
    out = []
    for engine in ("local", "spark"):
        spec = Replay(
            source.window,
            source.traffic,
            None,
            None,
            source.input_format,
            source.per_broker,
            engine,
            "local[2]",
            TEST_CONF,
        )
        found = recommend_from_traffic(spec, policy)
        out.append(
            json.loads(
                json.dumps(
                    {
                        **recommendation_json(found.recommendation, found.distributions),
                        "replayed": found.replayed,
                        "rows": found.rows,
                    }
                )
            )
        )
    return out[0], out[1]


@pytest.mark.parametrize("level", ["user-client", "user"])
def test_both_engines_give_identical_recommendations(tmp_path: Path, spark: Any, level: str) -> None:
    rng = random.Random(SEED)
    traffic = random_traffic(tmp_path / "t.csv", rng)
    from kquotactl.core.recommend import Level

    policy = Policy(
        percentile=rng.choice([50.0, 90.0, 99.0, 99.9]),
        headroom=0.1,
        level=Level(level),
        tail_share=0.05,
        exempt=frozenset({"u7"}),
    )
    local, on_spark = both(Replay(Window(), [str(traffic)]), policy)
    assert local["limits"], f"seed {SEED}: nothing recommended"
    assert on_spark == local, f"seed {SEED}"


def test_per_broker_request_logs_give_identical_recommendations(tmp_path: Path, spark: Any) -> None:
    from kquotactl.impact.generate import request_log_line

    rng = random.Random(SEED)
    logs = []
    for b in range(2):
        d = tmp_path / f"b{b}"
        d.mkdir()
        lines = [
            request_log_line(
                T0 + s + rng.random(),
                rng.choice([0, 1]),
                f"u{rng.randint(0, 4)}",
                "c",
                "10.0.0.1",
                (rng.randint(1, 40_000),),
                round(rng.uniform(0.1, 2), 3),
                version="4.4",
            )
            for s in range(120)
            for _ in range(rng.randint(1, 5))
        ]
        (d / "kafka-request.log").write_text("\n".join(lines) + "\n")
        logs.append(str(d))
    source = Replay(Window(), logs, None, None, "kafka-request-log", True)
    local, on_spark = both(source, Policy(percentile=95.0))
    assert {lim["brokers"] for lim in local["limits"]} == {2}, f"seed {SEED}"
    assert on_spark == local, f"seed {SEED}"
