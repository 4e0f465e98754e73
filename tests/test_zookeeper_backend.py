"""The ZooKeeper backend against a real ZooKeeper: znode layout, JSON, notifications, CAS, cleanup."""

from __future__ import annotations

import json

import pytest

from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange, Outcome
from kquotactl.core.entities import DEFAULT, Entity, EntityType
from kquotactl.core.filters import EntityFilter, FilterComponent, MatchType

pytestmark = pytest.mark.zookeeper

D = DEFAULT

# Every entity kind: (entity, znode path under /config, notification entity_path)
ENTITY_PATHS = [
    (Entity(user="alice"), "/config/users/alice"),
    (Entity(user=D), "/config/users/<default>"),
    (Entity(user="alice", client_id="app1"), "/config/users/alice/clients/app1"),
    (Entity(user="alice", client_id=D), "/config/users/alice/clients/<default>"),
    (Entity(user=D, client_id="app1"), "/config/users/<default>/clients/app1"),
    (Entity(user=D, client_id=D), "/config/users/<default>/clients/<default>"),
    (Entity(client_id="app1"), "/config/clients/app1"),
    (Entity(client_id=D), "/config/clients/<default>"),
    (Entity(ip="192.0.2.10"), "/config/ips/192.0.2.10"),
    (Entity(ip=D), "/config/ips/<default>"),
    (Entity(ip="2001:db8::1"), "/config/ips/2001:db8::1"),
    (Entity(user="CN=user1,O=A client"), "/config/users/CN%3Duser1%2CO%3DA%20client"),
    (Entity(user="<default>"), "/config/users/%3Cdefault%3E"),
    (Entity(user="a*b~c", client_id="client1?@%"), "/config/users/a%2Ab%7Ec/clients/client1%3F%40%25"),
    (Entity(client_id="ünïcødé"), "/config/clients/%C3%BCn%C3%AFc%C3%B8d%C3%A9"),
    (Entity(user="../../etc", client_id="x/y"), "/config/users/..%2F..%2Fetc/clients/x%2Fy"),
]


def backend(chroot) -> ZooKeeperBackend:
    return ZooKeeperBackend(ZkSettings(connect=chroot.connect, connect_timeout=10, op_timeout=15))


def key_for(entity: Entity) -> tuple[str, int]:
    return ("connection_creation_rate", 20) if entity.ip is not None else ("producer_byte_rate", 1048576)


@pytest.mark.parametrize(("entity", "path"), ENTITY_PATHS, ids=[p for _, p in ENTITY_PATHS])
def test_every_entity_kind_writes_kafkas_znode_json_and_one_v2_notification(chroot, entity, path) -> None:
    key, value = key_for(entity)
    with backend(chroot) as b:
        [res] = b.alter([EntityChange(entity, {key: value})])
    assert res.outcome is Outcome.APPLIED
    assert chroot.get(path) == json.dumps({"version": 1, "config": {key: str(value)}}, separators=(",", ":")).encode()
    notes = chroot.notifications()
    assert notes == [json.dumps({"version": 2, "entity_path": path[len("/config/") :]}, separators=(",", ":")).encode()]
    assert chroot.children("/config/changes")[0].startswith("config_change_")
    assert len(chroot.children("/config/changes")[0]) == len("config_change_") + 10
    with backend(chroot) as b:
        [record] = b.describe(EntityFilter.exact(entity))
        assert record.entity == entity and record.config == {key: value}
        assert [r.entity for r in b.describe()] == [entity]


def test_values_are_json_strings_in_properties_order_and_doubles_as_java_prints_them(chroot) -> None:
    entity = Entity(user="alice")
    change = EntityChange(
        entity,
        {
            "producer_byte_rate": 1024,
            "consumer_byte_rate": 2048,
            "request_percentage": 12.5,
            "controller_mutation_rate": 1e7,
        },
    )
    with backend(chroot) as b:
        b.alter([change])
    data = json.loads(chroot.get("/config/users/alice"))
    assert data["version"] == 1
    assert data["config"] == {
        "producer_byte_rate": "1024",
        "consumer_byte_rate": "2048",
        "request_percentage": "12.5",
        "controller_mutation_rate": "1.0E7",
    }
    # JDK 9+ Properties iteration order (what Kafka's own writer produces for these keys)
    order = list(data["config"])
    assert order.index("request_percentage") < order.index("producer_byte_rate") < order.index("consumer_byte_rate")
    assert order.index("consumer_byte_rate") < order.index("controller_mutation_rate")


