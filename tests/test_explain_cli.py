"""`kquotactl explain` end to end against a real ZooKeeper: the JSON contract, live answers equal to the pure
resolver on the same quotas, --connections streaming in order, --observed, --replay, and one-line errors."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.explain import Connection, ThrottleModel, explain_json
from kquotactl.core.keys import CLIENT_KEYS
from kquotactl.core.precedence import QuotaIndex

pytestmark = pytest.mark.zookeeper

# What the fixture writes, as kquotactl alter arguments and as the entities they make.
SETUP: list[tuple[list[str], Entity, dict[str, int | float]]] = [
    (["--user-defaults"], Entity(user=DEFAULT), {"producer_byte_rate": 1000, "request_percentage": 25.0}),
    (["--client-defaults"], Entity(client_id=DEFAULT), {"producer_byte_rate": 2000, "consumer_byte_rate": 500}),
    (["--user-defaults", "--client-defaults"], Entity(user=DEFAULT, client_id=DEFAULT), {"producer_byte_rate": 3000}),
    (["--user", "userA"], Entity(user="userA"), {"producer_byte_rate": 4000, "controller_mutation_rate": 7.5}),
    (
        ["--user", "userA", "--client-id", "client1"],
        Entity(user="userA", client_id="client1"),
        {"producer_byte_rate": 5000},
    ),
    (["--user", "userB"], Entity(user="userB"), {"producer_byte_rate": 6000}),
    (
        ["--user", "userB", "--client-id", "client1"],
        Entity(user="userB", client_id="client1"),
        {"producer_byte_rate": 7000},
    ),
    (["--user", "userB", "--client-defaults"], Entity(user="userB", client_id=DEFAULT), {"producer_byte_rate": 8000}),
    (["--user", "CN=svc one"], Entity(user="CN=svc one"), {"consumer_byte_rate": 10485760}),
    (["--client-id", "client1"], Entity(client_id="client1"), {"producer_byte_rate": 9000, "request_rate": 100}),
    (["--ip", "10.0.0.1"], Entity(ip="10.0.0.1"), {"connection_creation_rate": 5}),
    (["--ip-defaults"], Entity(ip=DEFAULT), {"connection_creation_rate": 20}),
]
INDEX = QuotaIndex({e: cfg for _, e, cfg in SETUP})

CONNECTIONS = [
    Connection.of("userA", "client1"),
    Connection.of("userA", "client2"),
    Connection.of("userB", "client1"),
    Connection.of("userB", "client9"),
    Connection.of("userD", "client1"),
    Connection.of("CN=svc one", "x"),
    Connection.of("alice", ""),
    Connection.of(client_id="client1"),
    Connection.of(ip="10.0.0.1"),
    Connection.of(ip="10.0.0.2"),
    Connection.of("userA", "client2", "10.0.0.1"),
]


@pytest.fixture(scope="module")
def quotas(zk_server, zk_admin):
    """A chroot holding SETUP, written through kquotactl alter (module-scoped: the tests only read)."""
    import uuid

    root = f"/t-{uuid.uuid4().hex[:12]}"
    zk_admin.ensure_path(root + "/brokers/ids")  # a broker registered there: kquotactl writes
    connect = f"{zk_server.connect}{root}"
    for args, _, cfg in SETUP:
        if "request_rate" in cfg:  # kquotactl refuses to write it to a cluster: stored as another tool would
            assert args[0] == "--client-id"
            data = json.dumps({"version": 1, "config": {k: str(v) for k, v in cfg.items()}}).encode()
            zk_admin.create(f"{root}/config/clients/{args[1]}", data, makepath=True)
            continue
        add = ",".join(f"{k}={v}" for k, v in cfg.items())
        r = run_cli("--zookeeper", connect, "alter", *args, "--add-config", add)
        assert r.exit_code == 0, r.stderr
    yield connect
    zk_admin.delete(root, recursive=True)


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> str:
    """The same quotas as SETUP, as a manifest file (offline)."""
    import yaml

    entries = [
        {"entity": {k: "<default>" if v is None else v for k, v in e.to_json().items()}, "config": cfg}
        for _, e, cfg in SETUP
    ]
    path = tmp_path_factory.mktemp("manifest") / "quotas.yaml"
    path.write_text(yaml.safe_dump({"quotas": entries}, sort_keys=False))
    return str(path)


def explain(connect: str, *args: str):
    return run_cli("--zookeeper", connect, "explain", *args)


def conn_args(c: Connection) -> list[str]:
    out = []
    if c.user is not None:
        out += ["--user", c.user, "--client-id", c.client_id or ""]
    if c.ip is not None:
        out += ["--ip", c.ip]
    return out


@pytest.mark.parametrize("conn", CONNECTIONS, ids=lambda c: str(c.to_json()))
def test_live_answer_equals_the_resolver_on_the_same_quotas(quotas, conn: Connection) -> None:
    r = explain(quotas, *conn_args(conn), "-o", "json", "--chain")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == explain_json(INDEX, conn, chain=True)


def test_json_contract_for_a_pair(quotas) -> None:
    r = explain(quotas, "--user", "userA", "--client-id", "client2", "-o", "json")
    data = json.loads(r.stdout)
    assert data["connection"] == {"user": "userA", "client-id": "client2"}
    assert [q["key"] for q in data["quotas"]] == list(CLIENT_KEYS)
    by_key = {q["key"]: q for q in data["quotas"]}
    assert by_key["producer_byte_rate"] == {
        "key": "producer_byte_rate",
        "limit": 4000,
        "level": 3,
        "entity_path": "users/userA",
        "quota_id": {"user": "userA", "client-id": ""},
        "sharing": "shared by every client of user userA",
    }
    assert by_key["consumer_byte_rate"]["level"] == 8
    assert by_key["consumer_byte_rate"]["quota_id"] == {"user": "", "client-id": "client2"}
    assert by_key["request_percentage"]["level"] == 6 and by_key["request_percentage"]["limit"] == 25.0
    assert by_key["request_rate"] == {
        "key": "request_rate",
        "limit": None,
        "level": None,
        "entity_path": None,
        "quota_id": {"user": "", "client-id": "client2"},
        "sharing": "unlimited; not enforced by any Apache Kafka broker (request_percentage is the shipped key)",
    }


def test_sanitized_user_in_path_and_quota_id(quotas) -> None:
    data = json.loads(explain(quotas, "--user", "CN=svc one", "--client-id", "x", "-o", "json").stdout)
    c = data["quotas"][1]
    assert c["entity_path"] == "users/CN%3Dsvc%20one" and c["quota_id"] == {"user": "CN%3Dsvc%20one", "client-id": ""}


def test_ip_answers(quotas) -> None:
    data = json.loads(explain(quotas, "--ip", "10.0.0.2", "-o", "json").stdout)
    assert data["quotas"] == [
        {
            "key": "connection_creation_rate",
            "limit": 20,
            "level": 2,
            "entity_path": "ips/<default>",
            "sharing": "every connection from 10.0.0.2 (each ip has its own count)",
        }
    ]


def test_observed_gives_the_steady_state_throttle(quotas) -> None:
    r = explain(
        quotas,
        *["--user", "userA", "--client-id", "client1", "-o", "json"],
        *["--observed", "producer_byte_rate=6000", "--observed", "request_percentage=50"],
        *["--window-num", "11", "--window-size-seconds", "1"],
    )
    by_key = {q["key"]: q for q in json.loads(r.stdout)["quotas"]}
    assert by_key["producer_byte_rate"]["throttle_ms"] == 2200  # (6000-5000)/5000 x 11 s
    assert by_key["request_percentage"]["throttle_ms"] == 1000  # capped at one sample
    assert "throttle_ms" not in by_key["consumer_byte_rate"]


def test_table_shows_the_chain_with_shadowed_levels(quotas) -> None:
    r = explain(quotas, "--user", "userB", "--client-id", "client1", "-o", "table")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "users/userB/clients/client1" in out and "applied 6.84 KiB/s (7000)" in out
    assert "shadowed 7.81 KiB/s (8000)" in out and "shadowed 5.86 KiB/s (6000)" in out
    assert "exclusive to user userB with client-id client1" in out


def test_connections_csv_streams_json_lines_in_order(quotas, tmp_path) -> None:
    rows = ["user,client-id,ip"]
    expected = []
    for i in range(300):
        c = CONNECTIONS[i % len(CONNECTIONS)]
        rows.append(f"{c.user or ''},{c.client_id or ''},{c.ip or ''}")
        expected.append(c)
    f = tmp_path / "conns.csv"
    f.write_text("\n".join(rows) + "\n")
    r = explain(quotas, "--connections", str(f), "-o", "json", "--observed", "producer_byte_rate=10000")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 300
    obs = ThrottleModel({"producer_byte_rate": 10000})
    for line, c in zip(lines, expected, strict=True):
        assert json.loads(line) == explain_json(INDEX, c, obs)


def test_connections_json_lines_from_stdin(quotas) -> None:
    text = '{"user": "userA", "client-id": "client1"}\n{"ip": "10.0.0.1"}\n'
    r = run_cli("--zookeeper", quotas, "explain", "--connections", "-", "-o", "json", input=text)
    assert r.exit_code == 0, r.stderr
    first, second = (json.loads(x) for x in r.stdout.splitlines())
    assert first["quotas"][0]["limit"] == 5000 and second["quotas"][0]["level"] == 1


def test_replay_reproduces_kafka_case(quotas, tmp_path) -> None:
    events = tmp_path / "events.txt"
    events.write_text("".join(f"{t} 400\n" for t in range(0, 10000, 1000)) + "10500 2300\n")
    r = run_cli("explain", "--replay", str(events), "--limit", "500", "-o", "json")
    assert r.exit_code == 0, r.stderr
    steps = [json.loads(x) for x in r.stdout.splitlines()]
    assert [s["throttle_ms"] for s in steps] == [0] * 10 + [2100]
    # the quota can come from the connection instead: clients/<default> consumer_byte_rate = 500
    r = explain(
        quotas, "--replay", str(events), "--key", "consumer_byte_rate", "--client-id", "c", "--user", "", "-o", "json"
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1])["throttle_ms"] == 2100


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "a", "--connections", "-"], "either --connections"),
        ([], "nothing to explain"),
        (["--user", "a", "-o", "kafka"], "-o kafka"),
        (["--ip", "300.1.1.1"], "valid IP address"),
        (["--user", "a", "--observed", "producer_byte_rat=5"], "did you mean producer_byte_rate"),
        (["--user", "a", "--static-default", "quota.producer.default=5"], "--kafka-version 2.8"),
        (["--user", "a", "--kafka-version", "2.x"], "expected X.Y"),
        (["--user", "a", "--limit", "5"], "go with --replay"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(quotas, args, message) -> None:
    r = explain(quotas, *args)
    assert r.exit_code == 1
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_bad_connections_line_names_the_line(quotas, tmp_path) -> None:
    f = tmp_path / "c.csv"
    f.write_text("user,ip\na,\nb,999.1.1.1\n")
    r = explain(quotas, "--connections", str(f), "-o", "json")
    assert r.exit_code == 1 and "line 3" in r.stderr


def test_static_default_on_a_2_8_broker(quotas) -> None:
    r = explain(
        quotas,
        *["--user", "nobody", "--client-id", "c", "-o", "json", "--kafka-version", "2.8"],
        *["--static-default", "quota.consumer.default=1MiB"],
    )
    assert r.exit_code == 0, r.stderr
    by_key = {q["key"]: q for q in json.loads(r.stdout)["quotas"]}
    # consumer: clients/<default> (500) is level 8, before the static default
    assert by_key["consumer_byte_rate"]["level"] == 8
    r = explain(
        quotas,
        *["--user", "nobody", "--client-id", "c", "-o", "json", "--kafka-version", "2.8", "--chain"],
        *["--static-default", "quota.producer.default=1MiB"],
    )
    by_key = {q["key"]: q for q in json.loads(r.stdout)["quotas"]}
    assert by_key["producer_byte_rate"]["level"] == 5  # users/<default>/clients/<default> still wins
    assert by_key["producer_byte_rate"]["chain"][-1] == {
        "level": 9,
        "entity_path": None,
        "value": 1048576,
        "status": "shadowed",
    }


@pytest.mark.parametrize("conn", CONNECTIONS, ids=lambda c: str(c.to_json()))
def test_offline_manifest_answers_exactly_as_live(quotas, manifest, conn: Connection) -> None:
    live = explain(quotas, *conn_args(conn), "-o", "json", "--chain")
    offline = run_cli("explain", "-f", manifest, *conn_args(conn), "-o", "json", "--chain")
    assert offline.exit_code == 0, offline.stderr
    assert json.loads(offline.stdout) == json.loads(live.stdout)


def test_offline_and_live_connections_streams_are_identical(quotas, manifest, tmp_path) -> None:
    f = tmp_path / "conns.jsonl"
    f.write_text("".join(json.dumps(c.to_json()) + "\n" for c in CONNECTIONS * 3))
    live = explain(quotas, "--connections", str(f), "-o", "json")
    offline = run_cli("explain", "-f", manifest, "--connections", str(f), "-o", "json")
    assert live.exit_code == offline.exit_code == 0
    assert offline.stdout == live.stdout and len(live.stdout.splitlines()) == 3 * len(CONNECTIONS)


def test_offline_needs_no_cluster_and_refuses_one_too(quotas, manifest) -> None:
    r = run_cli("explain", "-f", manifest, "--user", "userA", "--client-id", "client1", "-o", "table")
    assert r.exit_code == 0 and "users/userA/clients/client1" in r.stdout
    r = explain(quotas, "-f", manifest, "--user", "userA")
    assert r.exit_code == 1 and "-f reads the quotas from manifests (offline)" in r.stderr


def test_replay_controller_mutations_uses_the_token_bucket(tmp_path) -> None:
    events = tmp_path / "mutations.txt"
    events.write_text("0 60\n500 0\n")
    base = ("explain", "--replay", str(events), "--key", "controller_mutation_rate", "--limit", "5", "-o", "json")
    # strict (default): the bucket is checked before recording; the second request finds it below zero, refused
    r = run_cli(*base)
    assert r.exit_code == 0, r.stderr
    assert [json.loads(x) for x in r.stdout.splitlines()] == [
        {"time_ms": 0, "value": 60.0, "tokens": -5.0, "throttle_ms": 0, "rejected": False},
        {"time_ms": 500, "value": 0.0, "tokens": -2.5, "throttle_ms": 500, "rejected": True},
    ]
    # permissive (old request versions): recorded, then throttled
    r = run_cli(*base, "--mutation-mode", "permissive")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(x)["throttle_ms"] for x in r.stdout.splitlines()] == [1000, 500]
    r = run_cli(*base, "--mutation-mode", "lenient")
    assert r.exit_code != 0 and "lenient" in r.stderr
    r = run_cli(*base, "--kafka-version", "2.6")
    assert r.exit_code == 1 and "Kafka 2.7" in r.stderr and r.stdout == ""


def test_controller_mutations_are_measured_over_the_controller_window(tmp_path) -> None:
    """Kafka sizes the mutation bucket from controller.quota.window.*, not quota.window.* (QuotaFactory)."""
    events = tmp_path / "mutations.txt"
    events.write_text("0 60\n500 0\n")
    base = ("explain", "--replay", str(events), "--key", "controller_mutation_rate", "--limit", "5", "-o", "json")

    def tokens(*extra: str) -> list[float]:
        r = run_cli(*base, *extra)
        assert r.exit_code == 0, r.stderr
        return [json.loads(x)["tokens"] for x in r.stdout.splitlines()]

    assert tokens("--window-num", "20") == tokens() == [-5.0, -2.5]  # a bucket of 11 x 1 s x 5
    assert tokens("--controller-window-num", "20") == [40.0, 42.5]  # 20 x 1 s x 5 = 100
    assert tokens("--controller-window-size", "2") == [50.0, 52.5]  # 11 x 2 s x 5 = 110
    observed = ("explain", "--example", "--client-id", "x", "--observed", "controller_mutation_rate=20", "-o", "json")

    def throttle(*extra: str) -> int:
        r = run_cli(*observed, *extra)
        assert r.exit_code == 0, r.stderr
        [q] = [q for q in json.loads(r.stdout)["quotas"] if q["key"] == "controller_mutation_rate"]
        return int(q["throttle_ms"])

    assert throttle("--window-size", "2") == throttle() == 1000
    assert throttle("--controller-window-size", "2") == 2000  # the deficit is counted in controller samples


def test_observed_controller_mutations_follow_the_mode() -> None:
    base = ("explain", "--example", "--client-id", "x", "--observed", "controller_mutation_rate=20", "-o", "json")
    throttles = {}
    for mode in ("strict", "permissive"):
        r = run_cli(*base, "--mutation-mode", mode)
        assert r.exit_code == 0, r.stderr
        [q] = [q for q in json.loads(r.stdout)["quotas"] if q["key"] == "controller_mutation_rate"]
        throttles[mode] = q["throttle_ms"]
    # quota 10/s, 20 at each second's start for 12 s from a full bucket of 110: permissive records all 13 requests
    # (-30 -> 3 s); strict records 12 (-20) and refuses the 13th, which finds the bucket at -10 -> 1 s
    assert throttles == {"strict": 1000, "permissive": 3000}


@pytest.mark.parametrize("limit", ["0", "-5", "-0", "0.0"])
@pytest.mark.parametrize("key", ["producer_byte_rate", "request_percentage", "controller_mutation_rate"])
def test_replay_takes_zero_and_negative_limits(tmp_path, limit: str, key: str) -> None:
    events = tmp_path / "e.txt"
    events.write_text("0 5\n0 0\n1 5\n")
    for extra in ((), ("--window-num", "1", "--kafka-version", "2.8"), ("--window-num", "1")):
        r = run_cli("explain", "--replay", str(events), "--key", key, "--limit", limit, "-o", "json", *extra)
        assert r.exit_code == 0, r.stderr
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        assert len(lines) == 3 and all(isinstance(x["throttle_ms"], int) for x in lines)
    r = run_cli("explain", "--replay", str(events), "--limit", "-x")
    assert r.exit_code == 1 and "not a number" in r.stderr


def test_replay_window_num_one_never_crashes_and_shows_infinity_as_a_string(tmp_path) -> None:
    events = tmp_path / "e.txt"
    events.write_text("0 5\n")
    r = run_cli(
        "explain", "--replay", str(events), "--limit", "1", "--window-num", "1", "--kafka-version", "3.2", "-o", "json"
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == {"time_ms": 0, "value": 5.0, "rate": "Infinity", "window_ms": 0, "throttle_ms": 0}
    # 3.3 already floors the window at 1 ms (the fix was cherry-picked to 3.3.0)
    r = run_cli(
        "explain", "--replay", str(events), "--limit", "1", "--window-num", "1", "--kafka-version", "3.3", "-o", "json"
    )
    assert json.loads(r.stdout) == {"time_ms": 0, "value": 5.0, "rate": 5000.0, "window_ms": 1, "throttle_ms": 4999}


def test_observed_follows_the_kafka_version() -> None:
    base = ("explain", "--example", "--user", "u", "--observed", "consumer_byte_rate=10MiB", "-o", "json")

    def throttle(*extra: str) -> int:
        r = run_cli(*base, *extra)
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout)["quotas"][1]["throttle_ms"]

    # 5 MiB/s quota: (10 - 5) / 5 x W, W = 11 s on 3.8+, 10 s at a sample's start on <= 3.7
    assert throttle() == throttle("--kafka-version", "3.8") == 11000
    assert throttle("--kafka-version", "3.7") == 10000


def test_example_quota_set_needs_nothing(tmp_path) -> None:
    r = run_cli("explain", "--example", "--user", "alice", "--client-id", "ingest", "-o", "json")
    assert r.exit_code == 0, r.stderr
    p = json.loads(r.stdout)["quotas"][0]
    assert (p["level"], p["limit"], p["entity_path"]) == (2, 2097152, "users/alice/clients/<default>")
    events = tmp_path / "e.txt"
    events.write_text("0 60\n")
    r = run_cli(
        "explain", "--example", "--replay", str(events), "--key", "controller_mutation_rate", "--client-id", "x"
    )
    assert r.exit_code == 0, r.stderr  # clients/<default> 10 mutations/s: a burst of 110, no throttle
    assert json.loads(r.stdout)["throttle_ms"] == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_quota_sets_live_and_offline_agree(chroot, tmp_path, seed: int) -> None:
    """Random quota sets written to a real ZooKeeper and to a manifest: every connection explained the same."""
    import random

    import yaml

    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.changes import EntityChange

    rnd = random.Random(seed)
    users, clients = ["u1", "u2", "CN=x y", DEFAULT], ["c1", "c 2", "<default>", DEFAULT]
    quotas: dict[Entity, dict[str, int]] = {}
    for _ in range(14):
        kind = rnd.randrange(3)
        u, c = rnd.choice(users), rnd.choice(clients)
        e = Entity(user=u) if kind == 0 else Entity(client_id=c) if kind == 1 else Entity(user=u, client_id=c)
        quotas.setdefault(e, {})[rnd.choice((*CLIENT_KEYS[:2], "request_percentage"))] = rnd.randrange(1, 10**6)
    with ZooKeeperBackend(ZkSettings(connect=chroot.connect)) as b:
        b.alter([EntityChange(e, cfg) for e, cfg in quotas.items()])
    manifest = tmp_path / "q.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "quotas": [
                    {
                        "entity": {k: "<default>" if v is None else {"name": v} for k, v in e.to_json().items()},
                        "config": cfg,
                    }
                    for e, cfg in quotas.items()
                ]
            }
        )
    )
    conns = tmp_path / "c.jsonl"
    names = ["u1", "u2", "CN=x y", "<default>", "other", ""]
    conns.write_text(
        "".join(
            json.dumps({"user": u, "client-id": c}) + "\n" for u in names for c in ["c1", "c 2", "<default>", "zz", ""]
        )
    )
    live = run_cli("--zookeeper", chroot.connect, "explain", "--connections", str(conns), "-o", "json")
    offline = run_cli("explain", "-f", str(manifest), "--connections", str(conns), "-o", "json")
    assert live.exit_code == offline.exit_code == 0, live.stderr + offline.stderr
    assert live.stdout == offline.stdout
    index = QuotaIndex(quotas)
    for line, src in zip(live.stdout.splitlines(), conns.read_text().splitlines(), strict=True):
        c = json.loads(src)
        assert json.loads(line) == explain_json(index, Connection.of(c["user"], c["client-id"]))
