"""The impact model on hand-computed cases, on both engines (the Spark half is marked ``spark``).

Every expected number below is worked out by hand from docs/impact.md, as Kafka's ``Rate`` measures: N = 11
samples of S = 1 s, one recording per millisecond with usage; a fresh sensor's window is padded to (N − 1)·S = 10 s,
so a first recording of B units is B / 10 per second and throttled round_half_up((rate − limit)/limit × 10000) ms,
capped at 1000 ms for request and connection keys; a throttled fetch or connection is taken back out.
"""

from __future__ import annotations

import pytest

from impact_cases import by_qid, run_engine, write_traffic
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.impact.replay import Window

ENGINES = ["local", pytest.param("spark", marks=pytest.mark.spark)]


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture
def run(engine, tmp_path, request):
    spark = request.getfixturevalue("spark") if engine == "spark" else None

    def go(rows, quotas, window=None):
        return run_engine(engine, write_traffic(rows, tmp_path / "t.parquet"), quotas, window, spark)

    return go


def row(ts, user="", client="", ip="", **usage):
    return {"ts": float(ts), "user": user, "client_id": client, "ip": ip, **usage}


def test_window_straddling_a_burst(run):
    # alice: 2200 B at t=0 and 1100 B at t=5 against 100 B/s; the input runs to t=20. Only recordings are throttled:
    # t=0: 2200 over the padded 10 s = 220 B/s -> 12000 ms; t=5: 3300 over 5 s padded to 10 s = 330 -> 23000 ms.
    rep = run(
        [row(0, "alice", "c1", produce_bytes=2200), row(5, "alice", "c1", produce_bytes=1100), row(20, "bob", "c9")],
        {Entity(user="alice"): {"producer_byte_rate": 100}},
    )
    [r] = rep["quota_ids"]
    assert r == {
        "key": "producer_byte_rate",
        "quota_id": {"user": "alice", "client-id": ""},
        "level": 3,
        "entity_path": "users/alice",
        "limit": 100,
        "seconds_throttled": 2,
        "max_rate": 330.0,
        "total_throttle_ms": 12000 + 23000,
        "max_throttle_ms": 23000,
    }
    s = rep["summary"]
    assert (s["rows"], s["seconds"], s["quota_ids"], s["throttled_quota_ids"]) == (3, 21, 1, 1)
    assert s["traffic"]["producer_byte_rate"]["usage_throttled"] == 3300  # both recordings were throttled
    assert s["share_of_traffic_throttled"] == 1.0


def test_the_window_ends_with_the_input(run):
    # One burst at t=0 and nothing after: one recording, so only one second can be throttled.
    rep = run([row(0, "alice", "c1", produce_bytes=2200)], {Entity(user="alice"): {"producer_byte_rate": 100}})
    [r] = rep["quota_ids"]
    assert (r["seconds_throttled"], r["total_throttle_ms"]) == (1, 12000)


def test_shared_user_quota_and_exclusive_pair_quota(run):
    # alice's c1 and c2 share users/alice (1100 + 1100 at t=0, one recording -> 220 B/s vs 100); c3 has its own
    # pair quota (110 B/s vs 1000). The row at t=3 has no usage: no recording, no throttle.
    rows = [
        row(0, "alice", "c1", produce_bytes=1100),
        row(0, "alice", "c2", produce_bytes=1100),
        row(0, "alice", "c3", produce_bytes=1100),
        row(3, "alice", "c1"),
    ]
    quotas = {
        Entity(user="alice"): {"producer_byte_rate": 100},
        Entity(user="alice", client_id="c3"): {"producer_byte_rate": 1000},
    }
    got = by_qid(run(rows, quotas))
    shared = got[("producer_byte_rate", "user=alice,client-id=")]
    assert (shared["level"], shared["seconds_throttled"], shared["total_throttle_ms"]) == (3, 1, 12000)
    pair = got[("producer_byte_rate", "user=alice,client-id=c3")]
    assert (pair["level"], pair["entity_path"], pair["seconds_throttled"], pair["max_rate"]) == (
        1,
        "users/alice/clients/c3",
        0,
        110.0,
    )
    assert len(got) == 2


