"""The topic-threshold model's rates against Yammer metrics-core 2.2.0's own ``Meter`` (Kafka's broker meters).

Random (time, bytes) streams: the real Meter, built by its own constructor on Kafka 3.9's classpath and ticked by the
task it schedules, and :class:`kquotactl.impact.topic.Meter`, ticked by the model's rule (5 s after the first event
and every 5 s), read their ``OneMinuteRate`` before each event: equal bit for bit.
"""

from __future__ import annotations

import random
import struct

import pytest

from fixtures_oracle import assert_no_mismatches, random_cases
from kquotactl.impact.topic import M1_ALPHA, TICK_US, Meter

pytestmark = pytest.mark.jvm

VERSION = "3.9"  # metrics-core 2.2.0 is on every broker's classpath; 3.9's jar set is the one the harness caches


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _stream(rng: random.Random) -> list[list[int]]:
    t = rng.randrange(0, 10**12)
    events = []
    for _ in range(rng.randrange(1, 60)):
        t += rng.choice([0, rng.randrange(1, 2_000_000), rng.randrange(1, 40_000_000), TICK_US, rng.randrange(1, 10)])
        events.append([t, rng.choice([0, 1, rng.randrange(1, 10**6), rng.randrange(1, 2**40)])])
    return events


def _ours(events: list[list[int]]) -> list[int]:
    m = Meter()
    start = events[0][0]
    out = []
    for t, n in events:
        m.tick_to((t - start) // TICK_US)
        out.append(_bits(m.one_minute_rate()))
        m.mark(n)
    return out


def test_one_minute_rate_is_the_yammer_meters_bit_for_bit(kafka_oracle, oracle_seed):
    cases = random_cases(oracle_seed, _stream, 400)
    answers = kafka_oracle(VERSION, "MeterOracle").ask_many([{"events": c} for c in cases])
    assert all(a["schedule"] == [TICK_US, TICK_US] for a in answers), answers[0]
    assert answers[0]["alpha"] == _bits(M1_ALPHA)
    assert_no_mismatches(cases, [_ours(c) for c in cases], [a["rates"] for a in answers], oracle_seed, VERSION)
