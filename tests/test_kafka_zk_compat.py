"""kquotactl's ZooKeeper writes are exactly what a ZooKeeper-mode broker (Kafka 3.9) serves through
DescribeClientQuotas, and what the broker writes through AlterClientQuotas reads back through the ZooKeeper
backend — both directions, every entity kind, defaults, pairs, ips and names that need sanitizing."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from kquotactl.backends.kafka.quotas import AdminBackend
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.filters import EntityFilter

pytestmark = pytest.mark.kafka

# (entity, config): every kind, defaults, pairs, names needing the Java Sanitizer, a real "<default>" name.
CASES = [
    (Entity.of(user="alice"), {"producer_byte_rate": 1048576, "consumer_byte_rate": 2048}),
    (Entity.of(user=DEFAULT), {"consumer_byte_rate": 4096}),
    (Entity.of(user="CN=Some characters !@#$%&*()_-+=';:,/~"), {"request_percentage": 12.5}),
    (Entity.of(user="<default>"), {"producer_byte_rate": 1}),  # a real user named <default>
    (Entity.of(user="ümlaut user"), {"controller_mutation_rate": 0.5}),
    (Entity.of(user="alice", client_id="app 1"), {"producer_byte_rate": 10000000, "request_percentage": 200.0}),
    (Entity.of(user="alice", client_id=DEFAULT), {"consumer_byte_rate": 7}),
    (Entity.of(user=DEFAULT, client_id="c*"), {"consumer_byte_rate": 8}),
    (Entity.of(user=DEFAULT, client_id=DEFAULT), {"producer_byte_rate": 9}),
    (Entity.of(client_id="QuotasTestConsumer-!@#$%^&*()"), {"consumer_byte_rate": 2500}),
    (Entity.of(client_id=DEFAULT), {"producer_byte_rate": 8000, "request_percentage": 1e-4}),
    (Entity.of(ip="192.0.2.10"), {"connection_creation_rate": 20}),
    (Entity.of(ip=DEFAULT), {"connection_creation_rate": 100}),
]


def zk_backend(zkmode) -> ZooKeeperBackend:
    return ZooKeeperBackend(ZkSettings(connect=zkmode.zookeeper))


def as_set(records) -> set:
    return {(r.entity, tuple(sorted(r.config.items()))) for r in records}


@pytest.mark.zookeeper
def test_kquotactl_zookeeper_writes_are_what_the_broker_serves(zkmode):
    with zk_backend(zkmode) as zk:
        results = zk.alter([EntityChange(e, c) for e, c in CASES])
        assert all(r.outcome.value == "applied" for r in results)
        zk_view = zk.describe()
    with AdminBackend.connect(zkmode.bootstrap) as admin:
        broker_view = admin.describe()
        assert as_set(broker_view) == {(e, tuple(sorted(c.items()))) for e, c in CASES}
        # filters: the broker's KIP-546 matching agrees with the ZooKeeper backend's
        for flt in (
            EntityFilter.exact(Entity.of(user="alice", client_id="app 1")),
            EntityFilter.exact(Entity.of(user="CN=Some characters !@#$%&*()_-+=';:,/~")),
            EntityFilter.exact(Entity.of(user="<default>")),
            EntityFilter.exact(Entity.of(user=DEFAULT)),
        ):
            with zk_backend(zkmode) as zk:
                assert as_set(admin.describe(flt)) == as_set(zk.describe(flt)), flt
                assert len(admin.describe(flt)) == 1
    assert as_set(zk_view) == as_set(broker_view)


@pytest.mark.zookeeper
def test_broker_writes_read_back_by_zookeeper_backend(zkmode):
    with AdminBackend.connect(zkmode.bootstrap) as admin:
        results = admin.alter([EntityChange(e, c) for e, c in CASES])
        assert [r.outcome.value for r in results] == ["applied"] * len(CASES), [r.message for r in results]
    with zk_backend(zkmode) as zk:
        got = zk.describe()
        assert as_set(got) == {(e, tuple(sorted(c.items()))) for e, c in CASES}
        # and the raw stored strings are what kquotactl itself would have written
        raw = {r.entity: dict(r.raw or {}) for r in got}
    assert raw[Entity.of(user="alice", client_id="app 1")] == {
        "producer_byte_rate": "10000000",
        "request_percentage": "200.0",
    }
    assert raw[Entity.of(client_id=DEFAULT)]["request_percentage"] == "1.0E-4"


@pytest.mark.zookeeper
def test_znodes_byte_identical_whichever_side_writes(zkmode, zk_admin):
    """The same change written by the broker and by kquotactl leaves byte-identical entity znodes."""
    root = zkmode.zookeeper.split("/", 1)[1]
    paths = {e: f"/{root}/config/{e.path}" for e, _ in CASES}
    with AdminBackend.connect(zkmode.bootstrap) as admin:
        admin.alter([EntityChange(e, c) for e, c in CASES])
    by_broker = {e: zk_admin.get(p)[0] for e, p in paths.items()}
    with zk_backend(zkmode) as zk:
        zk.alter([EntityChange(e, remove=frozenset(c)) for e, c in CASES])
        zk.alter([EntityChange(e, c) for e, c in CASES])
    by_kquotactl = {e: zk_admin.get(p)[0] for e, p in paths.items()}
    assert by_kquotactl == by_broker


@pytest.mark.zookeeper
def test_cli_both_backends_same_answers(zkmode):
    assert (
        run_cli(
            "--zookeeper",
            zkmode.zookeeper,
            "alter",
            "--user",
            "bob",
            "--client-id",
            "x y",
            "--add-config",
            "producer_byte_rate=5MB",
        ).exit_code
        == 0
    )
    assert (
        run_cli(
            "--bootstrap-server",
            zkmode.bootstrap,
            "alter",
            "--client-defaults",
            "--add-config",
            "request_percentage=33.3",
        ).exit_code
        == 0
    )
    a = run_cli("--zookeeper", zkmode.zookeeper, "describe", "-o", "json")
    b = run_cli("--bootstrap-server", zkmode.bootstrap, "describe", "-o", "json")
    assert (
        json.loads(a.stdout)
        == json.loads(b.stdout)
        == [
            {"entity": {"user": "bob", "client-id": "x y"}, "config": {"producer_byte_rate": 5000000}},
            {"entity": {"client-id": None}, "config": {"request_percentage": 33.3}},
        ]
    )


@pytest.mark.zookeeper
def test_removing_last_key_through_broker_removes_nodes(zkmode, zk_admin):
    root = zkmode.zookeeper.split("/", 1)[1]
    e = Entity.of(user="gone", client_id="c")
    with AdminBackend.connect(zkmode.bootstrap) as admin:
        admin.alter([EntityChange(e, {"producer_byte_rate": 5})])
        assert zk_admin.exists(f"/{root}/config/users/gone/clients/c")
        admin.alter([EntityChange(e, remove=frozenset({"producer_byte_rate"}))])
    assert not zk_admin.exists(f"/{root}/config/users/gone/clients/c")
    with zk_backend(zkmode) as zk:
        assert zk.describe() == []


@pytest.mark.zookeeper
def test_ipv6_entities_known_divergence(zkmode, zk_admin):
    """Documented in docs/admin-api.md: a ZooKeeper-mode 3.9 broker sanitizes an ip entity's name *before*
    checking that it is an address, so AlterClientQuotas refuses every IPv6 address (``2001%3Adb8%3A%3A1 is
    not a valid IP``). The ZooKeeper backend stores the address raw (as kafka-configs --zookeeper does), which
    the broker reads and serves back."""
    root = zkmode.zookeeper.split("/", 1)[1]
    v6 = Entity.of(ip="2001:db8::1")
    with AdminBackend.connect(zkmode.bootstrap) as admin:
        [r] = admin.alter([EntityChange(v6, {"connection_creation_rate": 5})])
        assert r.outcome.value == "rejected"
        assert r.message == "INVALID_REQUEST: 2001%3Adb8%3A%3A1 is not a valid IP or resolvable host."
    assert not zk_admin.exists(f"/{root}/config/ips/2001%3Adb8%3A%3A1")
    with zk_backend(zkmode) as zk:
        zk.alter([EntityChange(v6, {"connection_creation_rate": 5})])
    assert zk_admin.exists(f"/{root}/config/ips/2001:db8::1")
    with AdminBackend.connect(zkmode.bootstrap) as admin:
        every = admin.describe()
        exact = admin.describe(EntityFilter.exact(v6))
    print(
        "ZK-mode 3.9 broker describes a raw IPv6 ip node as:",
        [x.to_json() for x in every],
        [x.to_json() for x in exact],
    )
    assert [x.entity for x in every] == [x.entity for x in exact] == [v6]