def test_defaults_and_client_sharing(run):
    quotas = {
        Entity(user=DEFAULT): {"producer_byte_rate": 50},
        Entity(client_id="shared"): {"consumer_byte_rate": 100},
        Entity(client_id=DEFAULT): {"consumer_byte_rate": 1000},
        Entity(user=DEFAULT, client_id=DEFAULT): {"request_rate": 1},
    }
    rows = [
        row(0, "x", "shared", produce_bytes=1100, fetch_bytes=1100),  # fetch: shared by every user of "shared"
        row(0, "y", "shared", produce_bytes=500, fetch_bytes=1100),
        row(0, "y", "other", fetch_bytes=1100, requests=10),
    ]
    got = by_qid(run(rows, quotas))
    assert got[("producer_byte_rate", "user=x,client-id=")]["level"] == 6
    assert got[("producer_byte_rate", "user=x,client-id=")]["total_throttle_ms"] == 12000  # 110 vs 50
    assert got[("producer_byte_rate", "user=y,client-id=")]["seconds_throttled"] == 0  # 50 vs 50: not above
    shared = got[("consumer_byte_rate", "user=,client-id=shared")]
    assert (shared["level"], shared["entity_path"], shared["max_rate"], shared["max_throttle_ms"]) == (
        7,
        "clients/shared",
        220.0,
        12000,
    )
    other = got[("consumer_byte_rate", "user=,client-id=other")]
    assert (other["level"], other["entity_path"], other["seconds_throttled"]) == (8, "clients/<default>", 0)
    req = got[("request_rate", "user=y,client-id=other")]
    assert (req["level"], req["entity_path"], req["max_rate"], req["seconds_throttled"]) == (
        5,
        "users/<default>/clients/<default>",
        1.0,
        0,
    )
    # request_rate has no limit for the "shared" rows (no requests there) and nothing else is unlimited.
    assert len(got) == 5


def test_ips_and_capped_connection_throttle(run):
    quotas = {
        Entity(ip=DEFAULT): {"connection_creation_rate": 1},
        Entity(ip="10.0.0.1"): {"connection_creation_rate": 5},
    }
    rows = [
        row(0, "a", "c", "10.0.0.1", connections=22),  # 2.2/s vs 5: fine
        row(0, "a", "c", "10.0.0.2", connections=22),  # 2.2/s vs 1: (2.2-1)/1 x 10000 capped at 1000 ms
        row(10, "a", "c", "10.0.0.3"),
    ]
    got = by_qid(run(rows, quotas))
    own = got[("connection_creation_rate", "ip=10.0.0.1")]
    assert (own["level"], own["entity_path"], own["seconds_throttled"]) == (1, "ips/10.0.0.1", 0)
    dflt = got[("connection_creation_rate", "ip=10.0.0.2")]
    assert (dflt["level"], dflt["entity_path"]) == (2, "ips/<default>")
    assert (dflt["seconds_throttled"], dflt["total_throttle_ms"], dflt["max_throttle_ms"]) == (1, 1000, 1000)
    assert ("connection_creation_rate", "ip=10.0.0.3") not in got  # no connections, no quota-id row


