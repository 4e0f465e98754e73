"""`kquotactl alter` / `describe` end to end against a real ZooKeeper (in-process and real subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import click
import pytest

from conftest import run_cli, run_subprocess
from kquotactl.cli.entityargs import ENTITY_DEFAULT, EntityArgs

pytestmark = pytest.mark.zookeeper


def zk(chroot, *args: str):
    return run_cli("--zookeeper", chroot.connect, *args)


# -- bad input: one line, exit 1, nothing written ------------------------------------------------------

REJECTED = [
    (["alter", "--user", "alice", "--add-config", "producer_byte_rat=5"], "did you mean producer_byte_rate"),
    (["alter", "--ip", "192.0.2.1", "--add-config", "producer_byte_rate=5"], "producer_byte_rate is not valid for ips"),
    (["alter", "--user", "alice", "--add-config", "connection_creation_rate=5"], "only valid for ips"),
    (["alter", "--user", "alice", "--add-config", "producer_byte_rate=NaN"], "NaN"),
    (["alter", "--user", "alice", "--add-config", "request_percentage=Infinity"], "Infinity"),
    (["alter", "--user", "alice", "--add-config", "producer_byte_rate=0"], "greater than 0"),
    (["alter", "--user", "alice", "--add-config", "consumer_byte_rate=-1"], "greater than 0"),
    (["alter", "--user", "alice", "--add-config", "producer_byte_rate=10.5"], "whole number"),
    (["alter", "--ip", "192.0.2.1", "--add-config", "connection_creation_rate=1.5"], "whole number"),
    (["alter", "--user", "alice", "--add-config", "producer_byte_rate=9223372036854775808"], "too large for LONG"),
    (["alter", "--ip", "192.0.2.1", "--add-config", "connection_creation_rate=2147483648"], "too large for INT"),
    (["alter", "--user", "alice", "--add-config", "producer_byte_rate=lots"], "not a number"),
    (["alter", "--user", "alice", "--add-config", "producer_byte_rate="], "empty"),
    (
        ["alter", "--ip", "192.0.2.1", "--user", "alice", "--add-config", "connection_creation_rate=5"],
        "INVALID_REQUEST",
    ),
    (
        [
            "alter",
            "--entity-type",
            "ips",
            "--entity-name",
            "1.2.3.4",
            "--entity-type",
            "clients",
            "--entity-name",
            "c",
            "--add-config",
            "connection_creation_rate=5",
        ],
        "INVALID_REQUEST",
    ),
    (["alter", "--ip", "not-an-ip", "--add-config", "connection_creation_rate=5"], "valid IP address"),
    (["alter", "--ip", "1.2.3.256", "--add-config", "connection_creation_rate=5"], "valid IP address"),
    (["alter", "--user", "alice", "--add-config", "a=="], 'format "key=val"'),
    (
        ["alter", "--user", "alice", "--add-config", "producer_byte_rate=1", "--delete-config", "producer_byte_rate"],
        "both added and deleted",
    ),
    (["alter", "--user", "alice", "--delete-config", "consumer_byte_rate"], "Invalid config(s): consumer_byte_rate"),
    (["alter", "--entity-type", "users", "--add-config", "producer_byte_rate=1"], "entity-name or default entity"),
    (["alter", "--user", "alice"], "nothing to change"),
    (
        ["alter", "--user", "alice", "--entity-type", "users", "--add-config", "producer_byte_rate=1"],
        "Duplicate entity type(s) specified: users",  # kafka-configs checks duplicates before mixed forms
    ),
    (
        ["alter", "--user", "alice", "--entity-type", "clients", "--add-config", "producer_byte_rate=1"],
        "should not be used in conjunction",
    ),
    (
        [
            "alter",
            "--entity-type",
            "users",
            "--entity-type",
            "users",
            "--entity-name",
            "a",
            "--entity-name",
            "b",
            "--add-config",
            "producer_byte_rate=1",
        ],
        "Duplicate entity type(s) specified: users",
    ),
    (["alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[iterations=4096,password=x]"], "SCRAM credential"),
    (
        [
            "alter",
            "--entity-type",
            "users",
            "--entity-name",
            "a",
            "--entity-name",
            "b",
            "--add-config",
            "producer_byte_rate=1",
        ],
        "More entity names",
    ),
    (["alter", "--user", "", "--add-config", "producer_byte_rate=1", "--entity-type", "clients"], "should not be used"),
    (["--alter", "--describe", "--user", "alice"], "exactly one action"),
    (
        ["alter", "--user", "alice", "--add-config", "request_percentage=5", "--add-config-file", "/nonexistent"],
        "Only one of --add-config or --add-config-file",
    ),
]


@pytest.mark.parametrize(("args", "message"), REJECTED, ids=[" ".join(a)[:60] for a, _ in REJECTED])
def test_bad_input_is_one_line_exit_1_and_writes_nothing(chroot, args, message) -> None:
    seed = zk(chroot, "alter", "--user", "seed", "--add-config", "producer_byte_rate=1")
    assert seed.exit_code == 0
    before = chroot.snapshot()
    r = zk(chroot, *args)
    assert r.exit_code == 1, r
    assert message in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert r.stdout == ""
    assert chroot.snapshot() == before


def test_unreachable_zookeeper_fails_fast_with_one_line() -> None:
    t = time.monotonic()
    r = run_subprocess("--zookeeper", "127.0.0.1:1", "--connect-timeout", "5", "describe")
    assert r.exit_code == 1
    assert r.stderr.strip() == "kquotactl: error: cannot connect to ZooKeeper at 127.0.0.1:1: connection refused"
    assert time.monotonic() - t < 4  # a refused connection does not wait out the connect timeout


def test_missing_chroot_is_an_error_not_a_silent_new_tree(zk_server) -> None:
    r = run_cli("--zookeeper", zk_server.connect + "/no-such-chroot", "describe")
    assert r.exit_code == 1
    assert "/no-such-chroot does not exist" in r.stderr


def test_no_cluster_given_says_what_to_pass() -> None:
    r = run_cli("describe", env={"KQUOTACTL_ZOOKEEPER": "", "KQUOTACTL_BOOTSTRAP_SERVER": ""})
    assert r.exit_code == 1
    assert "--zookeeper" in r.stderr and "--bootstrap-server" in r.stderr


# -- alter/describe behaviour -------------------------------------------------------------------------

NAMES = [
    "user with spaces",
    "a,b",
    "CN=x,O=y",
    "star*",
    "ünïcødé",
    "<default>",
    "tilde~",
    "100%",
    "a/b",
    "../x",
    "+plus",
    "...",
]


@pytest.mark.parametrize("name", NAMES)
def test_describe_round_trips_real_names(chroot, name: str) -> None:
    literal = ("--literal-names",) if name == "<default>" else ()  # else "<default>" is the default entity
    assert (
        zk(chroot, "alter", "--user", name, "--client-id", name, *literal, "--add-config", "producer_byte_rate=1024")
    ).exit_code == 0
    r = zk(chroot, "describe", "-o", "json")
    assert json.loads(r.stdout) == [
        {"entity": {"user": name, "client-id": name}, "config": {"producer_byte_rate": 1024}}
    ]
    r = zk(chroot, "describe", "--user", name, "--client-id", name, *literal, "-o", "json")
    assert json.loads(r.stdout)[0]["entity"] == {"user": name, "client-id": name}


@pytest.mark.parametrize("name", [".", ".."])
def test_names_zookeeper_cannot_hold_are_refused_cleanly(chroot, name: str) -> None:
    before = chroot.snapshot()
    r = zk(chroot, "alter", "--user", name, "--add-config", "producer_byte_rate=1")
    assert r.exit_code == 1 and "cannot be stored in ZooKeeper" in r.stderr and len(r.stderr.splitlines()) == 1
    assert chroot.snapshot() == before
    assert zk(chroot, "describe", "--user", name, "-o", "json").stdout.strip() == "[]"


def test_default_entities_appear_as_null_and_real_default_name_does_not_collide(chroot) -> None:
    assert zk(chroot, "alter", "--user-defaults", "--add-config", "producer_byte_rate=1").exit_code == 0
    assert (
        zk(
            chroot,
            "alter",
            "--entity-type",
            "users",
            "--entity-name",
            "<default>",
            "--literal-names",
            "--add-config",
            "producer_byte_rate=2",
        ).exit_code
        == 0
    )
    assert (
        zk(chroot, "alter", "--user", "alice", "--client-defaults", "--add-config", "request_percentage=3").exit_code
        == 0
    )
    out = json.loads(zk(chroot, "describe", "-o", "json").stdout)
    assert out == [
        {"entity": {"user": None}, "config": {"producer_byte_rate": 1}},
        {"entity": {"user": "<default>"}, "config": {"producer_byte_rate": 2}},
        {"entity": {"user": "alice", "client-id": None}, "config": {"request_percentage": 3.0}},
    ]
    assert chroot.children("/config/users") == ["%3Cdefault%3E", "<default>", "alice"]


def test_describe_filters_like_kafka_configs(chroot) -> None:
    for args in (
        ["--user", "u1"],
        ["--user", "u1", "--client-id", "c1"],
        ["--user-defaults"],
        ["--client-id", "c1"],
        ["--ip", "10.0.0.1"],
    ):
        key = "connection_creation_rate=5" if "--ip" in args else "producer_byte_rate=5"
        assert zk(chroot, "alter", *args, "--add-config", key).exit_code == 0

    def entities(*args: str) -> list[dict]:
        r = zk(chroot, "describe", *args, "-o", "json")
        assert r.exit_code == 0, r
        return [e["entity"] for e in json.loads(r.stdout)]

    assert len(entities()) == 5
    assert entities("--entity-type", "users") == [{"user": None}, {"user": "u1"}]
    assert entities("--entity-type", "users", "--entity-name", "u1") == [{"user": "u1"}]
    assert entities("--entity-type", "users", "--entity-name", "u1", "--entity-type", "clients") == [
        {"user": "u1", "client-id": "c1"}
    ]
    assert entities("--entity-type", "clients") == [{"client-id": "c1"}]
    assert entities("--entity-type", "users", "--entity-default") == [{"user": None}]
    assert entities("--ip", "10.0.0.1") == [{"ip": "10.0.0.1"}]
    assert entities("--entity-type", "ips") == [{"ip": "10.0.0.1"}]
    assert entities("--user", "nobody") == []


def test_alter_updates_and_removes_keys_and_reports_the_change(chroot) -> None:
    r = zk(
        chroot,
        "alter",
        "--user",
        "alice",
        "--add-config",
        "producer_byte_rate=10MiB,consumer_byte_rate=1e6",
        "-o",
        "table",
    )
    assert r.exit_code == 0
    assert (
        "updated user=alice" in r.stdout
        and "producer_byte_rate = 10 MiB/s (10485760) (new), consumer_byte_rate = 977 KiB/s (1000000) (new)" in r.stdout
    )
    r = zk(
        chroot,
        "alter",
        "--user",
        "alice",
        "--add-config",
        "producer_byte_rate=2048",
        "--delete-config",
        "consumer_byte_rate",
        "-o",
        "json",
    )
    assert json.loads(r.stdout) == {
        "entity": {"user": "alice"},
        "outcome": "applied",
        "before": {"producer_byte_rate": 10485760, "consumer_byte_rate": 1000000},
        "after": {"producer_byte_rate": 2048},
    }
    assert len(chroot.notifications()) == 2


def test_add_config_file_and_dry_run(chroot, tmp_path) -> None:
    props = tmp_path / "quota.properties"
    props.write_text("# a comment\nproducer_byte_rate = 1024\nrequest_percentage: 25\n")
    r = zk(chroot, "alter", "--client-id", "app", "--add-config-file", str(props), "--dry-run", "-o", "table")
    assert r.exit_code == 0 and "dry run, nothing written" in r.stdout
    assert not chroot.exists("/config/clients/app")
    assert zk(chroot, "alter", "--client-id", "app", "--add-config-file", str(props)).exit_code == 0
    assert json.loads(chroot.get("/config/clients/app"))["config"] == {
        "request_percentage": "25.0",
        "producer_byte_rate": "1024",
    }


def test_if_exists_makes_deleting_an_unset_key_a_no_op(chroot) -> None:
    r = zk(chroot, "alter", "--user", "alice", "--delete-config", "producer_byte_rate", "--if-exists", "-o", "table")
    assert r.exit_code == 0 and "unchanged" in r.stdout
    assert not chroot.exists("/config/changes") or chroot.notifications() == []


# -- kafka-configs' flat form and output ------------------------------------------------------------------


def test_flat_kafka_configs_form_and_output(chroot) -> None:
    r = run_cli(
        "--zookeeper",
        chroot.connect,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "user1",
        "--entity-type",
        "clients",
        "--entity-name",
        "clientA",
        "--add-config",
        "producer_byte_rate=1024,request_percentage=200",
    )
    assert r.exit_code == 0
    assert r.stdout == "Completed updating config for entity: user-principal 'user1', client-id 'clientA'.\n"
    r = run_cli(
        "--zookeeper",
        chroot.connect,
        "--alter",
        "--entity-type",
        "users",
        "--entity-default",
        "-add-config",
        "consumer_byte_rate=2048",
    )  # jopt also accepts one dash on long options
    assert r.stdout == "Completed updating config for entity: default user-principal.\n"
    r = run_cli(
        "--alter", "--ip", "1.2.3.4", "--add-config", "connection_creation_rate=10", "--zookeeper", chroot.connect
    )
    assert r.stdout == "Completed updating config for entity: ips '1.2.3.4'.\n"
    r = run_cli("--describe", "--zookeeper", chroot.connect, "--entity-type", "users", "--entity-type", "clients")
    assert r.stdout == (
        "Configs for user-principal 'user1', client-id 'clientA' are request_percentage=200.0,producer_byte_rate=1024\n"
    )
    r = run_cli("--zookeeper", chroot.connect, "--describe", "--entity-type", "users")
    assert r.stdout == "Configs for default user-principal are consumer_byte_rate=2048\n"
    r = run_cli("--zookeeper", chroot.connect, "--describe", "--ip-defaults")
    assert r.exit_code == 0 and r.stdout == ""


def test_yaml_output(chroot) -> None:
    import yaml

    zk(chroot, "alter", "--ip-defaults", "--add-config", "connection_creation_rate=7")
    r = zk(chroot, "describe", "-o", "yaml")
    assert yaml.safe_load(r.stdout) == [{"entity": {"ip": None}, "config": {"connection_creation_rate": 7}}]


def test_environment_supplies_the_cluster(chroot) -> None:
    r = run_cli(
        "alter", "--user", "env", "--add-config", "producer_byte_rate=1", env={"KQUOTACTL_ZOOKEEPER": chroot.connect}
    )
    assert r.exit_code == 0 and chroot.exists("/config/users/env")


# -- positional pairing (pure) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            EntityArgs(entity_types=["users", "clients"], entity_names=["A", ENTITY_DEFAULT]),
            [("user", "A"), ("client-id", "")],
        ),
        (
            EntityArgs(entity_types=["users", "clients"], entity_names=[ENTITY_DEFAULT, "B"]),
            [("user", ""), ("client-id", "B")],
        ),
        (EntityArgs(client="B", user="A"), [("client-id", "B"), ("user", "A")]),
        (EntityArgs(client="B", user_defaults=True), [("client-id", "B"), ("user", "")]),
        (EntityArgs(entity_types=["clients", "users"], entity_names=["A"]), [("client-id", "A"), ("user", None)]),
        (EntityArgs(entity_types=["users"]), [("user", None)]),
        (EntityArgs(entity_types=["ips"], entity_names=["1.2.3.4"]), [("ip", "1.2.3.4")]),
        (EntityArgs(ip="1.2.3.4"), [("ip", "1.2.3.4")]),
    ],
)
def test_entity_type_name_pairing_vectors(args: EntityArgs, expected) -> None:
    assert [(t.value, n) for t, n in args.pairs()] == expected


def test_entity_default_interleaves_with_entity_name_in_command_line_order(chroot) -> None:
    r = zk(
        chroot,
        "alter",
        "--entity-default",
        "--entity-name",
        "B",
        "--entity-type",
        "users",
        "--entity-type",
        "clients",
        "--add-config",
        "producer_byte_rate=1",
        "-o",
        "json",
    )
    assert json.loads(r.stdout)["entity"] == {"user": None, "client-id": "B"}


# -- concurrency: compare-and-set across processes ---------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import sys
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.entities import Entity
    from kquotactl.core.changes import EntityChange, Outcome
    connect, key, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    b = ZooKeeperBackend(ZkSettings(connect=connect))
    for i in range(1, rounds + 1):
        [r] = b.alter([EntityChange(Entity(user="shared", client_id="app"), {key: i})])
        assert r.outcome is Outcome.APPLIED, r
    b.close()
    """
)