def test_unchanged_alter_writes_nothing_and_sends_no_notification(chroot) -> None:
    entity = Entity(user="alice")
    with backend(chroot) as b:
        b.alter([EntityChange(entity, {"producer_byte_rate": 1024})])
        before = chroot.snapshot()
        [res] = b.alter([EntityChange(entity, {"producer_byte_rate": 1024})])
    assert res.outcome is Outcome.UNCHANGED
    assert chroot.snapshot() == before


def test_keys_written_by_others_are_preserved(chroot) -> None:
    """SCRAM credentials live in the same user znode; a quota change must keep them byte for byte."""
    chroot.zk.ensure_path(chroot.root + "/config/users")
    scram = "salt=c2FsdA==,stored_key=a2V5,server_key=c2s=,iterations=4096"
    chroot.zk.create(
        chroot.root + "/config/users/alice",
        json.dumps({"version": 1, "config": {"SCRAM-SHA-256": scram, "producer_byte_rate": "1024.0"}}).encode(),
    )
    with backend(chroot) as b:
        [rec] = b.describe()
        # stored as "1024.0" by another tool: Long.parseLong refuses it, so brokers never apply it
        assert (rec.config, rec.unparsed) == ({}, {"producer_byte_rate": "1024.0"})
        b.alter([EntityChange(Entity(user="alice"), {"consumer_byte_rate": 5})])
    data = json.loads(chroot.get("/config/users/alice"))["config"]
    assert data == {"SCRAM-SHA-256": scram, "producer_byte_rate": "1024.0", "consumer_byte_rate": "5"}


def test_deleting_the_last_key_removes_the_znode_and_empty_parents_and_still_notifies(chroot) -> None:
    pair = Entity(user="bob", client_id="app")
    with backend(chroot) as b:
        b.alter([EntityChange(pair, {"request_percentage": 50.0})])
        assert chroot.exists("/config/users/bob/clients/app")
        [res] = b.alter([EntityChange(pair, remove=frozenset({"request_percentage"}))])
    assert res.outcome is Outcome.APPLIED and res.after == {}
    assert not chroot.exists("/config/users/bob")  # pair, its clients node and the empty user node are gone
    notes = [json.loads(n) for n in chroot.notifications()]
    assert notes == [{"version": 2, "entity_path": "users/bob/clients/app"}] * 2


def test_user_node_with_quotas_survives_when_its_pair_is_removed(chroot) -> None:
    with backend(chroot) as b:
        b.alter(
            [
                EntityChange(Entity(user="bob"), {"producer_byte_rate": 10}),
                EntityChange(Entity(user="bob", client_id="a"), {"producer_byte_rate": 5}),
                EntityChange(Entity(user="bob", client_id="b"), {"producer_byte_rate": 6}),
            ]
        )
        b.alter([EntityChange(Entity(user="bob", client_id="a"), remove=frozenset({"producer_byte_rate"}))])
        assert chroot.children("/config/users/bob/clients") == ["b"]
        b.alter([EntityChange(Entity(user="bob", client_id="b"), remove=frozenset({"producer_byte_rate"}))])
        assert chroot.exists("/config/users/bob") and not chroot.exists("/config/users/bob/clients")
        # a user node that still has pairs below keeps its (now empty) config rather than disappearing
        [res] = b.alter([EntityChange(Entity(user="bob", client_id="c"), {"producer_byte_rate": 7})])
        assert res.outcome is Outcome.APPLIED
        [res] = b.alter([EntityChange(Entity(user="bob"), remove=frozenset({"producer_byte_rate"}))])
        assert res.outcome is Outcome.APPLIED
    assert json.loads(chroot.get("/config/users/bob")) == {"version": 1, "config": {}}
    assert chroot.exists("/config/users/bob/clients/c")


