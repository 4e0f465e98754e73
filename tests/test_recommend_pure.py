"""The recommendation core: percentiles as numpy and DuckDB compute them, round limits, and the policy's rules."""

from __future__ import annotations

import math
import os
import random

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.keys import BYTE_RATE_KEYS, KEYS, PRODUCE_KEY, ValueType, human
from kquotactl.core.recommend import (
    Distribution,
    GroupId,
    Level,
    Policy,
    default_entity,
    evidence,
    group_of,
    percentile,
    recommend,
    rounded_limit,
)

CONSUMER_KEY = BYTE_RATE_KEYS[1]
REQUEST_KEY = next(k for k, v in KEYS.items() if v.unit == "%")  # the request-time quota
SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))
rates = st.lists(st.floats(min_value=0, max_value=1e12, allow_nan=False), min_size=1, max_size=200)
qs = st.floats(min_value=0, max_value=100, allow_nan=False)


@settings(max_examples=400, deadline=None)
@given(values=rates, q=qs)
def test_percentile_is_numpys_linear_bit_for_bit(values: list[float], q: float) -> None:
    assert percentile(sorted(values), q) == float(np.percentile(np.array(values), q))


def test_percentile_agrees_with_duckdb_quantile_cont_on_random_traffic() -> None:
    rng = random.Random(SEED)
    con = duckdb.connect()
    for _ in range(50):
        values = [rng.choice([0.0, rng.uniform(0, 5e6), rng.expovariate(1e-5)]) for _ in range(rng.randint(1, 500))]
        for q in (50.0, 95.0, 99.0, rng.uniform(0, 100)):
            want = con.execute("select quantile_cont(v, ?) from unnest(?) t(v)", [q / 100, values]).fetchone()[0]
            got = percentile(sorted(values), q)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-9), f"seed {SEED}: p{q} of {len(values)} values"


def test_percentile_edges() -> None:
    assert math.isnan(percentile([], 50))
    assert percentile([7.0], 99) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 100) == 4.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    with pytest.raises(ValueError, match=r"outside 0\.\.100"):
        percentile([1.0], 101)


def test_a_distribution_counts_the_samples_above_each_percentile() -> None:
    d = Distribution.of([float(v) for v in range(1, 101)], extra=[90])
    assert d.samples == 100 and d.peak == 100.0 and d.total == 5050.0
    assert d.percentiles[50] == pytest.approx(50.5) and d.over[50] == 50
    assert d.percentiles[90] == pytest.approx(90.1) and d.over[90] == 10
    assert d.over[99] == 1  # p99 = 99.01: only the peak is above it


@settings(max_examples=300, deadline=None)
@given(value=st.floats(min_value=1e-3, max_value=1e15, allow_nan=False), key=st.sampled_from(sorted(KEYS)))
def test_a_limit_is_rounded_up_to_two_significant_digits_of_the_unit_it_reads_in(value: float, key: str) -> None:
    limit = rounded_limit(key, value)
    assert float(limit) >= value * (1 - 1e-12)
    assert isinstance(limit, float) == (KEYS[key].type is ValueType.DOUBLE)
    if value >= 10:  # two significant digits: at most one step of 1/10..1/100 of the value above it
        assert float(limit) <= value * 1.1 + 1
    shown = human(KEYS[key], limit).split(" ")[0].replace(",", "")
    assert len(shown.replace(".", "").lstrip("0").rstrip("0")) <= 2 or float(limit) < 100, (value, limit, shown)


def test_round_limits_read_as_round_figures() -> None:
    assert rounded_limit(PRODUCE_KEY, 2.7 * 1024**2 * 1.2) == math.ceil(3.3 * 1024**2)  # 3.24 MiB/s -> 3.3 MiB/s
    assert rounded_limit(PRODUCE_KEY, 1000) == 1000
    assert rounded_limit(PRODUCE_KEY, 1001) == 1100
    assert rounded_limit(REQUEST_KEY, 12.34) == 13.0
    assert rounded_limit(PRODUCE_KEY, 0) == 1


def _dist(*values: float) -> Distribution:
    return Distribution.of(values, extra=[100])


