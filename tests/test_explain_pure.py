"""explain's pure core: the broker's precedence (Kafka's own test vectors, a property test against a separately
written reference), quota-ids, the chain, the steady-state throttle, the sampled-Rate replay, input parsing."""

from __future__ import annotations

import io
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.explain import (
    ANONYMOUS,
    Connection,
    LineEncoder,
    ThrottleModel,
    explain_json,
    explain_line,
    parse_observed,
)
from kquotactl.core.keys import CLIENT_KEYS
from kquotactl.core.precedence import ChainStatus, QuotaIndex, Sharing
from kquotactl.core.rate import SampledRate, replay, replay_token_bucket
from kquotactl.core.throttle import steady_state_throttle_ms
from kquotactl.core.throttlemath import java_int, java_round
from kquotactl.inputs import InputFileError, read_connections, read_events

P = "producer_byte_rate"

# -- ClientQuotaManagerTest.testQuotaConfigPrecedence -------------------------------------------------

PRECEDENCE_SETUP = {
    Entity(user=DEFAULT): 1000,
    Entity(client_id=DEFAULT): 2000,
    Entity(user=DEFAULT, client_id=DEFAULT): 3000,
    Entity(user="userA"): 4000,
    Entity(user="userA", client_id="client1"): 5000,
    Entity(user="userB"): 6000,
    Entity(user="userB", client_id="client1"): 7000,
    Entity(user="userB", client_id=DEFAULT): 8000,
    Entity(user="userC"): 10000,
    Entity(client_id="client1"): 9000,
}


def index_of(quotas: dict[Entity, int], key: str = P, **kw) -> QuotaIndex:
    return QuotaIndex({e: {key: v} for e, v in quotas.items()}, **kw)


# (user, client, expected bound) — Kafka's table; "shared" rows are checked through the quota-id below.
PRECEDENCE_VECTORS = [
    ("userA", "client1", 5000),
    ("userA", "client2", 4000),
    ("userA", "client3", 4000),
    ("userB", "client1", 7000),
    ("userB", "client2", 8000),
    ("userB", "client3", 8000),
    ("userD", "client1", 3000),
    ("userD", "client2", 3000),
    ("userE", "client1", 3000),
    ("userC", "client1", 10000),
]


@pytest.mark.parametrize(("user", "client", "bound"), PRECEDENCE_VECTORS)
def test_kafka_precedence_table(user: str, client: str, bound: int) -> None:
    assert index_of(PRECEDENCE_SETUP).resolve(P, user, client).limit == bound


def test_kafka_precedence_user_quota_is_shared_by_the_users_clients() -> None:
    idx = index_of(PRECEDENCE_SETUP)
    a2, a3 = idx.resolve(P, "userA", "client2"), idx.resolve(P, "userA", "client3")
    assert a2.quota_id_tags == a3.quota_id_tags == ("userA", "")  # one sensor: client3 is throttled by client2's bytes
    assert a2.sharing is Sharing.USER and a2.level == 3
    b2, b3 = idx.resolve(P, "userB", "client2"), idx.resolve(P, "userB", "client3")
    assert (b2.level, b2.sharing) == (2, Sharing.PAIR)  # (userB, <default>) is exclusive per pair
    assert b2.quota_id_tags != b3.quota_id_tags


def test_kafka_precedence_after_removing_default_user_client() -> None:
    setup = dict(PRECEDENCE_SETUP)
    del setup[Entity(user=DEFAULT, client_id=DEFAULT)]
    idx = index_of(setup)
    assert idx.resolve(P, "userD", "client1").limit == 1000
    assert idx.resolve(P, "userE", "client4").limit == 1000
    f4, f5 = idx.resolve(P, "userF", "client4"), idx.resolve(P, "userF", "client5")
    assert f4.limit == f5.limit == 1000 and f4.quota_id_tags == f5.quota_id_tags == ("userF", "")  # shared
    assert f4.level == 6


def test_kafka_precedence_after_removing_default_user_too() -> None:
    setup = dict(PRECEDENCE_SETUP)
    del setup[Entity(user=DEFAULT, client_id=DEFAULT)]
    del setup[Entity(user=DEFAULT)]
    idx = index_of(setup)
    f5, g5 = idx.resolve(P, "userF", "client5"), idx.resolve(P, "userG", "client5")
    assert f5.limit == g5.limit == 2000
    assert f5.quota_id_tags == g5.quota_id_tags == ("", "client5")  # the client default is shared across users
    assert f5.level == 8 and f5.sharing is Sharing.CLIENT