def test_removing_an_unset_key_is_rejected_unless_if_exists(chroot) -> None:
    entity = Entity(client_id="c1")
    with backend(chroot) as b:
        [res] = b.alter([EntityChange(entity, remove=frozenset({"producer_byte_rate"}))])
        assert res.outcome is Outcome.REJECTED and "Invalid config(s): producer_byte_rate" in res.message
        [res] = b.alter([EntityChange(entity, remove=frozenset({"producer_byte_rate"}), if_exists=True)])
        assert res.outcome is Outcome.UNCHANGED
    assert not chroot.exists("/config/changes") or chroot.notifications() == []


def test_many_entities_in_one_alter_commit_in_transactions_with_one_notification_each(chroot) -> None:
    changes = [
        EntityChange(Entity(user=f"u{i}", client_id=f"c{i % 7}"), {"consumer_byte_rate": 1000 + i}) for i in range(2500)
    ]
    changes += [EntityChange(Entity(user=f"u{i}"), {"producer_byte_rate": 10 + i}) for i in range(0, 2500, 5)]
    with backend(chroot) as b:
        results = b.alter(changes)
        assert all(r.outcome is Outcome.APPLIED for r in results)
        assert len(b.describe()) == len(changes)
    paths = sorted(json.loads(n)["entity_path"] for n in chroot.notifications())
    assert paths == sorted(c.entity.path for c in changes)


# -- describe filters: Kafka's ClientQuotasRequestTest match vectors ---------------------------------

MATCH_ENTITIES = [
    (Entity(user="user-1", client_id="client-id-1"), 50.50),
    (Entity(user="user-2", client_id="client-id-1"), 51.51),
    (Entity(user="user-3", client_id="client-id-2"), 52.52),
    (Entity(user=D, client_id="client-id-1"), 53.53),
    (Entity(user="user-1", client_id=D), 54.54),
    (Entity(user="user-3", client_id=D), 55.55),
    (Entity(user="user-1"), 56.56),
    (Entity(user="user-2"), 57.57),
    (Entity(user="user-3"), 58.58),
    (Entity(user=D), 59.59),
    (Entity(client_id="client-id-2"), 60.60),
]
U, C, IP = EntityType.USER, EntityType.CLIENT_ID, EntityType.IP


def comp(t: EntityType, name: str | None = None, match: MatchType = MatchType.EXACT) -> FilterComponent:
    return FilterComponent(t, match, name)


@pytest.fixture
def match_backend(chroot):
    with backend(chroot) as b:
        b.alter(
            [EntityChange(e, {"request_percentage": v}) for e, v in MATCH_ENTITIES]
            + [
                EntityChange(Entity(ip="1.2.3.4"), {"connection_creation_rate": 10}),
                EntityChange(Entity(ip="2.3.4.5"), {"connection_creation_rate": 20}),
            ]
        )
        yield b


def test_describe_exact_match_returns_exactly_that_entity(match_backend) -> None:
    for entity, value in MATCH_ENTITIES:
        [rec] = match_backend.describe(EntityFilter.exact(entity))
        assert rec.entity == entity and rec.config == {"request_percentage": value}
    for missing in (
        Entity(user="user-1", client_id="client-id-2"),
        Entity(user="user-3", client_id="client-id-1"),
        Entity(user="user-2", client_id=D),
        Entity(user="user-4"),
        Entity(user=D, client_id="client-id-2"),
        Entity(client_id="client-id-1"),
        Entity(client_id="client-id-3"),
    ):
        assert match_backend.describe(EntityFilter.exact(missing)) == []


@pytest.mark.parametrize(
    ("components", "strict", "count"),
    [
        ((comp(U, "user-1"),), False, 3),
        ((comp(U, "unknown"),), False, 0),
        ((comp(C, "client-id-2"),), False, 2),
        ((comp(U, match=MatchType.DEFAULT),), False, 2),
        ((comp(U, "user-2"),), True, 1),
        ((comp(C, "client-id-1"),), True, 0),
        ((comp(U, match=MatchType.ANY),), True, 4),
        ((comp(U, match=MatchType.ANY),), False, 10),
        ((comp(C, match=MatchType.ANY),), True, 1),
        ((comp(C, match=MatchType.ANY),), False, 7),
        ((comp(IP, match=MatchType.ANY),), False, 2),
        ((), False, 13),
        ((), True, 0),
    ],
)
def test_describe_partial_match_counts_as_kafka(match_backend, components, strict, count) -> None:
    assert len(match_backend.describe(EntityFilter(components, strict))) == count