def test_the_limit_is_the_percentile_of_the_busiest_broker_with_headroom() -> None:
    alice = GroupId("alice", "app")
    found = recommend(
        {(alice, PRODUCE_KEY): {"1": _dist(1000.0, 1000.0, 1000.0), "2": _dist(2000.0, 2000.0, 2000.0)}},
        Policy(percentile=50, headroom=0.5),
        span_s=14 * 86400,
    )
    (rec,) = found.limits
    assert rec.entity == Entity.of(user="alice", client_id="app")
    assert (rec.value, rec.basis, rec.brokers, rec.samples) == (3 * 1024, 2000.0, 2, 6)  # 2.93 KiB/s -> 3 KiB/s
    assert evidence(rec, 50, found.span_s) == "p50 1.95 KiB/s over 14 d, 2 brokers"


def test_a_floor_raises_a_low_limit_and_says_so() -> None:
    found = recommend(
        {(GroupId("bob", "x"), CONSUMER_KEY): {"1": _dist(10.0)}},
        Policy(floors={CONSUMER_KEY: 1024 * 1024}),
        span_s=3600,
    )
    (rec,) = found.limits
    assert rec.value == 1024 * 1024 and rec.raised_to_floor
    assert evidence(rec, 99, 3600).endswith("raised to the floor")


def test_exempt_principals_and_kept_keys_get_nothing() -> None:
    d = {
        (GroupId("admin", "c"), PRODUCE_KEY): {"1": _dist(5.0)},
        (GroupId("carol", "c"), PRODUCE_KEY): {"1": _dist(5.0)},
        (GroupId("carol", "c"), REQUEST_KEY): {"1": _dist(5.0)},
    }
    found = recommend(d, Policy(exempt=frozenset({"admin"}), keep=frozenset({REQUEST_KEY})), span_s=60)
    assert [(r.entity.user, r.key) for r in found.limits] == [("carol", PRODUCE_KEY)]
    assert found.exempted == [GroupId("admin", "c")] and found.kept_keys == [REQUEST_KEY]


def test_the_long_tail_shares_one_default_as_high_as_its_largest_member() -> None:
    big = {(GroupId("big", "c"), PRODUCE_KEY): {"1": _dist(1e6, 1e6)}}
    small = {(GroupId(f"s{i}", "c"), PRODUCE_KEY): {"1": _dist(100.0 * (i + 1), 100.0)} for i in range(5)}
    found = recommend({**big, **small}, Policy(percentile=100, headroom=0, tail_share=0.01), span_s=60)
    by_entity = {r.entity: r for r in found.limits}
    tail = by_entity[Entity.of(user=DEFAULT, client_id=DEFAULT)]
    assert tail.quota_ids == 5 and tail.value == 500 and tail.basis == 500.0
    assert by_entity[Entity.of(user="big", client_id="c")].value == 980 * 1024  # 976.6 KiB/s -> 980 KiB/s


def test_recommendations_are_deterministic_whatever_the_input_order() -> None:
    rng = random.Random(SEED)
    d = {
        (GroupId(f"u{i}", f"c{j}"), key): {str(b): _dist(*(rng.uniform(0, 1e6) for _ in range(20))) for b in range(3)}
        for i in range(5)
        for j in range(3)
        for key in (PRODUCE_KEY, CONSUMER_KEY)
    }
    items = list(d.items())
    first = recommend(dict(items), Policy(tail_share=0.02), span_s=60).limits
    rng.shuffle(items)
    assert recommend(dict(items), Policy(tail_share=0.02), span_s=60).limits == first, f"seed {SEED}"


def test_levels_group_and_default_as_the_broker_would() -> None:
    assert group_of(Level.USER, "a", "c") == GroupId(user="a")
    assert group_of(Level.CLIENT, "a", "c") == GroupId(client_id="c")
    assert group_of(Level.USER_CLIENT, "a", "c") == GroupId("a", "c")
    assert default_entity(Level.USER) == Entity.of(user=DEFAULT)
    assert default_entity(Level.CLIENT) == Entity.of(client_id=DEFAULT)