def test_each_key_resolves_independently() -> None:
    idx = QuotaIndex({Entity(user="alice"): {P: 100}, Entity(client_id=DEFAULT): {"consumer_byte_rate": 200}})
    by_key = {r.key: r for r in idx.resolve_all("alice", "app")}
    assert (by_key[P].level, by_key[P].limit) == (3, 100)
    assert (by_key["consumer_byte_rate"].level, by_key["consumer_byte_rate"].limit) == (8, 200)
    assert by_key["request_rate"].limit is None and by_key["request_rate"].level is None
    assert list(by_key) == list(CLIENT_KEYS)


def test_level_2_exists_although_kip55_omits_it() -> None:
    idx = index_of({Entity(user="u", client_id=DEFAULT): 1, Entity(user="u"): 2})
    r = idx.resolve(P, "u", "c")
    assert (r.level, r.limit, r.entity_path) == (2, 1, "users/u/clients/<default>")


def test_quota_id_sanitizes_the_user_but_not_the_client_id() -> None:
    idx = index_of({Entity(user="CN=user1", client_id="client1?@%"): 5})
    r = idx.resolve(P, "CN=user1", "client1?@%")
    assert r.quota_id_tags == ("CN%3Duser1", "client1?@%")
    assert r.entity_path == "users/CN%3Duser1/clients/client1%3F%40%25"


def test_a_user_named_default_is_not_the_default() -> None:
    idx = index_of({Entity(user=DEFAULT): 1, Entity(user="<default>"): 2})
    assert idx.resolve(P, "<default>", "c").limit == 2
    assert idx.resolve(P, "<default>", "c").entity_path == "users/%3Cdefault%3E"
    assert idx.resolve(P, "bob", "c").limit == 1


# -- the broker's two phases with empty names ----------------------------------------------------------


def test_empty_client_id_skips_pair_and_client_levels() -> None:
    # (alice, <default>) is found first, so the tags are (alice, ""), looked up at levels 3 and 6 only.
    idx = index_of({Entity(user="alice", client_id=DEFAULT): 1, Entity(client_id=DEFAULT): 2})
    r = idx.resolve(P, "alice", "")
    assert r.limit is None and r.quota_id_tags == ("alice", "")
    chain = {s.level: s.status for s in idx.chain(P, "alice", "")}
    assert chain[2] is ChainStatus.IGNORED and chain[8] is ChainStatus.IGNORED


def test_empty_client_id_reaches_user_levels() -> None:
    idx = index_of({Entity(user="alice", client_id=DEFAULT): 1, Entity(user=DEFAULT): 3})
    r = idx.resolve(P, "alice", "")
    assert (r.level, r.limit, r.quota_id_tags) == (6, 3, ("alice", ""))


def test_empty_client_id_never_reaches_client_defaults() -> None:
    idx = index_of({Entity(client_id=DEFAULT): 2})
    assert idx.resolve(P, "alice", "").limit is None


def test_empty_user_never_gets_user_quotas() -> None:
    idx = index_of({Entity(user=DEFAULT): 1, Entity(user=DEFAULT, client_id="c"): 5, Entity(client_id=DEFAULT): 2})
    # level 4 is found first: tags ("", "c") are looked up at levels 7, 8 only
    assert idx.resolve(P, "", "c").limit == 2
    # level 6 found first: tags ("", "") reach nothing
    assert idx.resolve(P, "", "d").limit is None


# -- the fast path and the static 9th level ------------------------------------------------------------


def test_fast_path_changes_only_the_quota_id_of_unlimited_keys() -> None:
    idx = index_of({Entity(user="alice"): 1})  # only user-level quotas: the (user, "") fast path
    r = idx.resolve("consumer_byte_rate", "bob", "c")
    assert r.limit is None and r.quota_id_tags == ("bob", "")
    idx2 = index_of({Entity(user="alice"): 1}, per_key_levels=True)  # KRaft: consumer manager has no quotas
    assert idx2.resolve("consumer_byte_rate", "bob", "c").quota_id_tags == ("", "c")


