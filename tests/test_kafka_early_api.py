"""The admin API on its first releases, Kafka 2.6 and 2.7 (ZooKeeper mode), real brokers.

Before 2.8 a broker has no DescribeCluster (``verify`` lists brokers from Metadata), 2.6 knows no
``controller_mutation_rate`` and neither knows ip quotas. The broker is the oracle for what it refuses: each key
and entity kind is sent to it straight (``validate_only``, kquotactl's checks bypassed), and kquotactl must refuse
exactly what the broker refuses, before writing anything, in one line naming the broker's release.
"""

from __future__ import annotations

import json

import pytest

from conftest import run_cli, write_manifest
from fixtures_kafka import _wipe
from kquotactl.backends.kafka.quotas import AdminBackend, entity_to_wire
from kquotactl.core.changes import release_refusal
from kquotactl.core.entities import Entity
from kquotactl.core.kafkaversions import since
from kquotactl.core.keys import KEYS, KeyScope
from kquotactl.testing.versions import RELEASES

pytestmark = pytest.mark.kafka


def admin(kafka, *args: str):
    return run_cli("--bootstrap-server", kafka.bootstrap, *args)


def stored(kafka) -> list[dict]:
    """What the brokers' ZooKeeper holds, read through the ZooKeeper backend (not the broker under test)."""
    r = run_cli("--zookeeper", kafka.zookeeper, "describe", "-o", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def release_of(kafka) -> tuple[int, int]:
    """The fixture's release line, as the release table names it."""
    [release] = [r for r in RELEASES.values() if r.jars == kafka.server.jars_name]
    return release.version[:2]


def broker_words(kafka) -> str:
    """How kquotactl names the broker and its release in a refusal."""
    release = ".".join(map(str, release_of(kafka)))
    return f"the broker {kafka.bootstrap} is Kafka {release} (by the API versions it answers)"


def broker_refuses(kafka, entity: Entity, key: str) -> str | None:
    """The broker's own answer to setting ``key`` on ``entity`` (validate only: nothing stored), or None."""
    with AdminBackend.connect(kafka.bootstrap) as b:
        try:
            [outcome] = b.wire.alter([(entity_to_wire(entity), [(key, 1.0, False)])], True)
        except Exception as e:  # a request-level refusal (UNSUPPORTED_VERSION for an entity type it lacks)
            return str(e)
    return f"{outcome.error_name}: {outcome.message}" if outcome.error_code else None


def key_since(key: str) -> tuple[int, int]:
    """The release that brought ``key`` (the release table's), 2.6 for those the admin API always knew."""
    change = KEYS[key].arrived_with
    return since(change) if change else (2, 6)


def live_keys() -> list[str]:
    return [k for k, spec in KEYS.items() if spec.live]


@pytest.fixture
def early(early_kafka):
    """The release's broker, every quota removed after the test (through ZooKeeper: every release reads it)."""
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings

    yield early_kafka
    with ZooKeeperBackend(ZkSettings(connect=early_kafka.zookeeper)) as b:
        _wipe(b)


@pytest.mark.zookeeper
def test_kquotactl_refuses_exactly_what_the_broker_refuses(early):
    """Every live key on a user, and an ip entity: the broker's answer against kquotactl's release table."""
    release = release_of(early)
    cases = [(Entity.of(user="oracle"), k) for k in live_keys() if KEYS[k].kind is KeyScope.CLIENT]
    cases += [(Entity.of(ip="10.0.0.1"), k) for k in live_keys() if KEYS[k].kind is KeyScope.IP]
    seen = []
    for entity, key in cases:
        theirs = broker_refuses(early, entity, key)
        ours = release_refusal(entity, [key], release)
        assert (theirs is None) == (ours is None), (release, entity, key, theirs, ours)
        seen.append(ours is not None)
    assert stored(early) == []
    assert any(seen) and not all(seen)  # each release both knows and refuses some: the comparison can fail


@pytest.mark.zookeeper
def test_too_new_keys_and_ips_are_one_line_naming_the_release_and_nothing_is_written(early):
    release = release_of(early)
    broker = broker_words(early)
    refused = [k for k in live_keys() if KEYS[k].kind is KeyScope.CLIENT and release < key_since(k)]
    for key in refused:
        r = admin(early, "alter", "--user", "bob", "--add-config", f"{key}=10")
        since = ".".join(map(str, key_since(key)))
        assert (r.exit_code, r.stdout) == (1, "")
        assert r.stderr == f"kquotactl: error: user=bob: {key} needs Kafka {since} or later, and {broker}\n"
    for flags in (["--ip", "10.0.0.1"], ["--ip-defaults"]):
        r = admin(early, "alter", *flags, "--add-config", "connection_creation_rate=10")
        name = "10.0.0.1" if len(flags) == 2 else "<default>"
        assert (r.exit_code, r.stdout) == (1, "")
        assert r.stderr == f"kquotactl: error: ip={name}: ip quotas need Kafka 2.8 or later, and {broker}\n"
    for args in (["--entity-type", "ips"], ["--ip", "10.0.0.1"]):
        r = admin(early, "describe", *args)
        assert (r.exit_code, r.stdout) == (1, "")
        assert r.stderr == f"kquotactl: error: cannot describe ips: ip quotas need Kafka 2.8 or later, and {broker}\n"
    assert stored(early) == []


@pytest.mark.zookeeper
def test_plan_and_apply_name_each_entry_too_new_for_the_release_before_writing(early, tmp_path):
    release = release_of(early)
    broker = broker_words(early)
    path = write_manifest(
        tmp_path,
        """\
        quotas:
        - entity: {user: carol}
          config: {producer_byte_rate: 1MiB, controller_mutation_rate: 5}
        - entity: {ip: 10.1.1.1}
          config: {connection_creation_rate: 5}
        - entity: {client-id: y}
          config: {consumer_byte_rate: 5000}
        """,
    )
    expected = []
    if release < key_since("controller_mutation_rate"):
        expected.append(f"{path}:3: users/carol: controller_mutation_rate needs Kafka 2.7 or later, and {broker}")
    expected.append(f"{path}:4: ips/10.1.1.1: ip quotas need Kafka 2.8 or later, and {broker}")
    more = len(expected) - 1
    suffix = f" (and {more} more problem: entries the brokers' release refuses too)" if more else ""
    for args in (["plan", "-f", path], ["apply", "-f", path, "--yes"]):
        r = admin(early, *args)
        assert (r.exit_code, r.stdout) == (1, "")
        assert r.stderr == f"kquotactl: error: {expected[0]}{suffix}\n"
    assert stored(early) == []


@pytest.mark.zookeeper
def test_apply_verify_and_plan_converge_without_describe_cluster(early, tmp_path):
    """verify asks each broker Metadata lists (no DescribeCluster before 2.8, so no fenced brokers to name)."""
    release = release_of(early)
    keys = [k for k in live_keys() if KEYS[k].kind is KeyScope.CLIENT and release >= key_since(k)]
    config = ", ".join(f"{k}: {10 + i}" for i, k in enumerate(keys))
    path = write_manifest(
        tmp_path,
        f"""\
        quotas:
        - entity: {{user: "<default>"}}
          config: {{{config}}}
        - entity: {{user: alice, client-id: "app 1"}}
          config: {{{config}}}
        - entity: {{client-id: batch}}
          config: {{producer_byte_rate: 1MiB}}
        """,
    )
    r = admin(early, "apply", "-f", path, "--yes", "--verify")
    assert r.exit_code == 0, r.stderr
    assert "applied 3 entities, 0 already as desired, 0 failed" in r.stdout
    assert "verified: 3 entities reported by every broker (DescribeClientQuotas sent to each broker)" in r.stderr
    r = admin(early, "plan", "-f", path)
    assert (r.exit_code, r.stdout.strip()) == (0, "in sync: 3 entities as declared, nothing to change")
    described = admin(early, "describe", "-o", "json")
    assert described.exit_code == 0, described.stderr
    assert json.loads(described.stdout) == stored(early)  # the broker's answers are what ZooKeeper holds
    r = admin(early, "verify", "--user", "alice", "--client-id", "app 1", "-o", "json")
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["converged"] is True
    assert [b["broker"] for b in report["brokers"]] == ["broker 0"]


def test_the_newest_release_knows_every_key_and_ips(kraft):
    """The other side of the table: the newest broker accepts every live key and ip entities, and kquotactl refuses
    none of them there (the release it reads from the API versions is a lower bound, never an older line)."""
    with AdminBackend.connect(kraft.bootstrap) as b:
        release = b.wire.broker_release
    assert release is not None and release >= max(map(key_since, KEYS))
    for k in live_keys():
        entity = Entity.of(ip="10.0.0.1") if KEYS[k].kind is KeyScope.IP else Entity.of(user="oracle")
        assert broker_refuses(kraft, entity, k) is None
        assert release_refusal(entity, [k], release) is None


@pytest.mark.zookeeper
def test_zookeeper_writes_warn_of_what_brokers_of_2_6_would_never_enforce(early):
    """Through --zookeeper the release comes from the brokers' registrations, which follow the inter-broker protocol:
    2.6 registers without features (the real broker's registration decoded), 2.7 and later cannot be told apart, and
    a newer broker at inter.broker.protocol.version 2.6 registers as 2.6 does. So a warning, never a refusal."""
    from kazoo.client import KazooClient

    from kquotactl.core.kafkaversions import registration_release

    zk = KazooClient(early.zookeeper)
    zk.start()
    try:
        registration = zk.get("/brokers/ids/0")[0]
    finally:
        zk.stop()
    release = release_of(early)
    assert registration_release(registration) == ((2, 6) if release <= (2, 6) else None)
    zk_cli = ("--zookeeper", early.zookeeper)
    old = "broker 0 registers in ZooKeeper as Kafka 2.6 or older does (or as a newer broker at"
    old += " inter.broker.protocol.version 2.6 or older): a Kafka 2.6 broker stores it and never enforces it"
    cases = [
        (["--user", "bob"], "controller_mutation_rate=10", "user=bob: controller_mutation_rate needs Kafka 2.7"),
        (["--ip", "10.0.0.1"], "connection_creation_rate=10", "ip=10.0.0.1: ip quotas need Kafka 2.8"),
    ]
    for flags, config, why in cases:
        r = run_cli(*zk_cli, "alter", *flags, "--add-config", config, "-o", "json")
        assert r.exit_code == 0, r.stderr
        warned = release <= (2, 6) < key_since(config.split("=")[0])  # 2.7 registers as 2.8 does: no warning
        assert r.stderr == (f"kquotactl: warning: {why} or later, and {old}\n" if warned else "")
    assert len(stored(early)) == 2  # written: the brokers decide, as kafka-configs --zookeeper leaves them to


@pytest.fixture(scope="module")
def pinned_kafka(zk_server):
    """The ZooKeeper-mode release the harness runs (3.9), held at inter.broker.protocol.version 2.6: a rolling
    upgrade's first half, or a cluster kept there."""
    from fixtures_kafka import ZkModeKafka
    from kquotactl.testing.kafka import ZkKafkaServer

    connect = f"{zk_server.connect}/kafka39ibp26"
    server = ZkKafkaServer(zookeeper=connect, extra_props={"inter.broker.protocol.version": "2.6"})
    server.start()
    yield ZkModeKafka(server, connect)
    server.close()


@pytest.mark.zookeeper
def test_a_newer_broker_at_an_old_protocol_registers_as_2_6_does_and_enforces_ips(pinned_kafka):
    """Why --zookeeper only warns: the registration follows the inter-broker protocol, and this broker (3.9 at
    IBP 2.6) registers as 2.6 does, yet it knows ip quotas (its admin API stores one, as its release says)."""
    from kazoo.client import KazooClient

    from kquotactl.core.kafkaversions import registration_release

    zk = KazooClient(pinned_kafka.zookeeper)
    zk.start()
    try:
        assert registration_release(zk.get("/brokers/ids/0")[0]) == (2, 6)
    finally:
        zk.stop()
    r = admin(pinned_kafka, "alter", "--ip", "10.0.0.1", "--add-config", "connection_creation_rate=10", "-o", "json")
    assert (r.exit_code, r.stderr) == (0, "")
    r = run_cli(
        "--zookeeper",
        pinned_kafka.zookeeper,
        "alter",
        "--ip",
        "10.0.0.2",
        "--add-config",
        "connection_creation_rate=10",
        "-o",
        "json",
    )
    assert r.exit_code == 0 and r.stderr.startswith("kquotactl: warning: ip=10.0.0.2: ip quotas need Kafka 2.8"), (
        r.stderr
    )
    assert [rec["entity"] for rec in stored(pinned_kafka)] == [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]