def test_concurrent_processes_never_lose_an_update(chroot) -> None:
    keys = [
        "producer_byte_rate",
        "consumer_byte_rate",
        "request_percentage",
        "controller_mutation_rate",
    ]
    rounds = 15
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, chroot.connect, k, str(rounds)]) for k in keys]
    assert [p.wait(timeout=300) for p in procs] == [0] * len(keys)
    stored = json.loads(chroot.get("/config/users/shared/clients/app"))["config"]
    assert {k: float(v) for k, v in stored.items()} == {k: float(rounds) for k in keys}
    assert len(chroot.notifications()) == rounds * len(keys)  # every change notified exactly once


# -- start-up cost ------------------------------------------------------------------------------------------

# Third-party packages no start-up path may load unasked: each costs 10-500 ms before the first line is printed.
HEAVY = frozenset(
    {"kazoo", "rich", "yaml", "kafka", "confluent_kafka", "pyspark", "pyarrow", "duckdb", "matplotlib", "jsonschema"}
    | {"pandas"}
)


def _imported(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m kquotactl ARGS``: the finished process and the modules it imported (from the
    interpreter's own import trace on stderr, so a lazy import anywhere counts)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kquotactl", *args], capture_output=True, text=True, timeout=60
    )
    trace = [line for line in p.stderr.splitlines() if line.startswith("import time:")]
    names = {line.rsplit("|", 1)[1].strip() for line in trace}
    assert "click" in names, p.stderr[-2000:]  # the trace is there (an empty one would pass every check below)
    return p, names


def _packages(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_nothing_heavy() -> None:
    p, names = _imported("--help")
    assert p.returncode == 0 and "describe" in p.stdout, p.stderr[-2000:]
    assert sorted(_packages(names) & HEAVY) == []
    assert "shutil" not in names  # the help width comes from terminal.terminal_columns (shutil loads bz2, lzma...)
    assert "kquotactl.cli.completion" not in names  # loaded only when completing
    assert _command_modules(names) == []  # listed from their summaries, none loaded


def _command_modules(names: set[str]) -> list[str]:
    return sorted(n for n in names if n.startswith("kquotactl.cli.commands.") and not n.endswith(".summaries"))


def test_help_lists_unloaded_commands_exactly_as_loaded_ones() -> None:
    """The group's --help before any command is loaded (summaries) and after all are (their own help) is the same
    text, at several widths: the summaries are current and shortened as click shortens."""
    from click.testing import CliRunner

    from kquotactl.cli.app import cli
    from kquotactl.cli.groups import LazyGroup

    def helps(group: click.Group) -> list[str]:
        runner = CliRunner()
        return [runner.invoke(group, ["--help"], terminal_width=w).output for w in (60, 80, 100, 200)]

    fresh = LazyGroup(name="kquotactl", params=cli.params, help=cli.help, epilog=cli.epilog)
    fresh.context_settings = cli.context_settings
    for name, cmd in cli.commands.items():
        if name not in cli.lazy:
            fresh.add_command(cmd, name)
    fresh.lazy.update(cli.lazy)
    before = helps(fresh)
    assert fresh.commands.keys() == {"alter", "describe"}  # nothing was loaded to list them
    fresh.load_all()
    assert sorted(fresh.commands) == sorted({"alter", "describe", *cli.lazy})
    assert helps(fresh) == before
    assert "apply" in before[-1] and "Make the cluster match the manifests" in before[-1]


def test_a_command_loads_only_its_own_module() -> None:
    p, names = _imported("validate", "--help")
    assert p.returncode == 0 and "Check manifests offline" in p.stdout, p.stderr[-2000:]
    assert _command_modules(names) == ["kquotactl.cli.commands.validate"]


@pytest.mark.parametrize("columns", [None, "", "0", "-3", "abc", "40", "132"])
def test_help_width_is_shutils_terminal_width(monkeypatch, columns: str | None) -> None:
    import shutil

    from kquotactl.cli.terminal import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.parametrize("output", ["json", "table"])
def test_describe_imports_only_what_it_uses(chroot, output: str) -> None:
    """One describe against a real ZooKeeper loads the ZooKeeper client and nothing else heavy: no YAML, no Kafka
    client, no Spark, Arrow, schema validator or plotting; a piped table of plain names not even rich's console; and
    with the cluster typed on the command line, not the contexts' config file reader."""
    assert zk(chroot, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1048576").exit_code == 0
    p, names = _imported("--zookeeper", chroot.connect, "describe", "--user", "alice", "-o", output)
    assert p.returncode == 0 and "alice" in p.stdout and "1048576" in p.stdout, p.stderr[-2000:]
    assert sorted(_packages(names) & HEAVY) == ["kazoo"]
    assert "kquotactl.connection.contexts" not in names
    assert sorted(n for n in names if n.startswith("kquotactl.services.")) == ["kquotactl.services.quotas"]
    assert "kquotactl.backends.zookeeper.transactions" not in names  # a read loads no write path
    assert "decimal" not in names  # only typed values are parsed through Decimal
    assert _command_modules(names) == []


def test_the_demo_runs_every_step_as_advertised_against_its_own_kafka_and_zookeeper() -> None:
    """`make demo` (the README's main job): its own Kafka 4.4 KRaft broker and ZooKeeper, real commands, exit 0 only
    if each step behaved, and Kafka's own kafka-configs reads what kquotactl wrote."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "kquotactl.testing.demo"], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "misbehaved" not in p.stdout
    assert '{"version":2,"entity_path":"users/alice/clients/batch%20job"}' in p.stdout
    assert "ZooKeeper stopped and its data removed." in p.stdout
    assert "Kafka 4.4.0 stopped and its data removed." in p.stdout
    assert "Quota configs for user-principal 'alice' are " in p.stdout  # kafka-configs 4.4 on the KRaft broker
    assert "kquotactl: error: --user is empty" in p.stdout


def test_collector_paused_restores_the_collector_as_it_found_it() -> None:
    """Bulk reads pause the cycle collector (collector.collector_paused); it is back on after, error or not, and a
    collector the caller had turned off stays off."""
    import gc

    from kquotactl.cli.collector import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