def test_static_default_is_a_9th_level_for_byte_rates() -> None:
    idx = index_of({Entity(user="alice"): 1}, static_defaults={P: 777})
    r = idx.resolve(P, "bob", "c")
    assert (r.level, r.limit, r.entity, r.quota_id_tags) == (9, 777, None, ("", "c"))
    assert idx.resolve(P, "alice", "c").level == 3
    steps = idx.chain(P, "alice", "c")
    assert [s.level for s in steps] == list(range(1, 10)) and steps[-1].status is ChainStatus.SHADOWED
    assert idx.resolve("request_percentage", "bob", "c").limit is None
    with pytest.raises(ValueError):
        QuotaIndex({}, static_defaults={"request_percentage": 1})


def test_chain_marks_applied_not_set_shadowed() -> None:
    idx = index_of({Entity(user="alice", client_id="app"): 1, Entity(user="alice"): 2, Entity(client_id=DEFAULT): 3})
    steps = idx.chain(P, "alice", "app")
    status = [s.status for s in steps]
    assert status[0] is ChainStatus.APPLIED
    assert status[2] is ChainStatus.SHADOWED and status[7] is ChainStatus.SHADOWED
    assert all(s is ChainStatus.NOT_SET for i, s in enumerate(status) if i not in (0, 2, 7))
    assert steps[1].entity_path == "users/alice/clients/<default>"


def test_ip_resolution() -> None:
    idx = QuotaIndex(
        {Entity(ip="10.0.0.1"): {"connection_creation_rate": 5}, Entity(ip=DEFAULT): {"connection_creation_rate": 20}}
    )
    assert (idx.resolve_ip("10.0.0.1").level, idx.resolve_ip("10.0.0.1").limit) == (1, 5)
    r = idx.resolve_ip("10.0.0.2")
    assert (r.level, r.limit, r.entity_path, r.quota_id_tags) == (2, 20, "ips/<default>", None)
    assert QuotaIndex({}).resolve_ip("10.0.0.2").limit is None
    assert [s.status for s in idx.chain_ip("10.0.0.1")] == [ChainStatus.APPLIED, ChainStatus.SHADOWED]


# -- property: the resolver agrees with a straightforward reference of the 8-level rule ------------------


def reference_8_levels(quotas: dict[Entity, dict[str, int]], key: str, user: str, client: str):
    """Written separately from resolve.py: try the 8 entities in KIP-55 + level 2 order."""
    candidates = [
        Entity(user=user, client_id=client),
        Entity(user=user, client_id=DEFAULT),
        Entity(user=user),
        Entity(user=DEFAULT, client_id=client),
        Entity(user=DEFAULT, client_id=DEFAULT),
        Entity(user=DEFAULT),
        Entity(client_id=client),
        Entity(client_id=DEFAULT),
    ]
    for n, e in enumerate(candidates, start=1):
        if key in quotas.get(e, {}):
            return n, quotas[e][key]
    return None, None


NAMES = ["u1", "u2", "c1", "c2", "a b", "x/y"]
name_st = st.sampled_from([*NAMES, DEFAULT])
entity_st = st.one_of(
    st.builds(lambda u: Entity(user=u), name_st),
    st.builds(lambda c: Entity(client_id=c), name_st),
    st.builds(lambda u, c: Entity(user=u, client_id=c), name_st, name_st),
)
config_st = st.dictionaries(st.sampled_from(CLIENT_KEYS), st.integers(1, 10**6), min_size=1, max_size=3)
quotas_st = st.dictionaries(entity_st, config_st, max_size=12)


@settings(max_examples=300, deadline=None)
@given(quotas_st, st.sampled_from(NAMES), st.sampled_from(NAMES), st.booleans())
def test_resolver_matches_reference(quotas, user, client, per_key) -> None:
    idx = QuotaIndex(quotas, per_key_levels=per_key)
    for key in CLIENT_KEYS:
        r = idx.resolve(key, user, client)
        assert (r.level, r.limit) == reference_8_levels(quotas, key, user, client)
        if r.level in (1, 2, 4, 5):
            assert r.quota_id_tags == (Entity(user=user).path[6:], client)
        elif r.level in (3, 6):
            assert r.quota_id_tags == (Entity(user=user).path[6:], "")
        elif r.level in (7, 8):
            assert r.quota_id_tags == ("", client)
        applied = [s for s in idx.chain(key, user, client) if s.status is ChainStatus.APPLIED]
        assert [s.level for s in applied] == ([r.level] if r.level else [])