def test_describe_rejects_ip_combined_with_user_filter(match_backend) -> None:
    from kquotactl.core.errors import InvalidRequest

    with pytest.raises(InvalidRequest, match="Invalid entity filter component combination"):
        match_backend.describe(EntityFilter((comp(IP, match=MatchType.ANY), comp(U, match=MatchType.ANY))))


def test_entity_names_lists_names_from_both_places_without_defaults(chroot) -> None:
    b = backend(chroot)
    try:
        b.alter(
            [
                EntityChange(e, {k: v})
                for e in (
                    Entity(user="alice", client_id="in-pair"),
                    Entity(user=D, client_id="under-default-user"),
                    Entity(client_id="solo"),
                    Entity(client_id=D),
                    Entity(user="CN=bob,O=x"),
                    Entity(ip="192.0.2.1"),
                    Entity(ip=D),
                )
                for k, v in [key_for(e)]
            ]
        )
        assert b.entity_names(EntityType.CLIENT_ID) == {"in-pair", "under-default-user", "solo"}
        assert b.entity_names(EntityType.USER) == {"alice", "CN=bob,O=x"}
        assert b.entity_names(EntityType.IP) == {"192.0.2.1"}
    finally:
        b.close()


def test_entities_planned_as_new_are_not_read_first_and_a_node_there_after_all_is_a_conflict(chroot) -> None:
    """An apply planned against an empty cluster creates without reading first. When a node appeared since (SCRAM
    credentials under a user; a pair's user node; another tool's quota), the create fails the transaction as a
    conflict, the next round reads, and the result is what a read-first apply gives: keys of others kept, the
    quota set where the plan still holds, a stale plan refused."""
    scram = "salt=c2FsdA==,stored_key=a2V5,server_key=c2s=,iterations=4096"
    chroot.zk.ensure_path(chroot.root + "/config/users")
    chroot.zk.create(
        chroot.root + "/config/users/alice", json.dumps({"version": 1, "config": {"SCRAM-SHA-256": scram}}).encode()
    )
    chroot.zk.create(
        chroot.root + "/config/users/carol",
        json.dumps({"version": 1, "config": {"producer_byte_rate": "7"}}).encode(),
    )
    new = {
        Entity(user="alice"): {"producer_byte_rate": 100},
        Entity(user="alice", client_id="app"): {"consumer_byte_rate": 200},
        Entity(user="bob"): {"producer_byte_rate": 300},
        Entity(user="carol"): {"producer_byte_rate": 400},
    }
    with backend(chroot) as b:
        results = b.alter([EntityChange(e, c) for e, c in new.items()], expected={e: {} for e in new})
    outcomes = {r.entity: r.outcome for r in results}
    assert outcomes == {
        Entity(user="alice"): Outcome.APPLIED,
        Entity(user="alice", client_id="app"): Outcome.APPLIED,
        Entity(user="bob"): Outcome.APPLIED,
        Entity(user="carol"): Outcome.REJECTED,  # 7 was set since the plan: stale
    }
    config = lambda path: json.loads(chroot.get(path))["config"]  # noqa: E731
    assert config("/config/users/alice") == {"SCRAM-SHA-256": scram, "producer_byte_rate": "100"}
    assert config("/config/users/alice/clients/app") == {"consumer_byte_rate": "200"}
    assert config("/config/users/bob") == {"producer_byte_rate": "300"}
    assert config("/config/users/carol") == {"producer_byte_rate": "7"}
    assert len(chroot.notifications()) == 3  # one per applied entity, none for the failed first attempt


def test_an_apply_into_an_empty_chroot_reads_no_entity_node_before_writing(chroot) -> None:
    new = {Entity(user=f"u{i}"): {"producer_byte_rate": 100 + i} for i in range(5)}
    new |= {Entity(user=f"u{i}", client_id="app"): {"consumer_byte_rate": 200 + i} for i in range(5)}
    with backend(chroot) as b:
        session = b._session
        real, read = session.get_many, []

        def recorded(paths):
            read.extend(paths)
            return real(paths)

        session.get_many = recorded  # type: ignore[method-assign]
        results = b.alter([EntityChange(e, c) for e, c in new.items()], expected={e: {} for e in new})
    assert {r.outcome for r in results} == {Outcome.APPLIED}
    assert read == []
    assert len(chroot.notifications()) == len(new)
