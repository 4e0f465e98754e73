"""``explain --replay`` (services.explain.replay: the limit the connection resolves to, Kafka's Rate) and the impact
local engine give identical throttles for the same recordings, on random quota sets: the same resolution
(core.precedence) and the one replay (core.rate.replay)."""

from __future__ import annotations

import random

import pytest

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import MissingInput
from kquotactl.core.explain import Connection
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact import local
from kquotactl.impact.replay import CLIENT_MODEL_KEYS, IP_MODEL_KEYS, UNRECORDED_WHEN_THROTTLED, USAGE, Window
from kquotactl.services.explain import replay

SEEDS = range(40)
USERS = ["alice", "bob", ""]
CLIENTS = ["app", "etl", ""]


def _random_quotas(rng: random.Random) -> dict[Entity, dict[str, float]]:
    entities = []
    for _ in range(rng.randint(1, 6)):
        user = rng.choice([None, DEFAULT, *USERS])
        client = rng.choice([None, DEFAULT, *CLIENTS]) if user is not None else rng.choice([DEFAULT, *CLIENTS])
        entities.append(Entity(user=user, client_id=client))
    out: dict[Entity, dict[str, float]] = {}
    for e in entities:
        keys = rng.sample(CLIENT_MODEL_KEYS, rng.randint(1, len(CLIENT_MODEL_KEYS)))
        out[e] = {k: (rng.randint(1, 400) if k == "request_percentage" else rng.randint(1, 50_000)) for k in keys}
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_the_impact_engine_and_explain_agree_on_every_throttle(seed: int) -> None:
    rng = random.Random(seed)
    index = QuotaIndex(_random_quotas(rng))
    window = Window(rng.randint(1, 11), rng.randint(1, 3))
    user, client = rng.choice(USERS), rng.choice(CLIENTS)
    samples = sorted(rng.sample(range(4 * window.num), rng.randint(1, 3 * window.num)))  # with gaps
    units = {k: [rng.randint(1, 200_000) for _ in samples] for k in CLIENT_MODEL_KEYS}
    step = window.size_s * 1000
    columns: dict[str, list] = {
        "sample": samples,
        "ms": [s * step + rng.randint(0, step - 1) for s in samples],
        "user": [user] * len(samples),
        "client_id": [client] * len(samples),
        "ip": [""] * len(samples),
    }
    for k in CLIENT_MODEL_KEYS:
        columns["u_" + USAGE[k].column] = units[k]
    for k in IP_MODEL_KEYS:
        columns["u_" + USAGE[k].column] = [0] * len(samples)
    engine = {s.key: s for s in local.run(columns, index, window).stats}

    conn = Connection.of(user, client, None)
    for k in CLIENT_MODEL_KEYS:
        events = [(t, u / USAGE[k].divisor) for t, u in zip(columns["ms"], units[k], strict=True)]
        try:
            steps = replay(
                events,
                conn=conn,
                quota_set=lambda: index,
                key=k,
                unrecord_throttled=k in UNRECORDED_WHEN_THROTTLED,
                window_num=window.num,
                window_size_seconds=window.size_s,
            ).steps
        except MissingInput:  # unlimited (or an empty name the broker never limits): no quota-id row
            assert k not in engine, f"seed {seed}: {k} is unlimited for explain, limited for impact"
            continue
        throttles = [max(s.throttle_ms, 0) for s in steps]
        got = engine[k]
        want = (sum(1 for t in throttles if t) * window.size_s, sum(throttles), max(throttles))
        assert (got.seconds_throttled, got.total_throttle_ms, got.max_throttle_ms) == want, f"seed {seed}: {k}"
        assert got.max_rate == max(s.rate for s in steps), f"seed {seed}: {k}"