def reference_two_phase(quotas, key: str, user: str, client: str):
    """The broker's slow path, transcribed separately: tags from levels 1-6, then the limit from the tags."""

    def has(e: Entity | None) -> bool:
        return e is not None and key in quotas.get(e, {})

    u = Entity(user=user) if user else None
    uc = Entity(user=user, client_id=client) if user and client else None
    ud = Entity(user=user, client_id=DEFAULT) if user else None
    dc = Entity(user=DEFAULT, client_id=client) if client else None
    if has(uc) or has(ud):
        tags = (user, client)
    elif has(u):
        tags = (user, "")
    elif has(dc) or has(Entity(user=DEFAULT, client_id=DEFAULT)):
        tags = (user, client)
    elif has(Entity(user=DEFAULT)):
        tags = (user, "")
    else:
        tags = ("", client)
    order: list[Entity | None]
    if tags[0] and tags[1]:
        order = [uc, ud, dc, Entity(user=DEFAULT, client_id=DEFAULT)]
    elif tags[0]:
        order = [u, Entity(user=DEFAULT)]
    elif tags[1]:
        order = [Entity(client_id=client), Entity(client_id=DEFAULT)]
    else:
        order = []
    for e in order:
        if has(e):
            return quotas[e][key]
    return None


@settings(max_examples=300, deadline=None)
@given(quotas_st, st.sampled_from(["", *NAMES]), st.sampled_from(["", *NAMES]))
def test_resolver_matches_broker_two_phase_with_empty_names(quotas, user, client) -> None:
    idx = QuotaIndex(quotas)
    for key in CLIENT_KEYS:
        assert idx.resolve(key, user, client).limit == reference_two_phase(quotas, key, user, client)


# -- throttle: steady state ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "observed", "limit", "num", "size", "expected"),
    [
        (P, 600, 500, 11, 1, 2200),  # (600-500)/500 x 11 s
        (P, 500, 500, 11, 1, 0),  # at the limit: no delay
        (P, 100, 500, 11, 1, 0),
        (P, 2000, 1000, 11, 1, 11000),  # byte rates are not capped
        (P, 1000.5, 1000, 1, 1, 1),  # 0.5 ms rounds half up (Java Math.round), not to even
        (P, 1002.5, 1000, 1, 1, 3),  # 2.5 -> 3
        ("request_percentage", 100, 50, 11, 1, 1000),  # capped at one window sample
        ("request_rate", 120, 100, 11, 1, 1000),
        ("request_percentage", 51, 50, 11, 1, 220),
        ("connection_creation_rate", 40, 20, 11, 2, 2000),  # cap = quota.window.size.seconds
        (P, 600, 500, 30, 2, 12000),
        (P, 600, None, 11, 1, 0),  # unlimited
    ],
)
def test_steady_state_throttle(key, observed, limit, num, size, expected) -> None:
    assert steady_state_throttle_ms(key, observed, limit, num, size) == expected


# -- throttle: Kafka's sampled Rate ----------------------------------------------------------------------

KAFKA_TEST_EVENTS = [(t, 400.0) for t in range(0, 10000, 1000)] + [(10500, 2300.0)]


@pytest.mark.parametrize("legacy", [False, True])
def test_replay_reproduces_kafka_test_quota_violation(legacy: bool) -> None:
    steps = replay(KAFKA_TEST_EVENTS, 500, legacy=legacy)
    assert [s.throttle_ms for s in steps] == [0] * 10 + [2100]
    assert (steps[-1].rate, steps[-1].window_ms) == (600.0, 10500)


def test_fresh_sensor_is_measured_over_samples_minus_one_windows() -> None:
    rate = SampledRate(11, 1000)
    rate.record(5000, 0)
    assert rate.window_size_ms(0) == 10000 and rate.measure(0) == 500.0
    [step] = replay([(0, 11000)], 500)
    assert step.throttle_ms == 12000  # (1100-500)/500 x 10000