@pytest.mark.parametrize(
    ("kw", "message"),
    [({"percentile": 101}, r"outside 0\.\.100"), ({"headroom": -1}, "non-negative"), ({"tail_share": 1}, r"0\.\.1")],
)
def test_a_bad_policy_is_refused(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Policy(**kw)


def _peaked(peak: float) -> Distribution:
    return Distribution(3, {99.0: peak}, peak, {99.0: 0}, peak * 3)


def test_a_quota_id_is_settled_only_when_it_is_its_groups_own_and_its_peak_fits_under_its_limit() -> None:
    """What the Spark engine may leave out of a replay: a (user, client-id) group whose pair resolves at a pair
    level (1, 2, 4, 5), with both names set, or an ip spelled as its quota spells it, whose peak on that broker is at
    most the limit (``Rate`` throttles only above it). A user's quota, an empty name, an ip spelled otherwise,
    a user-level group: replayed. A key is settled whole on a broker when nothing of it is left to replay there."""
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.impact.recommend import settled_quota_ids

    conn = "connection_creation_rate"
    index = QuotaIndex(
        {
            Entity(user="a", client_id="x"): {PRODUCE_KEY: 1000},  # level 1
            Entity(user=DEFAULT, client_id=DEFAULT): {PRODUCE_KEY: 500},  # level 5
            Entity(user="shared"): {PRODUCE_KEY: 5000},  # level 3: the user's clients share it
            Entity(ip="10.0.0.1"): {conn: 10},
            Entity(ip="2001:db8::1"): {conn: 10},
        }
    )
    dists = {
        (GroupId("a", "x"), PRODUCE_KEY): {"b1": _peaked(1000.0), "b2": _peaked(1000.5)},
        (GroupId("b", "y"), PRODUCE_KEY): {"b1": _peaked(499.0)},
        (GroupId("a", "x"), CONSUMER_KEY): {"b1": _peaked(1.0), "b3": _peaked(1.0)},  # no limit
        (GroupId(ip="10.0.0.1"), conn): {"b1": _peaked(10.0)},
        (GroupId(ip="2001:DB8::1"), conn): {"b2": _peaked(1.0)},  # another spelling of a quota's ip
        (GroupId("shared", "z"), PRODUCE_KEY): {"b3": _peaked(1.0)},
        (GroupId("", "y"), CONSUMER_KEY): {"b4": _peaked(1.0)},
        (GroupId("c", ""), CONSUMER_KEY): {"b4": _peaked(1.0)},
        (GroupId("a", None), CONSUMER_KEY): {"b5": _peaked(1.0)},  # a user-level group
    }
    volumes = {(g, k, b): (7, 70) for (g, k), per in dists.items() for b in per}
    keys = [PRODUCE_KEY, CONSUMER_KEY, conn]
    found = {
        b: ([(s.key, s.level, s.user, s.client_id, s.ip, s.peak, s.rows) for s in st.settled], sorted(st.keys))
        for b, st in settled_quota_ids(index, dists, volumes, keys).items()
    }
    assert found == {
        "b1": (
            [
                (PRODUCE_KEY, 1, "a", "x", None, 1000.0, 7),
                (PRODUCE_KEY, 5, "b", "y", None, 499.0, 7),
                (conn, 1, None, None, "10.0.0.1", 10.0, 7),
            ],
            sorted(keys),
        ),
        "b2": ([], [CONSUMER_KEY]),
        "b3": ([], sorted([CONSUMER_KEY, conn])),
        "b4": ([], sorted([PRODUCE_KEY, conn])),
        "b5": ([], sorted([PRODUCE_KEY, conn])),
    }
    # a key the distributions were not computed for is never settled whole
    assert settled_quota_ids(index, dists, volumes, [PRODUCE_KEY])["b2"].keys == frozenset()
    # the names of each broker's groups; the keys whose rows they all name: with a user-level group among them,
    # not the client keys (its rows' client-ids are not known)
    b1 = settled_quota_ids(index, dists, volumes, keys)["b1"]
    assert b1.names == ({"a", "b"}, {"x", "y"}, {"10.0.0.1"}) and b1.named == {conn}
    pairs_only = {gk: per for gk, per in dists.items() if gk[0].user is None or gk[0].client_id is not None}
    assert settled_quota_ids(index, pairs_only, volumes, keys)["b1"].named == set(keys)
