"""Explain (core.explain) and the impact local engine give identical throttles for the same inputs: the same
resolution (core.precedence) and the one formula (core.throttlemath.quota_throttle_ms), on random quota sets."""

from __future__ import annotations

import random

import pytest

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.explain import Connection, ThrottleModel, explain_json
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact import local
from kquotactl.impact.model import CLIENT_MODEL_KEYS, IP_MODEL_KEYS, USAGE, Window

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
    units = {k: rng.randint(1, 200_000) for k in CLIENT_MODEL_KEYS}  # per sample, steady
    samples = list(range(window.num + 3))  # long enough for a full window
    columns: dict[str, list] = {
        "sample": samples,
        "user": [user] * len(samples),
        "client_id": [client] * len(samples),
        "ip": [""] * len(samples),
    }
    for k in CLIENT_MODEL_KEYS:
        columns["u_" + USAGE[k].column] = [units[k]] * len(samples)
    for k in IP_MODEL_KEYS:
        columns["u_" + USAGE[k].column] = [0] * len(samples)
    engine = {s.key: s for s in local.run(columns, index, window).stats}

    # the steady rate over a full window, as the engine measures it: N samples of units / (divisor × N × S)
    observed = {k: window.num * units[k] / window.denominator(k) for k in CLIENT_MODEL_KEYS}
    throttle = ThrottleModel(observed, window.num, window.size_s)
    explained = {q["key"]: q for q in explain_json(index, Connection.of(user, client, None), throttle)["quotas"]}
    for k in CLIENT_MODEL_KEYS:
        want = explained[k]["throttle_ms"] if explained[k]["limit"] is not None else 0
        got = engine[k].max_throttle_ms if k in engine else 0
        assert got == want, f"seed {seed}: {k} for ({user!r}, {client!r}): engine {got} ms, explain {want} ms"
