"""One behavioural suite, three ways to reach quotas: the ZooKeeper backend, the admin API on a KRaft
broker (Kafka 4.x) and the admin API on a ZooKeeper-mode broker (Kafka 3.9). Same commands, same answers."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

pytestmark = pytest.mark.kafka


@pytest.fixture(
    params=[
        pytest.param("zookeeper", marks=pytest.mark.zookeeper),
        "kraft",
        pytest.param("zk-broker", marks=pytest.mark.zookeeper),
    ]
)
def target(request) -> list[str]:
    if request.param == "zookeeper":
        return ["--zookeeper", request.getfixturevalue("chroot").connect]
    if request.param == "kraft":
        return ["--bootstrap-server", request.getfixturevalue("kraft").bootstrap]
    return ["--bootstrap-server", request.getfixturevalue("zkmode").bootstrap]


def kq(target, *args: str):
    return run_cli(*target, *args)


def describe(target, *args: str) -> list[dict]:
    r = kq(target, "describe", *args, "-o", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def alter_ok(target, *args: str) -> dict:
    r = kq(target, "alter", *args, "-o", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


SETUP = [
    (["--user", "alice"], "producer_byte_rate=1MiB,consumer_byte_rate=2048"),
    (["--user-defaults"], "request_percentage=150"),
    (["--user", "alice", "--client-id", "app 1"], "producer_byte_rate=10000000,request_percentage=12.5"),
    (["--user", "alice", "--client-defaults"], "consumer_byte_rate=7"),
    (["--user-defaults", "--client-id", "app 1"], "controller_mutation_rate=2.5"),
    (["--user-defaults", "--client-defaults"], "producer_byte_rate=9"),
    (["--client-id", "c~*"], "consumer_byte_rate=3"),
    (["--client-defaults"], "producer_byte_rate=8000"),
    (["--ip", "192.0.2.10"], "connection_creation_rate=20"),
    (["--ip-defaults"], "connection_creation_rate=100"),
]

EXPECTED = [
    {"entity": {"user": None}, "config": {"request_percentage": 150.0}},
    {"entity": {"user": "alice"}, "config": {"producer_byte_rate": 1048576, "consumer_byte_rate": 2048}},
    {"entity": {"user": None, "client-id": None}, "config": {"producer_byte_rate": 9}},
    {"entity": {"user": None, "client-id": "app 1"}, "config": {"controller_mutation_rate": 2.5}},
    {"entity": {"user": "alice", "client-id": None}, "config": {"consumer_byte_rate": 7}},
    {
        "entity": {"user": "alice", "client-id": "app 1"},
        "config": {"producer_byte_rate": 10000000, "request_percentage": 12.5},
    },
    {"entity": {"client-id": None}, "config": {"producer_byte_rate": 8000}},
    {"entity": {"client-id": "c~*"}, "config": {"consumer_byte_rate": 3}},
    {"entity": {"ip": None}, "config": {"connection_creation_rate": 100}},
    {"entity": {"ip": "192.0.2.10"}, "config": {"connection_creation_rate": 20}},
]


def setup_all(target) -> None:
    for ent, cfg in SETUP:
        alter_ok(target, *ent, "--add-config", cfg)


def test_describe_everything_identical(target):
    setup_all(target)
    assert describe(target) == EXPECTED


@pytest.mark.parametrize(
    ("args", "expected_entities"),
    [
        (["--user", "alice"], [{"user": "alice"}]),
        (["--user-defaults"], [{"user": None}]),
        (["--entity-type", "users"], [{"user": None}, {"user": "alice"}]),
        (
            ["--entity-type", "users", "--entity-type", "clients"],
            [
                {"user": None, "client-id": None},
                {"user": None, "client-id": "app 1"},
                {"user": "alice", "client-id": None},
                {"user": "alice", "client-id": "app 1"},
            ],
        ),
        (["--user", "alice", "--entity-type", "clients"], None),  # mixed flags: refused the same way
        (
            ["--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients"],
            [
                {"user": "alice", "client-id": None},
                {"user": "alice", "client-id": "app 1"},
            ],
        ),
        (["--user-defaults", "--client-id", "app 1"], [{"user": None, "client-id": "app 1"}]),
        (["--client-id", "c~*"], [{"client-id": "c~*"}]),
        (["--entity-type", "clients"], [{"client-id": None}, {"client-id": "c~*"}]),
        (["--ip", "192.0.2.10"], [{"ip": "192.0.2.10"}]),
        (["--entity-type", "ips"], [{"ip": None}, {"ip": "192.0.2.10"}]),
        (["--user", "nobody"], []),
    ],
)
def test_describe_filters_identical(target, args, expected_entities):
    setup_all(target)
    r = kq(target, "describe", *args, "-o", "json")
    if expected_entities is None:
        assert r.exit_code == 1
        return
    assert r.exit_code == 0, r.stderr
    assert [x["entity"] for x in json.loads(r.stdout)] == expected_entities


def test_alter_results_identical(target):
    out = alter_ok(target, "--user", "u", "--add-config", "producer_byte_rate=100,request_percentage=50")
    assert out == {
        "entity": {"user": "u"},
        "outcome": "applied",
        "before": {},
        "after": {"producer_byte_rate": 100, "request_percentage": 50.0},
    }
    out = alter_ok(
        target, "--user", "u", "--add-config", "producer_byte_rate=200", "--delete-config", "request_percentage"
    )
    assert out["before"] == {"producer_byte_rate": 100, "request_percentage": 50.0}
    assert out["after"] == {"producer_byte_rate": 200}
    assert alter_ok(target, "--user", "u", "--add-config", "producer_byte_rate=200")["outcome"] == "unchanged"
    out = alter_ok(target, "--user", "u", "--add-config", "producer_byte_rate=1", "--dry-run")
    assert out["outcome"] == "validated" and out["after"] == {"producer_byte_rate": 1}
    assert describe(target, "--user", "u") == [{"entity": {"user": "u"}, "config": {"producer_byte_rate": 200}}]
    r = kq(target, "alter", "--user", "u", "--delete-config", "consumer_byte_rate")
    assert r.exit_code == 1 and "Invalid config(s): consumer_byte_rate" in r.stderr
    assert alter_ok(target, "--user", "u", "--delete-config", "producer_byte_rate")["after"] == {}
    assert describe(target) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "a", "--add-config", "producer_byte_rate=0"], "greater than 0"),
        (["--user", "a", "--add-config", "producer_byte_rate=1.5"], "whole number"),
        (["--ip", "192.0.2.1", "--user", "a", "--add-config", "connection_creation_rate=5"], "INVALID_REQUEST"),
        (["--user", "a", "--add-config", "connection_creation_rate=5"], "only valid for ips"),
        (["--ip", "host.example", "--add-config", "connection_creation_rate=5"], "valid IP address"),
    ],
)
def test_bad_input_refused_identically_nothing_written(target, args, message):
    r = kq(target, "alter", *args)
    assert r.exit_code == 1
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert describe(target) == []


def test_kafka_output_formats(target):
    alter_ok(target, "--user", "alice", "--client-defaults", "--add-config", "producer_byte_rate=10MiB")
    r = kq(target, "describe", "--user", "alice", "--client-defaults", "-o", "kafka")
    if target[0] == "--zookeeper":
        assert r.stdout == "Configs for user-principal 'alice', default client-id are producer_byte_rate=10485760\n"
    else:
        assert (
            r.stdout
            == "Quota configs for user-principal 'alice', the default client-id are producer_byte_rate=1.048576E7\n"
        )
