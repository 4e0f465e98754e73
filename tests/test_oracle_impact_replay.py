"""Differential: ``impact``'s replay on both engines, and ``explain --replay``, against Kafka's own ``Sensor`` +
``Rate`` + ``Quota`` (``common/ThrottleOracle.java``) on the same random event streams, every oracle version.

Each case is one quota-id (its own user, or its own ip for connection_creation_rate) with one key and a positive
limit, and a random stream of rows (bursts in one millisecond, two rows in the same millisecond, sub-sample steps,
gaps of about a sample, of about the purge age and far longer). The rows go into one traffic table per window;
Kafka records each millisecond's usage as one recording (``impact.replay.replay_quota_id``), un-recording throttled
fetches and connections as the broker does. Compared: every recording's rate (bit for bit), window and throttle
with ``explain --replay``; each sample's throttle and rate, and each quota-id's report row, with both engines.
The seed is printed on failure (``KQUOTACTL_ORACLE_SEED`` replays it).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fixtures_oracle import ORACLE_VERSIONS, assert_no_mismatches, random_cases
from kquotactl.core.entities import Entity
from kquotactl.core.keys import KEYS
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact.replay import (
    MODEL_KEYS,
    UNRECORDED_WHEN_THROTTLED,
    USAGE,
    Window,
    quota_id,
    quota_table,
    report,
)
from kquotactl.services.explain import replay_steps
from kquotactl.testing.oracle import cases_per_run
from oracle_cases import FULL_VERSION, canon, kafka_steps

pytestmark = pytest.mark.spark

#: one table per window: --window-num / --window-size as operators set them (1 sample included)
WINDOWS = [(11, 1), (1, 1), (3, 2), (5, 3)]
#: the Spark engine names the timeline of this many top quota-ids (the picture's)
SPARK_TOP = 1000  # --top's largest


def _stream(rng: random.Random, window_ms: int, samples: int) -> list[int]:
    t = rng.randint(0, 5000)
    out = []
    for _ in range(rng.randint(1, 30)):
        r = rng.random()
        if r < 0.2:
            step = 0  # a second row in the same millisecond: one recording
        elif r < 0.55:
            step = rng.randint(1, window_ms // 2)
        elif r < 0.75:
            step = window_ms + rng.randint(-2, 2)
        elif r < 0.9:
            step = samples * window_ms + rng.randint(-2, 2)  # about the purge age
        else:
            step = rng.randint(0, 30 * samples * window_ms)
        t += max(step, 0)
        out.append(t)
    return out


def _units(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.7:
        return rng.randint(1, 5000)
    if r < 0.9:
        return rng.randint(1, 50)
    return rng.choice([10**9, 123_456_789, 1])


def _case(rng: random.Random) -> dict[str, Any]:
    num, size = rng.choice(WINDOWS)
    key = rng.choice(MODEL_KEYS)
    limit = rng.choice([float(rng.randint(1, 2000)), 10 ** rng.uniform(-2, 5), 0.5])
    times = _stream(rng, size * 1000, num)
    return {"window": (num, size), "key": key, "limit": limit, "rows": [(t, _units(rng)) for t in times]}


def _recordings(case: dict[str, Any]) -> list[tuple[int, float]]:
    """The case's recordings as the model defines them: usage summed per millisecond, value units / divisor."""
    per_ms: dict[int, int] = {}
    for t, u in case["rows"]:
        per_ms[t] = per_ms.get(t, 0) + u
    return [(t, per_ms[t] / USAGE[case["key"]].divisor) for t in sorted(per_ms)]


def _kafka_case(case: dict[str, Any]) -> dict[str, Any]:
    num, size = case["window"]
    return {
        "kind": "rate",
        "samples": num,
        "window_s": size,
        "limit": case["limit"],
        "cap": KEYS[case["key"]].throttle_capped,
        "unrecord": case["key"] in UNRECORDED_WHEN_THROTTLED,
        "base": 1_700_000_000_000,
        "events": _recordings(case),
    }


def _per_sample(case: dict[str, Any], steps: list[tuple[str, int, int]]) -> dict[int, tuple[int, str]]:
    """Kafka's steps folded per sample: the largest throttle (0: none) and the largest rate (as ``canon``)."""
    size_ms = case["window"][1] * 1000
    out: dict[int, tuple[int, float]] = {}
    for (t, _), (rate, _, ms) in zip(_recordings(case), steps, strict=True):
        s = t // size_ms
        r = float.fromhex(rate)
        prev = out.get(s)
        out[s] = (max(ms, 0), r) if prev is None else (max(prev[0], ms), max(prev[1], r))
    return {s: (ms, canon(r)) for s, (ms, r) in out.items()}