def test_replay_caps_and_unrecords() -> None:
    [step] = replay([(0, 11000)], 500, cap_ms=1000)
    assert step.throttle_ms == 1000
    steps = replay([(0, 11000), (10, 100)], 500, unrecord_throttled=True)
    assert steps[1].throttle_ms == 0 and steps[1].rate == pytest.approx(100 / 10.01)  # only the 100 B counts


def test_old_samples_expire() -> None:
    rate = SampledRate(11, 1000)
    rate.record(10000, 0)
    rate.record(1, 20000)  # 20 s later the first sample is purged
    assert rate.total(20000) == 1
    with pytest.raises(ValueError):
        replay([(10, 1), (5, 1)], 500)


# -- JSON contract and inputs ----------------------------------------------------------------------------


def test_json_contract() -> None:
    idx = QuotaIndex({Entity(user="alice"): {P: 1048576}, Entity(ip=DEFAULT): {"connection_creation_rate": 20}})
    conn = Connection.of("alice", "app1")
    data = explain_json(idx, conn, ThrottleModel({P: 2 * 1048576}))
    assert data["connection"] == {"user": "alice", "client-id": "app1"}
    assert [q["key"] for q in data["quotas"]] == list(CLIENT_KEYS)
    p = data["quotas"][0]
    assert p == {
        "key": P,
        "limit": 1048576,
        "level": 3,
        "entity_path": "users/alice",
        "quota_id": {"user": "alice", "client-id": ""},
        "sharing": "shared by every client of user alice",
        "throttle_ms": 11000,
    }
    assert all("throttle_ms" not in q for q in data["quotas"][1:])
    unl = data["quotas"][1]
    assert (unl["limit"], unl["level"], unl["entity_path"]) == (None, None, None)
    ipd = explain_json(idx, Connection.of(ip="10.1.2.3"))
    assert ipd == {
        "connection": {"ip": "10.1.2.3"},
        "quotas": [
            {
                "key": "connection_creation_rate",
                "limit": 20,
                "level": 2,
                "entity_path": "ips/<default>",
                "sharing": "every connection from 10.1.2.3 (each ip has its own count)",
            }
        ],
    }
    json.dumps(explain_json(idx, conn, chain=True))  # serializable with the chain too


def test_connection_defaults_and_ip_canonical_form() -> None:
    assert Connection.of(client_id="c") == Connection(ANONYMOUS, "c", None)
    assert Connection.of(user="u") == Connection("u", "", None)
    assert Connection.of(ip="2001:DB8:0::1").ip == "2001:db8::1"


def test_parse_observed() -> None:
    assert parse_observed(["producer_byte_rate=2MiB", "request_percentage = 12.5"]) == {
        P: 2097152.0,
        "request_percentage": 12.5,
    }
    for bad in ["producer_byte_rat=5", "producer_byte_rate", "producer_byte_rate=fast", "request_rate=-1"]:
        with pytest.raises(Exception, match=r"."):
            parse_observed([bad])


def test_read_connections_csv_and_json_lines() -> None:
    csv_text = "user,client-id,ip\nalice,app1,\n,app2,\nbob,,10.0.0.1\n,,10.0.0.2\n"
    conns = list(read_connections(io.StringIO(csv_text)))
    assert conns == [
        Connection("alice", "app1", None),
        Connection(ANONYMOUS, "app2", None),
        Connection("bob", "", "10.0.0.1"),
        Connection(None, None, "10.0.0.2"),
    ]
    jl = '{"user": "alice", "client-id": "app1"}\n\n{"ip": "10.0.0.1"}\n{"client_id": ""}\n'
    assert list(read_connections(io.StringIO(jl))) == [
        Connection("alice", "app1", None),
        Connection(None, None, "10.0.0.1"),
        Connection(ANONYMOUS, "", None),
    ]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("name,age\nx,1\n", "header must name"),
        ("user,ip\nalice,not-an-ip\n", "line 2"),
        ('{"user": "a"}\n[1]\n', "line 2"),
        ('{"user": "a"}\n{"ip": "1.2.3.999"}\n', "line 2"),
        ("user\n\na,b\n", "line 3"),
    ],
)
def test_read_connections_errors_name_the_line(text: str, match: str) -> None:
    with pytest.raises(InputFileError, match=match):
        list(read_connections(io.StringIO(text)))


