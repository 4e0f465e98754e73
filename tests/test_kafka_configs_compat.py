"""Never write what Kafka's own tools or brokers reject.

* ``request_rate`` (the KIP-124 draft key, never shipped) is refused on every live write path before anything is
  written, read and deleted when another tool stored it, and still simulated offline.
* Kafka 2.8.2's own ``kafka.admin.ConfigCommand`` (``--zookeeper``) can alter and describe every entity kquotactl
  wrote, and sees kquotactl's values.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable

import pytest

from conftest import run_cli, write_manifest, zk_cli
from fixtures_oracle import NEWEST_VERSION
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import InvalidValue
from kquotactl.core.javafmt import client_quota_entity_hash, java_string_hash
from kquotactl.core.javahashmap import java_hashmap_layout, java_string_compare
from kquotactl.core.keys import CLIENT_KEYS, IP_KEYS, KEYS, format_value
from kquotactl.testing.oracle import cases_per_run, mismatches

CLIENT_KEYS_SHIPPED = [k for k in CLIENT_KEYS if KEYS[k].enforced]
REFUSED = "request_rate is not a quota key of any Apache Kafka release"


def _one_line_refusal(r, prefix: str = "") -> None:
    assert r.exit_code == 1, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if not line.startswith("kquotactl: warning: ")]
    assert len(errors) == 1 and errors[0].startswith(f"kquotactl: error: {prefix}"), r.stderr
    assert REFUSED in r.stderr and "set request_percentage" in r.stderr, r.stderr


# -- request_rate: refused live, readable and deletable, simulated offline --------------------------------------


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    "argv",
    [
        ["alter", "--user", "alice", "--add-config", "producer_byte_rate=1,request_rate=10"],
        ["alter", "--user", "alice", "--add-config", "request_rate=10", "--dry-run"],
        ["--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "request_rate=10"],
        ["--alter", "--entity-type", "clients", "--entity-default", "--add-config", "request_rate=1"],
    ],
)
def test_request_rate_is_refused_on_zookeeper_and_nothing_is_written(chroot, argv) -> None:
    zk_cli(chroot, "alter", "--user", "bob", "--add-config", "producer_byte_rate=5")
    before = chroot.snapshot()
    _one_line_refusal(zk_cli(chroot, *argv))
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_request_rate_from_a_file_is_refused(chroot, tmp_path) -> None:
    props = write_manifest(tmp_path, "request_rate=5\nconsumer_byte_rate=7\n", "q.properties")
    before = chroot.snapshot()
    _one_line_refusal(zk_cli(chroot, "alter", "--user", "u", "--add-config-file", props), "user=u: ")
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_backend_alter_refuses_request_rate_for_the_whole_batch_before_writing(chroot) -> None:
    # the backend itself checks (every live write path goes through it): the first entity is not written either
    before = chroot.snapshot()
    with ZooKeeperBackend(ZkSettings(connect=chroot.connect)) as b, pytest.raises(InvalidValue, match=REFUSED):
        b.alter(
            [
                EntityChange(Entity(user="a"), {"producer_byte_rate": 1}),
                EntityChange(Entity(user="b"), {"request_rate": 1}),
            ]
        )
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_request_rate_stored_by_another_tool_is_shown_and_can_be_deleted(chroot) -> None:
    chroot.store_foreign("/config/users/alice", {"request_rate": "100", "producer_byte_rate": "1024"})
    r = zk_cli(chroot, "describe", "--user", "alice", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == [
        {"entity": {"user": "alice"}, "config": {"producer_byte_rate": 1024, "request_rate": 100}}
    ]
    r = zk_cli(chroot, "-o", "kafka", "describe", "--user", "alice")
    assert "request_rate=100" in r.stdout
    # altering another key keeps it (kquotactl did not introduce it); deleting it works
    assert zk_cli(chroot, "alter", "--user", "alice", "--add-config", "consumer_byte_rate=1").exit_code == 0
    assert json.loads(chroot.get("/config/users/alice"))["config"]["request_rate"] == "100"
    r = zk_cli(chroot, "alter", "--user", "alice", "--delete-config", "request_rate")
    assert r.exit_code == 0, r.stderr
    assert json.loads(chroot.get("/config/users/alice"))["config"] == {
        "producer_byte_rate": "1024",
        "consumer_byte_rate": "1",
    }


MANIFEST = """\
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 1024}
  - entity: {client-id: app}
    config:
      consumer_byte_rate: 2048
      request_rate: 100