def _table(cases: list[tuple[int, dict[str, Any]]]) -> tuple[Any, QuotaIndex]:
    """The cases' rows as one traffic table (epoch seconds), each case its own quota-id with its own limit."""
    import pyarrow as pa

    cols: dict[str, list[Any]] = {"ts": [], "user": [], "client_id": [], "ip": []}
    for c in dict.fromkeys(u.column for u in USAGE.values()):
        cols[c] = []
    quotas: dict[Entity, dict[str, Any]] = {}
    for i, case in cases:
        key = case["key"]
        column = USAGE[key].column
        ip = f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"
        entity = Entity(ip=ip) if key == "connection_creation_rate" else Entity(user=f"u{i}")
        quotas[entity] = {key: case["limit"]}
        for j, (t, u) in enumerate(case["rows"]):
            cols["ts"].append(t / 1000)
            cols["user"].append(f"u{i}")
            cols["client_id"].append(f"c{j % 2}")  # two clients of one user: users/<u> is shared
            cols["ip"].append(ip)
            for c in dict.fromkeys(x.column for x in USAGE.values()):
                cols[c].append(u / USAGE[key].scale if c == column else 0)
    return pa.table(cols), QuotaIndex(quotas)


def _label(key: str, qid: dict[str, str]) -> tuple[str, str]:
    return key, ",".join(f"{k}={v}" for k, v in sorted(qid.items()))


def _qid(i: int, case: dict[str, Any]) -> tuple[str, str]:
    return _label(case["key"], quota_id(case["key"], f"u{i}", "", f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"))


def _expected_row(case: dict[str, Any], per_sample: dict[int, tuple[int, str]]) -> tuple[int, int, int, str]:
    size = case["window"][1]
    throttled = [ms for ms, _ in per_sample.values() if ms > 0]
    top = max(float.fromhex(r) for _, r in per_sample.values())
    return len(throttled) * size, sum(throttled), max(throttled, default=0), canon(top)


@pytest.mark.jvm
@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_impact_and_explain_replay_kafkas_rate(kafka_oracle, oracle_seed, version, spark):
    from kquotactl.impact import local, readers
    from kquotactl.impact import spark as spark_engine

    cases = random_cases(oracle_seed, _case, max(cases_per_run() // 4, 50))
    kafka = [kafka_steps(a) for a in kafka_oracle(version, "ThrottleOracle").ask_many([_kafka_case(c) for c in cases])]
    full = FULL_VERSION[version]

    # explain --replay: every recording alike
    explained = []
    for c in cases:
        num, size = c["window"]
        steps = replay_steps(
            _recordings(c),
            c["key"],
            c["limit"],
            unrecord_throttled=c["key"] in UNRECORDED_WHEN_THROTTLED,
            window_num=num,
            window_size_seconds=size,
            kafka_version=full,
        )
        explained.append([(canon(s.rate), s.window_ms, s.throttle_ms) for s in steps])
    assert_no_mismatches(cases, explained, kafka, oracle_seed, version, limit=2)

    # both engines: each sample and each quota-id's report row
    for num, size in WINDOWS:
        mine = [(i, c) for i, c in enumerate(cases) if c["window"] == (num, size)]
        if not mine:
            continue
        window = Window(num, size, kafka_version=full)
        table, index = _table(mine)
        want = {}
        for i, c in mine:
            per_sample = _per_sample(c, kafka[i])
            want[_qid(i, c)] = (_expected_row(c, per_sample), {s: ms for s, (ms, _) in per_sample.items() if ms > 0})
        result, tl, _ = local.timelines(readers.engine_columns(table, window), index, window)
        sresult, stl, _ = spark_engine.run(
            spark_engine.engine_frame(spark.createDataFrame(table), window), quota_table(index), window, SPARK_TOP
        )
        for engine, res, timeline in (("local", result, tl), ("spark", sresult, stl)):
            rows = {_label(r["key"], r["quota_id"]): r for r in report(res, index, window)["quota_ids"]}
            partial = engine == "spark" and len(mine) > SPARK_TOP  # beyond its top quota-ids: report rows only
            samples = {
                _label(sid[0], quota_id(sid[0], *sid[2:])): {s: ms for s0, e, ms in iv for s in range(s0, e)}
                for sid, iv in timeline.items()
            }
            ours = [
                (
                    (
                        rows[q]["seconds_throttled"],
                        rows[q]["total_throttle_ms"],
                        rows[q]["max_throttle_ms"],
                        canon(rows[q]["max_rate"]),
                    ),
                    want[q][1] if partial and q not in samples else samples.get(q, {}),
                )
                for q in want
            ]
            assert_no_mismatches(
                [(engine, (num, size), q) for q in want], ours, list(want.values()), oracle_seed, version, limit=2
            )