def test_read_events() -> None:
    text = '# kafka test\ntime_ms,value\n0,400\n1000 400\n{"time_ms": 2000, "value": 5}\n'
    assert read_events(io.StringIO(text)) == [(0, 400.0), (1000, 400.0), (2000, 5.0)]
    with pytest.raises(InputFileError, match="line 2"):
        read_events(io.StringIO("0 1\n1 2 3\n"))
    with pytest.raises(InputFileError, match="before the previous"):
        read_events(io.StringIO("5 1\n1 1\n"))


@settings(max_examples=200, deadline=None)
@given(
    quotas_st,
    st.text(max_size=8),
    st.text(max_size=8),
    st.sampled_from([None, "10.0.0.1", "::1"]),
    st.booleans(),
    st.booleans(),
)
def test_bulk_json_line_equals_the_json_contract(quotas, user, client, ip, observe, static) -> None:
    quotas = {**quotas, Entity(ip=DEFAULT): {"connection_creation_rate": 3}}
    idx = QuotaIndex(quotas, static_defaults={P: 1234} if static else None)
    conn = Connection.of(user, client, ip)
    throttle = (
        ThrottleModel({P: 5000.0, "request_percentage": 99.5, "connection_creation_rate": 9}) if observe else None
    )
    assert json.loads(explain_line(idx, conn, throttle)) == explain_json(idx, conn, throttle)
    encoder = LineEncoder(idx, throttle)  # reused across connections, as the CLI does: its caches must not leak
    for other in (conn, Connection.of("u1", "c1"), Connection.of(user, "c2"), conn):
        assert json.loads(encoder.line(other)) == explain_json(idx, other, throttle)
    if ip:
        ip_only = Connection.of(ip=ip)
        assert json.loads(explain_line(idx, ip_only, throttle)) == explain_json(idx, ip_only, throttle)


@settings(max_examples=200, deadline=None)
@given(quotas_st, st.sampled_from(["", *NAMES]), st.sampled_from(["", *NAMES]), st.booleans(), st.booleans())
def test_bulk_resolution_equals_single_key_resolution(quotas, user, client, per_key, static) -> None:
    idx = QuotaIndex(quotas, per_key_levels=per_key, static_defaults={P: 99} if static else None)
    bulk = idx.resolve_all_raw(user, client)
    single = [idx.resolve(k, user, client) for k in CLIENT_KEYS]
    assert bulk == [(r.key, r.limit, r.level, r.entity, r.sharing, r.quota_id_tags) for r in single]


def test_token_bucket_replay_for_controller_mutations() -> None:
    # quota 5/s, 11 x 1 s: a burst of 55 credits. 60 mutations at once leave -5 credits: 1 s to refill.
    events = [(0, 60), (500, 0), (1000, 1), (3000, 5)]
    steps = replay_token_bucket(events, 5, mode="permissive")  # recorded, then checked
    assert [s.throttle_ms for s in steps] == [1000, 500, 200, 0]
    assert steps[0].rate == -5
    assert not any(s.rejected for s in steps)
    # strict (the default): checked first; the request at 500 ms finds -2.5 credits and is refused, not recorded
    steps = replay_token_bucket(events, 5)
    assert [(s.throttle_ms, s.rejected) for s in steps] == [(0, False), (500, True), (0, False), (0, False)]
    assert [s.rate for s in steps] == [-5, -2.5, -1, 4]
    # the bucket never holds more than the burst
    assert replay_token_bucket([(0, 0), (100000, 56)], 5, mode="permissive")[-1].throttle_ms == 200
    with pytest.raises(ValueError, match="mutation mode"):
        replay_token_bucket(events, 5, mode="lenient")


