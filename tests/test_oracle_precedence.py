"""Differential: kquotactl's resolver (:class:`QuotaIndex`) against the broker's own quota managers.

The Java driver (``testing/oracle/v*/PrecedenceOracle.java``) builds a broker's real ``QuotaManagers`` and
``ConnectionQuotas`` from a ``KafkaConfig`` (the oracle lines of ``kquotactl.testing.versions``), installs a random
quota set exactly as that
broker is fed (ZooKeeper: the config handlers with the znode's sanitized names and stored strings, every manager
told of every entity; KRaft: ``ClientQuotaMetadataManager`` with replayed ``ClientQuotaRecord``\\ s, only the
manager of each key told), and answers, for random connections, each of the four client keys' limit
(``ClientQuotaManager.quota``) and metric tags (the quota callback's ``quotaMetricTags``), and each ip's
connection-rate limit. kquotactl must give the same limit and the same quota-id through ``resolve``,
``resolve_all`` and the bulk ``resolve_all_raw``.

Empty entity names are not drawn: both brokers refuse them (``Empty user not supported``), and ZooKeeper cannot
hold an empty znode name. ip *spellings* are not exercised here (canonical literals only).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fixtures_oracle import NEWEST_VERSION, ORACLE_VERSIONS, assert_no_mismatches, replay_hint
from kquotactl.core.entities import DEFAULT, Entity, Name
from kquotactl.core.kafkaversions import behaviour
from kquotactl.core.keys import INT_MAX, KEYS, LONG_MAX, Number, format_value
from kquotactl.core.precedence import STATIC_CONFIGS, QuotaIndex, quota_id_tags
from kquotactl.testing.oracle import SOURCES, _sources, cases_per_run
from kquotactl.testing.versions import RELEASES

KAFKA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
UNLIMITED = float(LONG_MAX)  # ClientQuotaManager.quota(...) when nothing applies
CONNECTIONS_PER_SET = 6

# Names that collide with the default's spellings, sanitizer-special characters, unicode, look-alikes.
NAMES = (
    "alice",
    "bob",
    "<default>",
    "%3Cdefault%3E",
    "default",
    "ANONYMOUS",
    "CN=a,O=b c",
    "a+b",
    "a*b~",
    "100%",
    "%41",
    "x/y",
    " ",
    "ünï",
    "😀",
)
IPS = ("1.2.3.4", "10.0.0.1", "::1", "2001:db8::1")
LONG_VALUES = (0, -1, -1000, 1, 1024, 5_000_000, 2**53, LONG_MAX)
DOUBLE_VALUES = (0.0, -2.5, 0.001, 1.0, 50.0, 200.0, 1e9)
IP_VALUES = (0, 1, 10, INT_MAX)
STATIC_VALUES = (1, 5000, LONG_MAX)  # quota.*.default: LONG, atLeast(1)


def _modes(version: str) -> tuple[str, ...]:
    release = RELEASES[version]
    return ("zk",) * release.zookeeper + ("kraft",) * release.kraft


def _value(rng: random.Random, key: str) -> Number:
    return rng.choice(LONG_VALUES if KEYS[key].integral else DOUBLE_VALUES)


def _quota_set(rng: random.Random, version: str) -> dict[str, Any]:
    mode = rng.choice(_modes(version))
    users = rng.sample(NAMES, rng.randint(1, 3))
    clients = rng.sample(NAMES, rng.randint(1, 3))
    quotas: dict[Entity, dict[str, Number]] = {}
    for _ in range(rng.randint(0, 7)):
        u: Name | None = rng.choice((None, DEFAULT, *users))
        c: Name | None = rng.choice((None, DEFAULT, *clients))
        if u is None and c is None:
            continue
        keys = rng.sample(KAFKA_KEYS, rng.randint(1, 4))
        if mode == "zk" and rng.random() < 0.1:
            keys.append("request_rate")  # not a broker key: ignored, but the entity still reaches every manager
        quotas[Entity.of(user=u, client_id=c)] = {k: _value(rng, k) for k in keys}
    for _ in range(rng.randint(0, 2)):
        ip: Name = rng.choice((DEFAULT, *IPS))
        quotas[Entity.of(ip=ip)] = {"connection_creation_rate": rng.choice(IP_VALUES)}
    static: dict[str, Number] = {}
    if version == "2.8" and rng.random() < 0.4:
        for key in rng.sample(sorted(STATIC_CONFIGS), rng.randint(1, 2)):
            static[key] = rng.choice(STATIC_VALUES)
    conn_users = [*users, "", "ANONYMOUS", "zed", *rng.sample(NAMES, 2)]
    conn_clients = [*clients, "", "other", *rng.sample(NAMES, 2)]
    connections = [(rng.choice(conn_users), rng.choice(conn_clients)) for _ in range(CONNECTIONS_PER_SET)]
    return {
        "mode": mode,
        "quotas": quotas,
        "static": static,
        "connections": connections,
        "ips": [*IPS, "9.9.9.9"],
    }


def _wire_entity(e: Entity) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for part, name in (("user", e.user), ("client-id", e.client_id), ("ip", e.ip)):
        if name is not None:
            out[part] = None if name is DEFAULT else str(name)
    return out


def _request(case: dict[str, Any]) -> dict[str, Any]:
    return {
        "mode": case["mode"],
        "static": {STATIC_CONFIGS[k]: str(v) for k, v in case["static"].items()} or None,
        "quotas": [
            {"entity": _wire_entity(e), "config": {k: format_value(KEYS[k], v) for k, v in cfg.items()}}
            for e, cfg in case["quotas"].items()
        ],
        "connections": [{"user": u, "client-id": c} for u, c in case["connections"]],
        "ips": case["ips"],
    }


def _limit(value: Number | None, unlimited: float) -> float:
    return unlimited if value is None else float(value)


def _ours(case: dict[str, Any]) -> dict[str, Any]:
    index = QuotaIndex(case["quotas"], static_defaults=case["static"], per_key_levels=case["mode"] == "kraft")
    conns = []
    for user, client in case["connections"]:
        by_resolve = []
        for key in KAFKA_KEYS:
            r = index.resolve(key, user, client)
            assert r.quota_id_tags is not None
            assert index.applied_entity(key, user, client) == r.entity  # what lint asks
            if r.limit is not None:  # who shares it (explain's wording) follows from the broker's tags
                assert quota_id_tags(r.sharing, user, client) == r.quota_id_tags, (key, user, client, r)
            by_resolve.append(
                {
                    "key": key,
                    "limit": _limit(r.limit, UNLIMITED),
                    "user": r.quota_id_tags[0],
                    "client-id": r.quota_id_tags[1],
                }
            )
        by_all = [
            {
                "key": r.key,
                "limit": _limit(r.limit, UNLIMITED),
                "user": r.quota_id_tags[0],
                "client-id": r.quota_id_tags[1],
            }
            for r in index.resolve_all(user, client)
            if r.key in KAFKA_KEYS and r.quota_id_tags is not None
        ]
        by_raw = [
            {"key": key, "limit": _limit(limit, UNLIMITED), "user": qid[0], "client-id": qid[1]}
            for key, limit, _level, _entity, _sharing, qid in index.resolve_all_raw(user, client)
            if key in KAFKA_KEYS
        ]
        # The three entry points must agree with each other as well as with Kafka.
        conns.append(by_resolve if by_all == by_resolve and by_raw == by_resolve else [by_resolve, by_all, by_raw])
    ips = [int(_limit(index.resolve_ip(ip).limit, INT_MAX)) for ip in case["ips"]]
    return {"connections": conns, "ips": ips}


def _differences(case: dict[str, Any], ours: dict[str, Any], kafka: dict[str, Any]) -> dict[str, Any]:
    """A mismatch made readable: the quota set, then only the answers that differ (connection, ours, Kafka's)."""
    diffs: list[Any] = []
    for (user, client), a, b in zip(case["connections"], ours["connections"], kafka["connections"], strict=True):
        if a != b:
            if len(a) == 3 and isinstance(a[0], list):
                diffs.append({"connection": (user, client), "resolve/resolve_all/resolve_all_raw disagree": a})
                continue
            diffs += [
                {"connection": (user, client), "ours": x, "kafka": y} for x, y in zip(a, b, strict=True) if x != y
            ]
    ips = zip(case["ips"], ours["ips"], kafka["ips"], strict=True)
    diffs += [{"ip": ip, "ours": x, "kafka": y} for ip, x, y in ips if x != y]
    return {
        "mode": case["mode"],
        "static": case["static"],
        "quotas": {e.path: cfg for e, cfg in case["quotas"].items()},
        "differences": diffs,
    }


@pytest.mark.jvm
@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_precedence_matches_the_brokers_quota_managers(kafka_oracle, oracle_seed, version):
    rng = random.Random(oracle_seed)
    sets = max(1, cases_per_run(3000) // CONNECTIONS_PER_SET)
    cases = [_quota_set(rng, version) for _ in range(sets)]
    kafka = kafka_oracle(version, "PrecedenceOracle").ask_many([_request(c) for c in cases])
    errors = [a for a in kafka if "error" in a]
    assert not errors, f"{replay_hint(oracle_seed, version)}: {errors[:3]}"
    ours = [_ours(c) for c in cases]
    assert_no_mismatches(cases, ours, kafka, oracle_seed, version, limit=2, show=_differences)


@pytest.mark.jvm
@pytest.mark.parametrize("version", [v for v in ORACLE_VERSIONS if RELEASES[v].kraft])
def test_a_brokers_quota_ids_after_the_last_quota_is_removed(kafka_oracle, oracle_seed, version):
    """KAFKA-19282 (4.2): a quota type's enabled bit is cleared when its last quota goes, so a broker whose quotas
    were all removed uses the quota-ids of a fresh broker, which is what kquotactl resolves. Before it, the bits
    stay set: kquotactl's answer is a freshly started broker's (docs/core.md, known limits)."""
    rng = random.Random(oracle_seed)
    cases = []
    while len(cases) < max(5, cases_per_run(3000) // CONNECTIONS_PER_SET // 4):
        case = _quota_set(rng, version)
        if case["mode"] == "kraft" and case["quotas"] and not case["static"]:
            cases.append(case)
    kafka = kafka_oracle(version, "PrecedenceOracle").ask_many([{**_request(c), "after_remove": True} for c in cases])
    fresh = [_ours({**c, "quotas": {}}) for c in cases]
    cleared = behaviour(RELEASES[version].version).has("quota_types_cleared")
    if cleared:
        assert not any(a["bits_left"] for a in kafka), f"{replay_hint(oracle_seed, version)}: a type stayed enabled"
        mine = [{"connections": a["connections"], "ips": a["ips"]} for a in kafka]
        assert_no_mismatches(cases, fresh, mine, oracle_seed, version, limit=2)
    else:
        with_client_quotas = [any(e.ip is None for e in c["quotas"]) for c in cases]
        left = [a["bits_left"] for a in kafka]
        assert left == with_client_quotas, f"{replay_hint(oracle_seed, version)}: bits left {left}"


@pytest.mark.jvm
def test_a_known_answer_so_the_comparison_can_fail(kafka_oracle):
    """users/<default>/clients/<default> found first by an empty user gives client tags: clients/c applies."""
    case = {
        "mode": "kraft",
        "quotas": {
            Entity(user=DEFAULT, client_id=DEFAULT): {"producer_byte_rate": 10},
            Entity(client_id="c"): {"producer_byte_rate": 20},
        },
        "static": {},
        "connections": [("", "c")],
        "ips": [],
    }
    (answer,) = kafka_oracle(NEWEST_VERSION, "PrecedenceOracle").ask_many([_request(case)])
    assert answer["connections"][0][0] == {"key": "producer_byte_rate", "limit": 20.0, "user": "", "client-id": "c"}
    assert _ours(case) == answer


def test_each_version_compiles_the_driver_with_only_the_shared_code_its_api_has() -> None:
    def compiled(version: str) -> list[str]:
        return [p.relative_to(SOURCES).as_posix() for p in _sources(version, "PrecedenceOracle")]

    shared = ["common/OracleLoop.java", "common/PrecedenceOracleSupport.java"]
    assert sorted(compiled("2.8")) == sorted([*shared, "v2_8/PrecedenceOracle.java", "zk/PrecedenceOracleZk.java"])
    assert sorted(compiled("3.9")) == sorted(
        [*shared, "v3_9/PrecedenceOracle.java", "zk/PrecedenceOracleZk.java", "kraft/PrecedenceOracleKraft.java"]
    )
    for line in ("4.2", "4.3", "4.4"):
        v4 = ["v4/PrecedenceOracle.java", "kraft/PrecedenceOracleKraft.java"]
        assert sorted(compiled(line)) == sorted([*shared, *v4])
    assert [p.name for p in _sources("4.4", "SanitizerOracle")] == ["OracleLoop.java", "SanitizerOracle.java"]
    with pytest.raises(FileNotFoundError, match=r"no oracle driver NoSuchOracle for Kafka 3\.9"):
        _sources("3.9", "NoSuchOracle")