"""


@pytest.mark.zookeeper
@pytest.mark.parametrize("command", [["plan"], ["apply", "--yes"], ["apply", "--dry-run"]])
def test_manifest_with_request_rate_is_refused_against_a_live_cluster_with_file_and_line(
    chroot, tmp_path, command
) -> None:
    m = write_manifest(tmp_path, MANIFEST)
    before = chroot.snapshot()
    r = zk_cli(chroot, *command, "-f", m)
    _one_line_refusal(r, f"{m}:7: clients/app: ")
    assert chroot.snapshot() == before


@pytest.mark.zookeeper
def test_saved_plan_with_request_rate_is_refused_before_any_write(chroot, tmp_path) -> None:
    live = write_manifest(tmp_path, "quotas: []\n", "live.yaml")
    m = write_manifest(tmp_path, MANIFEST)
    out = tmp_path / "plan.json"
    r = run_cli("plan", "-f", m, "--live-from", live, "--out", str(out))  # offline planning is fine
    assert r.exit_code == 2, r.stderr
    before = chroot.snapshot()
    _one_line_refusal(zk_cli(chroot, "apply", "--plan", str(out), "--yes"), "client-id=app: ")
    assert chroot.snapshot() == before


def test_offline_manifest_uses_keep_request_rate_and_explain_says_it_is_not_enforced(tmp_path) -> None:
    m = write_manifest(tmp_path, MANIFEST)
    r = run_cli("validate", "-f", m)
    assert r.exit_code == 0 and "request_rate is not enforced by any Apache Kafka broker" in r.stderr
    r = run_cli("explain", "-f", m, "--user", "u", "--client-id", "app", "-o", "json")
    assert r.exit_code == 0, r.stderr
    rr = next(q for q in json.loads(r.stdout)["quotas"] if q["key"] == "request_rate")
    assert rr["limit"] == 100 and rr["entity_path"] == "clients/app"
    assert rr["sharing"].endswith("; not enforced by any Apache Kafka broker (request_percentage is the shipped key)")
    r = run_cli("-o", "table", "explain", "-f", m, "--user", "u", "--client-id", "app")
    assert "not enforced by any Apache Kafka broker" in r.stdout


# -- Kafka 2.8.2's own kafka-configs (--zookeeper) alters and describes every entity kquotactl wrote --------------

_USERS = [
    "alice", "CN=svc one,OU=Data Eng,O=Corp\\, Inc.,C=US", "ünïcødé", "日本語", "a/b", "100% ~*+ x", "007",
    "svc.x-y_z", "emoji 😀", "semi;colon=eq", "tab\there", "'quoted'", 'dq"x',
]  # fmt: skip
_CLIENTS = ["app", "c 1", "producer-1/x", "é€", "%2F", "*", "client.id_1"]
_VALUES = {
    "producer_byte_rate": lambda rng: rng.choice([1, 1024, 10 * 2**20, rng.randint(1, 2**53), 2**63 - 1]),
    "consumer_byte_rate": lambda rng: rng.randint(1, 10**12),
    "request_percentage": lambda rng: rng.choice([0.5, 12.5, 100.0, 1e-4, 1e7, rng.uniform(0.001, 1000.0)]),
    "controller_mutation_rate": lambda rng: rng.choice([1.0, 3.0, 0.1, rng.uniform(0.01, 1e9)]),
    "connection_creation_rate": lambda rng: rng.randint(1, 2**31 - 1),
}


def _random_entity(rng: random.Random, i: int) -> Entity:
    user = DEFAULT if rng.random() < 0.2 else rng.choice(_USERS) + ("" if rng.random() < 0.6 else f"-{i}")
    client = DEFAULT if rng.random() < 0.2 else rng.choice(_CLIENTS) + ("" if rng.random() < 0.6 else f"-{i}")
    kind = rng.randrange(4)
    if kind == 0:
        return Entity(user=user)
    if kind == 1:
        return Entity(client_id=client)
    if kind == 2:
        return Entity(user=user, client_id=client)
    return Entity(ip=rng.choice([DEFAULT, f"192.0.2.{i}", f"2001:db8::{i:x}", f"10.{i}.0.1"]))


def _config_command_entity(entity: Entity) -> list[str]:
    args: list[str] = []
    for flag, name in (("users", entity.user), ("clients", entity.client_id), ("ips", entity.ip)):
        if name is not None:
            args += ["--entity-type", flag, *(["--entity-default"] if name is DEFAULT else ["--entity-name", name])]
    return args


_DESCRIBED = re.compile(r"^Configs for .* are (.*)$", re.MULTILINE)


@pytest.mark.jvm
@pytest.mark.zookeeper
def test_kafka_configs_2_8_alters_and_describes_every_entity_kquotactl_wrote(chroot, kafka_oracle, oracle_seed):
    rng = random.Random(oracle_seed)
    wanted: dict[Entity, dict[str, int | float]] = {}
    every_default = [
        Entity(user=DEFAULT),
        Entity(client_id=DEFAULT),
        Entity(user=DEFAULT, client_id=DEFAULT),
        Entity(user=rng.choice(_USERS), client_id=DEFAULT),
        Entity(user=DEFAULT, client_id=rng.choice(_CLIENTS)),
        Entity(ip=DEFAULT),
    ]
    for i in range(30):
        entity = every_default[i] if i < len(every_default) else _random_entity(rng, i)
        keys = IP_KEYS if entity.ip is not None else CLIENT_KEYS_SHIPPED
        wanted[entity] = {k: _VALUES[k](rng) for k in rng.sample(keys, rng.randint(1, len(keys)))}
    with ZooKeeperBackend(ZkSettings(connect=chroot.connect)) as b:
        assert {r.outcome.value for r in b.alter([EntityChange(e, c) for e, c in wanted.items()])} == {"applied"}

    # kafka-configs alters each entity (it validates the whole stored config with DynamicConfig), then describes it
    requests, expected = [], {}
    for entity, config in wanted.items():
        keys = IP_KEYS if entity.ip is not None else CLIENT_KEYS_SHIPPED
        key = rng.choice(keys)
        value = _VALUES[key](rng)
        text = format_value(KEYS[key], value)
        head = ["--zookeeper", chroot.connect]
        requests.append({"args": [*head, "--alter", *_config_command_entity(entity), "--add-config", f"{key}={text}"]})
        requests.append({"args": [*head, "--describe", *_config_command_entity(entity)]})
        stored = {k: format_value(KEYS[k], v) for k, v in config.items()} | {key: text}
        expected[entity] = stored
        wanted[entity] = {**config, key: value}
    answers = kafka_oracle("2.8", "ConfigCommandOracle").ask_many(requests)
    replay = f"KQUOTACTL_ORACLE_SEED={oracle_seed}"
    for (entity, stored), alter, describe in zip(expected.items(), answers[::2], answers[1::2], strict=True):
        assert alter["exit"] == 0 and "Completed updating config" in alter["out"], (replay, entity, alter)
        assert describe["exit"] == 0, (replay, entity, describe)
        [line] = _DESCRIBED.findall(describe["out"])
        assert dict(kv.split("=", 1) for kv in line.split(",")) == stored, (replay, entity, describe["out"])
    # and kquotactl reads back what kafka-configs wrote
    with ZooKeeperBackend(ZkSettings(connect=chroot.connect)) as b:
        assert {r.entity: dict(r.config) for r in b.describe()} == wanted, replay


# -- -o kafka on --bootstrap-server: kafka-configs' order, from Java's own HashMap ---------------------------------

_SAME_HASH = ("Aa", "BB")  # "Aa".hashCode() == "BB".hashCode(): blocks of them make keys with equal hashes


def _colliding(rng: random.Random, blocks: int, prefix: str = "") -> list[str]:
    """All 2**blocks strings of ``blocks`` Aa/BB blocks: equal String.hashCode (so equal buckets at any size)."""
    out = [prefix]
    for _ in range(blocks):
        out = [s + b for s in out for b in _SAME_HASH]
    rng.shuffle(out)
    return out


def _random_name(rng: random.Random) -> str:
    alphabet = "abcXYZ019 _-.@=/é€中😀"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))


def _string_case(rng: random.Random) -> list[str]:
    r = rng.random()
    if r < 0.3:  # the quota keys themselves, in any response order
        return rng.sample(list(KEYS), rng.randint(1, len(KEYS)))
    if r < 0.5:  # 9 or 10 keys in one bin of a small table: Java doubles the table instead of making a tree
        keys = _colliding(rng, 4, _random_name(rng))[: rng.choice([9, 10])]
        keys += [_random_name(rng) + str(i) for i in range(rng.randint(0, 2))]
        rng.shuffle(keys)
        return list(dict.fromkeys(keys))
    if r < 0.7:  # groups of 8 equal hashes among others
        keys = _colliding(rng, 3, _random_name(rng)) + [_random_name(rng) for _ in range(rng.randint(0, 12))]
        rng.shuffle(keys)
        return list(dict.fromkeys(keys))
    if r < 0.85:  # red-black tree bins: 9+ equal hashes in a table of 64+ buckets (String.compareTo orders them)
        keys = _colliding(rng, rng.choice([4, 5]), _random_name(rng))
        keys += [_random_name(rng) + str(i) for i in range(rng.randint(20, 300))]
        rng.shuffle(keys)
        return list(dict.fromkeys(keys))
    return list(dict.fromkeys(_random_name(rng) + str(i) for i in range(rng.randint(1, 300))))


def _by(strings: list[str], compare: Callable[[str, str], int]) -> Callable[[int, int], int]:
    return lambda a, b: compare(strings[a], strings[b])


def _entity_case(rng: random.Random) -> list[tuple[tuple[str, str | None], ...]]:
    pool = _colliding(rng, 3) + [_random_name(rng) for _ in range(8)]
    out: dict[tuple[tuple[str, str | None], ...], None] = {}
    for _ in range(rng.choice([1, 3, 12, 13, 40, 200])):
        name = lambda: None if rng.random() < 0.15 else rng.choice(pool)  # noqa: E731
        kind = rng.randrange(4)
        parts: list[tuple[str, str | None]]
        if kind == 0:
            parts = [("user", name())]
        elif kind == 1:
            parts = [("client-id", name())]
        elif kind == 2:
            parts = [("user", name()), ("client-id", name())]
            if rng.random() < 0.5:
                parts.reverse()
        else:
            parts = [("ip", None if rng.random() < 0.2 else f"10.0.{rng.randrange(4)}.{rng.randrange(256)}")]
        if tuple(sorted(parts, key=str)) not in {tuple(sorted(p, key=str)) for p in out}:
            out[tuple(parts)] = None
    return list(out)


@pytest.mark.jvm
def test_java_hashmap_order_matches_java(kafka_oracle, oracle_seed) -> None:
    rng = random.Random(oracle_seed)
    n = cases_per_run(2000)
    strings = [_string_case(rng) for _ in range(n)]
    entities = [_entity_case(rng) for _ in range(n // 4)]
    requests = [{"initial": len(s), "strings": s} for s in strings]
    requests += [{"initial": len(e), "entities": [list(p) for p in e]} for e in entities]
    answers = kafka_oracle(NEWEST_VERSION, "HashMapOrderOracle").ask_many(requests)
    ours = [
        java_hashmap_layout(((i, java_string_hash(k)) for i, k in enumerate(s)), len(s), _by(s, java_string_compare))
        for s in strings
    ]
    ours += [java_hashmap_layout(((i, client_quota_entity_hash(p)) for i, p in enumerate(e)), len(e)) for e in entities]
    # a red-black tree bin (9+ keys in one bin of a 64+ table) is not emulated: those cases are left out
    exact = [
        (case, order, a["order"]) for case, (order, ok), a in zip(strings + entities, ours, answers, strict=True) if ok
    ]
    assert len(exact) > 0.9 * len(ours)
    bad = list(mismatches([c for c, _, _ in exact], (o for _, o, _ in exact), (a for _, _, a in exact)))
    assert not bad, f"seed {oracle_seed} (KQUOTACTL_ORACLE_SEED={oracle_seed}): {bad}"


def _describe_forms(rng: random.Random, wanted: dict[Entity, dict[str, int | float]]) -> list[list[str]]:
    users = sorted({e.user for e in wanted if isinstance(e.user, str)}) or ["nobody"]
    clients = sorted({e.client_id for e in wanted if isinstance(e.client_id, str)}) or ["none"]
    ips = sorted({e.ip for e in wanted if isinstance(e.ip, str)}) or ["192.0.2.250"]
    pairs = [e for e in wanted if isinstance(e.user, str) and isinstance(e.client_id, str)]
    u, c, ip = rng.choice(users), rng.choice(clients), rng.choice(ips)
    pu, pc = (pairs[0].user, pairs[0].client_id) if pairs else (u, c)
    forms = [
        ["--entity-type", "users"],
        ["--entity-type", "clients"],
        ["--entity-type", "ips"],
        ["--entity-type", "users", "--entity-type", "clients"],
        ["--entity-type", "clients", "--entity-type", "users"],
        ["--entity-type", "users", "--entity-name", u],
        ["--entity-type", "users", "--entity-default"],
        ["--entity-type", "clients", "--entity-name", c],
        ["--entity-type", "clients", "--entity-default"],
        ["--entity-type", "users", "--entity-name", u, "--entity-type", "clients"],
        ["--entity-type", "users", "--entity-name", pu, "--entity-type", "clients", "--entity-name", pc],
        ["--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-default"],
        ["--entity-type", "users", "--entity-default", "--entity-type", "clients"],
        ["--entity-type", "ips", "--entity-name", ip],
        ["--entity-type", "ips", "--entity-default"],
        ["--user", u],
        ["--client", c],
        ["--user", pu, "--client", pc],
        ["--user", u, "--client-defaults"],
        ["--user-defaults"],
        ["--client-defaults"],
        ["--user-defaults", "--client-defaults"],
        ["--user-defaults", "--client", c],
        ["--ip", ip],
        ["--ip-defaults"],
    ]
    return forms


def _random_quota_set(rng: random.Random, n: int, ipv6: bool = True) -> dict[Entity, dict[str, int | float]]:
    out: dict[Entity, dict[str, int | float]] = {}
    for i in range(n):
        entity = _random_entity(rng, i)
        if not ipv6 and entity.ip is not None and ":" in str(entity.ip):
            continue
        keys = IP_KEYS if entity.ip is not None else CLIENT_KEYS_SHIPPED
        out[entity] = {k: _VALUES[k](rng) for k in rng.sample(keys, rng.randint(1, len(keys)))}
    return out


def _kafka_lines(text: str) -> str:
    # kafka-configs adds users' SCRAM credentials to user describes; kquotactl shows quotas only. kquotactl escapes
    # a name's control characters (a tab as \t: one entity, one line); every other byte is kafka-configs' own
    from kquotactl.core.wording import escaped

    return "".join(
        escaped(line.rstrip("\n")) + "\n"
        for line in text.splitlines()
        if not line.startswith("SCRAM credential configs")
    )


@pytest.mark.jvm
@pytest.mark.kafka
@pytest.mark.parametrize("broker", ["kraft", pytest.param("zkmode", marks=pytest.mark.zookeeper)])
def test_describe_o_kafka_is_byte_identical_to_kafka_configs(request, broker, kafka_oracle, oracle_seed) -> None:
    from kquotactl.backends.kafka.quotas import AdminBackend

    server = request.getfixturevalue(broker)
    rng = random.Random(oracle_seed)
    # a ZooKeeper-mode broker sanitizes an ip before checking it: it refuses every IPv6 address (2001%3Adb8...)
    wanted = _random_quota_set(rng, rng.choice([12, 40, 90]), ipv6=broker == "kraft")
    with AdminBackend.connect(server.bootstrap) as admin:
        results = admin.alter([EntityChange(e, c) for e, c in wanted.items()])
        assert {r.outcome.value for r in results} == {"applied"}, [r.message for r in results]
        # a KRaft broker applies the controller's records asynchronously
        deadline = time.monotonic() + 15
        while len(admin.describe()) < len(wanted) and time.monotonic() < deadline:
            time.sleep(0.05)
    forms = _describe_forms(rng, wanted)
    head = ["--bootstrap-server", server.bootstrap, "--describe"]
    kafka = kafka_oracle(NEWEST_VERSION, "ConfigCommandOracle").ask_many([{"args": [*head, *f]} for f in forms])
    ours = [run_cli("-o", "kafka", *head, *f) for f in forms]
    replay = f"KQUOTACTL_ORACLE_SEED={oracle_seed}"
    for form, k, o in zip(forms, kafka, ours, strict=True):
        assert k["exit"] == 0, (replay, form, k)
        assert o.exit_code == 0, (replay, form, o.stderr)
    got = [o.stdout for o in ours]
    want = [_kafka_lines(k["out"]) for k in kafka]
    bad = list(mismatches(forms, got, want, limit=3))
    assert not bad, f"{replay}, {broker}: {bad}"