def test_zero_and_negative_limits_replay_as_java_computes_them() -> None:
    # limit 0: (rate - 0) / 0 = +Infinity; Math.round -> Long.MAX_VALUE; .toInt -> -1 (no throttle), or the cap
    assert [s.throttle_ms for s in replay([(0, 5)], 0)] == [-1]
    assert [s.throttle_ms for s in replay([(0, 5)], 0, cap_ms=1000)] == [1000]
    # a negative limit divides to a negative throttle; a -0.0 one to -Infinity -> Long.MIN_VALUE -> 0
    assert replay([(0, 5)], -5)[0].throttle_ms == -11000
    assert replay([(0, 5)], -0.0)[0].throttle_ms == 0
    # one sample, before Kafka 3.3: a 0 ms window; 5 / 0 = Infinity, and the throttle (Inf - q) / q x 0 = NaN -> 0
    [step] = replay([(0, 5)], 1, samples=1, legacy=True, min_window_1ms=False)
    assert (step.rate, step.window_ms, step.throttle_ms) == (math.inf, 0, 0)
    # a throttle beyond 2^31 ms wraps as Java's long -> int narrowing does
    assert replay([(0, 1e9)], 0.001)[0].throttle_ms == java_int(java_round((1e8 - 0.001) / 0.001 * 10000))


def test_ip_quotas_match_by_address_whatever_the_znode_spelling() -> None:
    idx = QuotaIndex(
        {
            Entity.from_path("ips/%3A%3A1"): {"connection_creation_rate": 7},  # sanitized: a host name to a broker
            Entity.from_path("ips/2001:DB8:0::1"): {"connection_creation_rate": 8},  # by kafka-configs (raw)
            Entity.from_path("ips/::ffff:10.0.0.1"): {"connection_creation_rate": 9},  # IPv4-mapped: 10.0.0.1
        }
    )
    assert idx.resolve_ip("::1").limit is None  # InetAddress.getByName("%3A%3A1") asks the resolver
    r = idx.resolve_ip("2001:db8::1")
    assert (r.limit, r.entity_path) == (8, "ips/2001:DB8:0::1")  # the path is the real node's
    assert idx.chain_ip("2001:db8:0:0::1")[0].status is ChainStatus.APPLIED
    assert idx.resolve_ip("10.0.0.1").limit == 9
    assert [e.path for e in idx.ip_names()] == ["ips/%3A%3A1"]


def test_notes_on_stored_state_in_json_and_lines_alike() -> None:
    from kquotactl.core.changes import QuotaRecord

    idx = QuotaIndex(
        [
            QuotaRecord(Entity(ip="10.0.0.1"), {"connection_creation_rate": 5}),
            QuotaRecord(Entity(ip="::ffff:10.0.0.1"), {"connection_creation_rate": 6}),
            QuotaRecord(Entity(ip="kafka-1"), {"connection_creation_rate": 7}),
            QuotaRecord(Entity(user="alice"), {"request_percentage": 0.0}, unparsed={"producer_byte_rate": " 7"}),
        ]
    )
    conn = Connection.of(user="alice", client_id="app", ip="::ffff:10.0.0.1")
    assert conn.ip == "10.0.0.1"
    data = explain_json(idx, conn)
    assert json.loads(explain_line(idx, conn)) == data
    notes = " | ".join(data["notes"])
    assert "users/alice stores producer_byte_rate as ' 7': not applied: brokers cannot parse it" in notes
    assert "ips/::ffff:10.0.0.1 names 10.0.0.1" in notes and "2 stored names are the address 10.0.0.1" in notes
    assert "ips/kafka-1 applies to 10.0.0.1 only if the broker's resolver maps 'kafka-1' to it" in notes
    by_key = {q["key"]: q for q in data["quotas"]}
    assert by_key["producer_byte_rate"]["limit"] is None and by_key["request_percentage"]["limit"] == 0.0
    assert "notes" not in explain_json(QuotaIndex({Entity(user="bob"): {"producer_byte_rate": 1}}), conn)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (2.5, 3),
        (-2.5, -2),
        (-0.5, 0),
        (0.49999999999999994, 0),  # floor(x + 0.5) in doubles would say 1; Java's Math.round says 0
        (4503599627370497.0, 4503599627370497),  # 2^52 + 1: x + 0.5 rounds to even in doubles
        (math.nan, 0),
        (math.inf, 2**63 - 1),
        (-math.inf, -(2**63)),
        (1e300, 2**63 - 1),
    ],
)
def test_java_round_is_math_round(x: float, expected: int) -> None:
    assert java_round(x) == expected


def test_java_int_narrows_like_a_cast() -> None:
    assert [java_int(v) for v in (2**63 - 1, -(2**63), 2**31, 2**32 + 5, -1)] == [-1, 0, -(2**31), 5, -1]
