"""``recommend`` on the Spark and local engines: identical reports (limits, distributions, replay) on random
traffic, seed printed; both against a table with a broker column and per-broker request logs."""

from __future__ import annotations

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
from recommend_cases import random_request_logs, random_traffic

pytestmark = pytest.mark.spark

SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))


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
    logs = random_request_logs(tmp_path, random.Random(SEED))
    source = Replay(Window(), logs, None, None, "kafka-request-log", True)
    local, on_spark = both(source, Policy(percentile=95.0))
    assert {lim["brokers"] for lim in local["limits"]} == {2}, f"seed {SEED}"
    assert on_spark == local, f"seed {SEED}"


def test_the_quota_ids_spark_leaves_out_of_the_replay_are_never_throttled(tmp_path: Path, spark: Any) -> None:
    """Spark does not replay the quota-ids their distributions settle (a pair's own, its peak rate at most its
    limit); the local engine replays every one. A policy at the 90th percentile with no headroom settles some and
    throttles others: the reports stay identical, and the local replay finds each settled quota-id never throttled,
    at the settled peak."""
    from collections import defaultdict

    from kquotactl.impact.recommend import settled_quota_ids
    from kquotactl.services.recommend import proposed_index

    traffic = random_traffic(tmp_path / "t.csv", random.Random(SEED))
    policy = Policy(percentile=90.0, headroom=0.0, tail_share=0.05)
    local, on_spark = both(Replay(Window(), [str(traffic)]), policy)
    assert on_spark == local, f"seed {SEED}"
    found = recommend_from_traffic(Replay(Window(), [str(traffic)], engine="local"), policy)
    index = proposed_index(found.recommendation, [])
    keys = sorted({key for _, key in found.distributions})
    settled = settled_quota_ids(index, found.distributions, defaultdict(lambda: (0, 0)), keys)
    replayed = {
        (r["broker"], r["key"], *(r["quota_id"].get(part) for part in ("user", "client-id", "ip"))): r
        for r in local["replayed"]["quota_ids"]
    }
    pairs = [(b, s) for b, here in settled.items() for s in here.settled]
    assert pairs, f"seed {SEED}: nothing settled"
    for broker, s in pairs:
        r = replayed[(broker, s.key, s.user, s.client_id, s.ip)]
        assert (r["seconds_throttled"], r["max_rate"]) == (0, s.peak), f"seed {SEED}: {broker} {s}"
    throttled = [r for r in replayed.values() if r["seconds_throttled"] and r["level"] in (1, 2, 4, 5)]
    assert throttled, f"seed {SEED}: no pair's quota-id throttled, so nothing was left to replay"