def test_capped_request_throttles_and_unlimited_keys(run):
    quotas = {Entity(user="alice"): {"request_percentage": 10.0, "request_rate": 2}}
    # 2200 ms of handler time in one second = 220 %-s -> 22 % over the padded 10 s vs 10 %: capped to 1000 ms.
    # 44 requests -> 4.4/s vs 2: capped to 1000. fetch_bytes has no quota: counted, not reported. The row at t=1
    # records nothing.
    rows = [row(0, "alice", "c", request_time_ms=2200.0, requests=44, fetch_bytes=500), row(1, "alice", "c")]
    rep = run(rows, quotas)
    got = by_qid(rep)
    pct = got[("request_percentage", "user=alice,client-id=")]
    assert (pct["max_rate"], pct["seconds_throttled"], pct["total_throttle_ms"], pct["max_throttle_ms"]) == (
        22.0,
        1,
        1000,
        1000,
    )
    rr = got[("request_rate", "user=alice,client-id=")]
    assert (rr["max_rate"], rr["max_throttle_ms"]) == (4.4, 1000)
    assert len(got) == 2
    fetch = rep["summary"]["traffic"]["consumer_byte_rate"]
    assert (fetch["rows"], fetch["rows_unlimited"], fetch["usage"]) == (1, 1, 500)


def test_fractional_request_time_and_rounding(run):
    # 0.35 ms x 11 rows in one millisecond = one recording of 3.85 ms = 0.385 %-s over 10 s -> 0.0385 % vs 0.03 %:
    # (0.0385 - 0.03)/0.03 x 10000 = 2833.33 -> 2833 (the cap is 1000).
    quotas = {Entity(user="u"): {"request_percentage": 0.03}}
    rows = [row(0, "u", "c", request_time_ms=0.35) for _ in range(11)]
    [r] = run(rows, quotas)["quota_ids"]
    assert r["max_rate"] == pytest.approx(0.0385)
    assert r["max_throttle_ms"] == 1000


def test_window_settings(run):
    # N=3 samples of S=2 s: 1200 B at t=0 over a fresh sensor's (N-1)·S = 4 s -> 300 B/s vs 100: (300-100)/100 x 4000
    # = 8000 ms, uncapped for byte rates, in sample 0 (2 s); the input ends at t=7 (sample 3).
    rep = run(
        [row(0, "alice", "c", produce_bytes=1200), row(7, "alice", "c")],
        {Entity(user="alice"): {"producer_byte_rate": 100}},
        Window(num=3, size_s=2),
    )
    [r] = rep["quota_ids"]
    assert (r["seconds_throttled"], r["total_throttle_ms"], r["max_throttle_ms"], r["max_rate"]) == (
        2,
        8000,
        8000,
        300.0,
    )
    assert rep["summary"]["seconds"] == 8


def test_sanitized_user_in_quota_id(run):
    rep = run([row(0, "CN=a b,O=x", "c", produce_bytes=5)], {Entity(user="CN=a b,O=x"): {"producer_byte_rate": 1}})
    [r] = rep["quota_ids"]
    assert r["quota_id"] == {"user": "CN%3Da%20b%2CO%3Dx", "client-id": ""}
    assert r["entity_path"] == "users/CN%3Da%20b%2CO%3Dx"


def test_a_throttle_past_two_to_the_31_ms_wraps_as_on_a_broker(run):
    # 2^31 ms is ~24.9 days: a broker narrows Math.round(...) to int, so 220 000 x the quota over a fresh 10 s
    # window (219 999 x 10 000 ms) comes out negative and throttles nothing; 110 000 x is an ordinary throttle.
    rows = [row(0, "alice", "c1", produce_bytes=2_200_000), row(0, "bob", "c1", produce_bytes=1_100_000)]
    quotas = {Entity(user="alice"): {"producer_byte_rate": 1}, Entity(user="bob"): {"producer_byte_rate": 1}}
    rep = by_qid(run(rows, quotas))
    assert Window().throttle_ms("producer_byte_rate", 200_000, 1) == 2_199_989_000 - 2**32
    alice = rep[("producer_byte_rate", "user=alice,client-id=")]
    assert (alice["seconds_throttled"], alice["total_throttle_ms"], alice["max_throttle_ms"]) == (0, 0, 0)
    bob = rep[("producer_byte_rate", "user=bob,client-id=")]
    assert (bob["seconds_throttled"], bob["max_throttle_ms"]) == (1, 1_099_990_000)
