"""Named contexts: the config file, precedence (flags > environment > context > error), the ``config``
commands, secrets never printed, and a real ZooKeeper reached through a context."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kquotactl.connection.cluster import ConnectionOptions
from kquotactl.connection.contexts import (
    apply_context,
    default_path,
    load_config,
    parse_config,
    redact_auth,
    resolve,
    set_current,
)
from kquotactl.core.errors import UsageError

CONFIG = """\
# my clusters
current-context: prod
contexts:
  prod:
    zookeeper: zk-prod:2181/kafka
    zk-auth: digest:admin:s3cret-prod
    zk-acl: secure
  staging:
    bootstrap-server: b1:9092,b2:9092
    command-config: ~/staging.properties
    timeout: 5
"""


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(CONFIG)
    return p


def env_for(cfg: Path, **extra: str) -> dict[str, str]:
    return {"KQUOTACTL_CONFIG": str(cfg), **extra}


# -- pure: parsing and precedence --------------------------------------------------------------------


def test_parse_and_resolve_precedence(cfg: Path) -> None:
    env = env_for(cfg)
    # the file's current-context applies when nothing names a cluster
    o = resolve(ConnectionOptions(), env=env)
    assert (o.zookeeper, o.zk_auth, o.zk_acl) == ("zk-prod:2181/kafka", ["digest:admin:s3cret-prod"], "secure")
    # --context beats KQUOTACTL_CONTEXT beats current-context
    o = resolve(ConnectionOptions(), env={**env, "KQUOTACTL_CONTEXT": "staging"})
    assert o.bootstrap_server == "b1:9092,b2:9092" and o.zookeeper is None and o.timeout == 5.0
    assert o.command_config == str(Path("~/staging.properties").expanduser())
    o = resolve(ConnectionOptions(), context_name="prod", env={**env, "KQUOTACTL_CONTEXT": "staging"})
    assert o.zookeeper == "zk-prod:2181/kafka"
    # flags beat the context field by field
    o = resolve(ConnectionOptions(zk_acl="open", zk_auth=["digest:me:x"]), context_name="prod", env=env)
    assert o.zk_auth == ["digest:me:x"] and o.zookeeper == "zk-prod:2181/kafka"
    # a cluster given by flag or environment: the file's current-context is not applied at all
    o = resolve(ConnectionOptions(zookeeper="other:2181"), env=env)
    assert (o.zookeeper, o.zk_auth, o.zk_acl) == ("other:2181", [], "open")
    o = resolve(ConnectionOptions(), env={**env, "KQUOTACTL_ZOOKEEPER": "envzk:2181"})
    assert o.zookeeper == "envzk:2181" and o.zk_auth == []
    # environment beats the explicit context's fields too
    o = resolve(ConnectionOptions(), context_name="prod", env={**env, "KQUOTACTL_ZK_AUTH": "digest:env:pw"})
    assert o.zk_auth == ["digest:env:pw"]
    # ...but an explicit context's cluster is not overridden by an env cluster
    o = resolve(ConnectionOptions(zookeeper="flag:1"), context_name="prod", env=env)
    assert o.zookeeper == "flag:1" and o.zk_auth == ["digest:admin:s3cret-prod"]


def test_no_config_file_no_cluster_is_the_error_that_says_what_to_pass(tmp_path: Path) -> None:
    o = resolve(ConnectionOptions(), env={"HOME": str(tmp_path)})
    with pytest.raises(UsageError, match=r"--zookeeper HOST:PORT.*--bootstrap-server.*context"):
        o.check()


def test_xdg_location(tmp_path: Path) -> None:
    assert default_path({"XDG_CONFIG_HOME": "/x"}) == Path("/x/kquotactl/config.yaml")
    assert default_path({"HOME": "/home/u"}) == Path("/home/u/.config/kquotactl/config.yaml")
    assert default_path({"KQUOTACTL_CONFIG": "/etc/k.yaml", "XDG_CONFIG_HOME": "/x"}) == Path("/etc/k.yaml")


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"contexts": {"a": {"zookeper": "z:1"}}}, "context 'a': unknown setting 'zookeper' — did you mean zookeeper?"),
        ({"contexts": {"a": {"zookeeper": "z:1", "bootstrap-server": "b:1"}}}, "exactly one of"),
        ({"contexts": {"a": {}}}, "exactly one of"),
        ({"contexts": {"a": {"zookeeper": "z:1", "zk-acl": "closed"}}}, "zk-acl must be 'open' or 'secure'"),
        ({"contexts": {"a": {"zookeeper": "z:1", "timeout": "soon"}}}, "timeout must be a number"),
        ({"contexts": {"a": {"zookeeper": "z:1"}}, "current-context": "b"}, "current-context 'b' is not one of"),
        ({"context": {}}, "unknown top-level key 'context'"),
        (["x"], "expected a mapping"),
    ],
)
def test_bad_config_is_one_line_naming_the_problem(doc: object, message: str) -> None:
    config = parse_config(doc, Path("/c.yaml"))  # reading never raises: the problem is reported when used
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("?", r"\?")) as e:
        config.current_context() if config.current else config.get("a")
    assert "\n" not in str(e.value) and str(e.value).startswith("/c.yaml: ")


def test_unknown_context_suggests_the_close_one(cfg: Path) -> None:
    with pytest.raises(UsageError, match=r"context 'prdo' not found .* did you mean prod\?"):
        resolve(ConnectionOptions(), context_name="prdo", env=env_for(cfg))


def test_kubectl_style_list_and_underscores() -> None:
    c = parse_config({"contexts": [{"name": "a", "bootstrap_server": "b:9092"}]}, Path("/c"))
    assert c.contexts["a"].settings == {"bootstrap-server": "b:9092"}


def test_apply_context_only_fills_gaps() -> None:
    ctx = parse_config({"contexts": {"a": {"zookeeper": "z:1", "connect-timeout": 3}}}, Path("/c")).contexts["a"]
    assert apply_context(ConnectionOptions(), ctx).connect_timeout == 3.0
    assert apply_context(ConnectionOptions(connect_timeout=7.0), ctx).connect_timeout == 7.0
    # typed on the command line, even at its default value: the context does not override it
    assert apply_context(ConnectionOptions(), ctx, explicit=frozenset({"connect_timeout"})).connect_timeout == 10.0


@pytest.mark.zookeeper
def test_a_flag_at_its_default_value_still_beats_the_context(cli, chroot, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"contexts:\n  lab:\n    zookeeper: {chroot.connect}\n    zk-acl: secure\n")
    env = {"KQUOTACTL_CONFIG": str(cfg)}
    # the context asks for secure ACLs (which need an authenticated session); --zk-acl open typed by hand wins
    r = cli(
        "--context", "lab", "--zk-acl", "open", "alter", "--user", "u", "--add-config", "producer_byte_rate=1", env=env
    )
    assert r.exit_code == 0, r.stderr


def test_secrets_are_redacted() -> None:
    assert redact_auth("digest:admin:pw:with:colons") == "digest:admin:***"
    assert redact_auth("weird") == "***"  # no scheme: it may be the password itself


def test_set_current_keeps_comments() -> None:
    assert set_current(CONFIG, "staging").startswith("# my clusters\ncurrent-context: staging\ncontexts:")
    assert set_current("contexts: {}\n", "a") == "current-context: a\ncontexts: {}\n"


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("contexts:\n  a: [\n")
    with pytest.raises(UsageError, match=r"c.yaml: line \d+ is not valid YAML"):
        load_config(p).get("a")
    with pytest.raises(UsageError, match="does not exist"):
        load_config(tmp_path / "missing.yaml")


# -- the config commands ----------------------------------------------------------------------------


def test_get_contexts_never_prints_secrets(cli, cfg: Path) -> None:
    r = cli("--config", str(cfg), "config", "get-contexts", "-o", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(x["name"], x["current"]) for x in rows] == [("prod", True), ("staging", False)]
    assert rows[0]["auth"] == "digest:admin:***, zk-acl secure"
    assert "s3cret" not in r.stdout + r.stderr
    table = cli("--config", str(cfg), "config", "get-contexts", "-o", "table")
    assert "s3cret" not in table.stdout
    assert table.stdout.splitlines()[1].startswith("*")


def test_get_contexts_refuses_the_kafka_output_it_has_no_form_for(cli, cfg: Path) -> None:
    """The group's -o kafka (describe's flat form) is refused, never a table printed in its place."""
    fmt = "kafka"
    r = cli("--config", str(cfg), "-o", fmt, "config", "get-contexts")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"kquotactl: error: -o {fmt}: get-contexts shows a table, json or yaml"]


def test_use_context_and_current_context(cli, cfg: Path) -> None:
    assert cli("--config", str(cfg), "config", "current-context").stdout == "prod\n"
    mode = os.stat(cfg).st_mode
    r = cli("--config", str(cfg), "config", "use-context", "staging")
    assert r.exit_code == 0 and "staging" in r.stdout
    assert cfg.read_text().startswith("# my clusters\ncurrent-context: staging\n")
    assert os.stat(cfg).st_mode == mode
    assert cli("--config", str(cfg), "config", "current-context").stdout == "staging\n"
    env = {"KQUOTACTL_CONFIG": str(cfg), "KQUOTACTL_CONTEXT": "prod"}
    assert cli("config", "current-context", env=env).stdout == "prod\n"


def test_use_context_rejects_unknown_and_writes_nothing(cli, cfg: Path) -> None:
    before = cfg.read_text()
    r = cli("--config", str(cfg), "config", "use-context", "stagign")
    assert r.exit_code == 1
    assert r.stderr.count("\n") == 1 and "did you mean staging?" in r.stderr
    assert cfg.read_text() == before


def test_no_current_context_says_how_to_set_one(cli, tmp_path: Path) -> None:
    r = cli("config", "current-context", env={"XDG_CONFIG_HOME": str(tmp_path), "KQUOTACTL_CONTEXT": ""})
    assert r.exit_code == 1 and "kquotactl config use-context NAME" in r.stderr


# -- a real cluster through a context ----------------------------------------------------------------


@pytest.mark.zookeeper
def test_commands_reach_the_cluster_of_the_context(cli, chroot, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"current-context: lab\ncontexts:\n  lab:\n    zookeeper: {chroot.connect}\n  dead:\n"
        "    zookeeper: 127.0.0.1:9\n    connect-timeout: 0.5\n"
    )
    env = {"KQUOTACTL_CONFIG": str(cfg)}
    r = cli("alter", "--user", "alice", "--add-config", "producer_byte_rate=1024", env=env)
    assert r.exit_code == 0, r.stderr
    assert b'"producer_byte_rate":"1024"' in chroot.get("/config/users/alice")
    r = cli("-o", "json", "describe", env=env)
    assert json.loads(r.stdout)[0]["entity"] == {"user": "alice"}
    # the context's dead cluster is used when asked for, and fails in one line
    r = cli("--context", "dead", "describe", env=env)
    assert r.exit_code == 1 and r.stderr.count("\n") == 1
    # a --zookeeper flag wins over the context
    r = cli("--context", "dead", "--zookeeper", chroot.connect, "-o", "json", "describe", env=env)
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["entity"] == {"user": "alice"}


@pytest.mark.kafka
def test_a_bootstrap_context_serves_every_command(cli, kraft, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"current-context: kraft\ncontexts:\n  kraft:\n    bootstrap-server: {kraft.bootstrap}\n")
    env = {"KQUOTACTL_CONFIG": str(cfg)}
    r = cli("alter", "--client-id", "app1", "--add-config", "request_percentage=10", env=env)
    assert r.exit_code == 0, r.stderr
    r = cli("-o", "json", "describe", env=env)
    assert json.loads(r.stdout) == [{"entity": {"client-id": "app1"}, "config": {"request_percentage": 10.0}}]
    r = cli("-o", "json", "connection-rate", env=env)  # a command that reads the connection itself
    assert r.exit_code == 0, r.stderr


# -- one broken context (or file) breaks only what uses it -------------------------------------------

GOOD_AND_BROKEN = """\
current-context: prod
contexts:
  prod:
    zookeeper: zk-prod:2181/kafka
  nocluster:
    zk-acl: secure
  typo:
    zookeper: z:1
  wrongtype:
    bootstrap-server: b:9092
    timeout: soon
"""
BROKEN = {
    "nocluster": "set exactly one of zookeeper, bootstrap-server, bootstrap-controller",
    "typo": "unknown setting 'zookeper' — did you mean zookeeper?",
    "wrongtype": "timeout must be a number of seconds between 0.1 and 3600",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_context_fails_only_when_used_in_one_line_naming_file_context_problem(
    cli, tmp_path: Path, name: str
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(GOOD_AND_BROKEN)
    env = env_for(cfg)
    # the others work: current-context, --context, a cluster typed by hand
    assert resolve(ConnectionOptions(), env=env).zookeeper == "zk-prod:2181/kafka"
    assert resolve(ConnectionOptions(), context_name="prod", env=env).zookeeper == "zk-prod:2181/kafka"
    assert resolve(ConnectionOptions(zookeeper="z:9"), env=env).zookeeper == "z:9"
    assert cli("--config", str(cfg), "config", "current-context").stdout == "prod\n"
    # the broken one: one line, the file, the context, the problem; exit 1
    r = cli("--config", str(cfg), "--context", name, "describe")
    assert r.exit_code == 1 and r.stderr.count("\n") == 1
    assert r.stderr == f"kquotactl: error: {cfg}: context {name!r}: {BROKEN[name]}\n"
    r = cli("describe", env={**env, "KQUOTACTL_CONTEXT": name})
    assert r.exit_code == 1 and f"context {name!r}: {BROKEN[name]}" in r.stderr
    # and use-context refuses it (nothing written)
    r = cli("--config", str(cfg), "config", "use-context", name)
    assert r.exit_code == 1 and BROKEN[name] in r.stderr and cfg.read_text() == GOOD_AND_BROKEN


def test_get_contexts_lists_and_marks_the_broken_ones(cli, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(GOOD_AND_BROKEN)
    r = cli("--config", str(cfg), "config", "get-contexts", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert {x["name"]: x["problem"] for x in json.loads(r.stdout)} == {"prod": None, **BROKEN}
    table = cli("--config", str(cfg), "config", "get-contexts", "-o", "table")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["CURRENT", "NAME", "CLUSTER", "AUTH", "PROBLEM"]
    typo = next(x for x in lines if " typo " in x)
    assert typo.endswith("BROKEN: unknown setting 'zookeper' — did you mean zookeeper?")
    assert next(x for x in lines if " prod " in x).startswith("*") and lines[-1].find("BROKEN") > 0


def test_a_broken_file_breaks_only_commands_that_need_a_context(cli, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("current-context: prod\ncontexts:\n  prod: {zookeeper: [\n")
    env = env_for(cfg)
    assert resolve(ConnectionOptions(zookeeper="z:1"), env=env).zookeeper == "z:1"  # not even read
    commands = (("describe",), ("--context", "prod", "describe"), ("config", "get-contexts", "-o", "json"))
    for args in (*commands, ("config", "current-context")):
        r = cli(*args, env=env)
        assert r.exit_code == 1 and r.stderr.count("\n") == 1, args
        assert r.stderr.startswith(f"kquotactl: error: {cfg}: line ") and "is not valid YAML" in r.stderr
    # a misspelt top-level key is not ignored (it may be the current-context)
    cfg.write_text("current_context: prod\ncontexts:\n  prod: {zookeeper: z:1}\n")
    r = cli("describe", env=env)
    assert r.exit_code == 1 and "unknown top-level key 'current_context'" in r.stderr
    r = cli("config", "get-contexts", "-o", "json", env=env)  # lists what it can, then says what is wrong
    assert r.exit_code == 1 and json.loads(r.stdout)[0]["name"] == "prod"


def test_a_dangling_current_context_matters_only_when_it_is_used(cli, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("current-context: gone\ncontexts:\n  prod: {zookeeper: 'z:1'}\n")
    env = env_for(cfg)
    assert resolve(ConnectionOptions(), context_name="prod", env=env).zookeeper == "z:1"
    with pytest.raises(UsageError, match=r"current-context 'gone' is not one of the contexts \(prod\)"):
        resolve(ConnectionOptions(), env=env)
    r = cli("config", "get-contexts", "-o", "json", env=env)
    assert r.exit_code == 0 and "current-context 'gone' is not one of the contexts" in r.stderr
    assert cli("config", "use-context", "prod", env=env).exit_code == 0  # the way to fix it
    assert resolve(ConnectionOptions(), env=env).zookeeper == "z:1"


def test_list_form_entries_without_a_name_or_twice_are_broken_alone() -> None:
    c = parse_config(
        {"contexts": [{"name": "a", "zookeeper": "z:1"}, {"zookeeper": "y:1"}, {"name": "b"}, {"name": "b"}]},
        Path("/c"),
    )
    assert c.get("a").settings == {"zookeeper": "z:1"}
    assert c.contexts["contexts[1]"].problem == "each entry of 'contexts:' needs a 'name:'"
    with pytest.raises(UsageError, match="context 'b': defined more than once"):
        c.get("b")


# -- set-context / delete-context --------------------------------------------------------------------


def test_set_context_creates_the_file_and_updates_only_the_options_given(cli, tmp_path: Path) -> None:
    cfg = tmp_path / "sub" / "config.yaml"
    r = cli("--config", str(cfg), "config", "set-context", "prod", "--zookeeper", "zk:2181/kafka", "--zk-acl", "secure")
    assert r.exit_code == 0 and r.stdout == f"Context 'prod' created in {cfg}.\n", r.stderr
    assert os.stat(cfg).st_mode & 0o777 == 0o600  # it may hold credentials
    os.chmod(cfg, 0o640)
    # group options are accepted on either side of the command; relative paths are stored absolute
    r = cli(
        "--timeout", "60", "--config", str(cfg), "config", "set-context", "prod", "--command-config", "a.properties"
    )
    assert r.stdout == f"Context 'prod' modified in {cfg}.\n"
    prod = load_config(cfg).get("prod").settings
    assert prod == {
        "zookeeper": "zk:2181/kafka",
        "zk-acl": "secure",
        "timeout": 60.0,
        "command-config": str(Path("a.properties").absolute()),
    }
    assert os.stat(cfg).st_mode & 0o777 == 0o640  # the mode is kept
    # a cluster option replaces the cluster (exactly one); --unset removes a setting
    cli("--config", str(cfg), "config", "set-context", "prod", "--bootstrap-server", "b:9092", "--unset", "zk-acl")
    prod = load_config(cfg).get("prod").settings
    assert prod["bootstrap-server"] == "b:9092" and "zookeeper" not in prod and "zk-acl" not in prod
    assert [p.name for p in cfg.parent.iterdir()] == ["config.yaml"]  # no temporary file left behind


def test_set_context_fixes_a_broken_context_and_keeps_the_others(cli, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(GOOD_AND_BROKEN)
    r = cli("--config", str(cfg), "config", "set-context", "typo", "--unset", "zookeper", "--zookeeper", "z:1")
    assert r.exit_code == 0, r.stderr
    r = cli("--config", str(cfg), "config", "set-context", "nocluster", "--bootstrap-controller", "c:9093")
    assert r.exit_code == 0, r.stderr
    config = load_config(cfg)
    assert config.get("typo").settings == {"zookeeper": "z:1"}
    assert config.get("nocluster").settings == {"zk-acl": "secure", "bootstrap-controller": "c:9093"}
    assert config.current == "prod" and config.contexts["wrongtype"].problem == BROKEN["wrongtype"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("new", "--zk-acl", "secure"), "context 'new': set exactly one of zookeeper"),
        (("prod", "--unset", "zookeeper"), "context 'prod': set exactly one of zookeeper"),
        (("prod", "--unset", "zk-tls"), "context 'prod': no setting 'zk-tls' to unset"),
        (("prod",), "nothing to set for context 'prod'"),
        (("bad name", "--zookeeper", "z:1"), "context 'bad name': names are letters"),
        (("prod", "--zk-acl", "closed"), "Invalid value for '--zk-acl'"),
    ],
)
def test_set_context_rejects_a_result_that_would_not_work_and_writes_nothing(
    cli, cfg: Path, args: tuple[str, ...], message: str
) -> None:
    r = cli("--config", str(cfg), "config", "set-context", *args)
    assert r.exit_code != 0 and message in r.stderr and r.stderr.count("\n") <= 3, r.stderr
    assert cfg.read_text() == CONFIG


def test_set_context_does_not_store_the_environment(cli, cfg: Path) -> None:
    env = {"KQUOTACTL_ZOOKEEPER": "env:2181", "KQUOTACTL_ZK_AUTH": "digest:e:pw"}
    r = cli("--config", str(cfg), "config", "set-context", "staging", "--timeout", "9", env=env)
    assert r.exit_code == 0, r.stderr
    assert load_config(cfg).get("staging").settings["bootstrap-server"] == "b1:9092,b2:9092"
    assert "env:2181" not in cfg.read_text() and "digest:e" not in cfg.read_text()


def test_set_context_keeps_the_list_form_and_aliases_do_not_duplicate(tmp_path: Path) -> None:
    from kquotactl.connection.contexts import set_context_doc

    data = {"contexts": [{"name": "a", "zookeeper": "z:1", "zk_auth": "digest:u:p"}]}
    doc, created = set_context_doc(data, "a", {"zk-auth": "digest:v:q"})
    assert not created and doc == {"contexts": [{"name": "a", "zookeeper": "z:1", "zk-auth": "digest:v:q"}]}
    doc, created = set_context_doc(doc, "b", {"bootstrap-server": "b:1"})
    assert created and doc["contexts"][1] == {"name": "b", "bootstrap-server": "b:1"}
    assert data["contexts"][0]["zk_auth"] == "digest:u:p"  # the input is not modified


def test_delete_context_clears_current_context_and_rejects_unknown_names(cli, cfg: Path) -> None:
    r = cli("--config", str(cfg), "config", "delete-context", "stagign")
    assert r.exit_code == 1 and "cannot delete context 'stagign'" in r.stderr and "did you mean staging?" in r.stderr
    assert cfg.read_text() == CONFIG
    r = cli("--config", str(cfg), "config", "delete-context", "staging")
    assert r.exit_code == 0 and r.stdout == f"Deleted context 'staging' from {cfg}.\n" and r.stderr == ""
    config = load_config(cfg)
    assert sorted(config.contexts) == ["prod"] and config.current == "prod"
    r = cli("--config", str(cfg), "config", "delete-context", "prod")
    assert r.exit_code == 0 and "current-context is now unset" in r.stderr
    config = load_config(cfg)
    assert config.contexts == {} and config.current is None and config.problem is None
    r = cli("config", "current-context", env={"KQUOTACTL_CONFIG": str(cfg), "KQUOTACTL_CONTEXT": ""})
    assert r.exit_code == 1 and "no current context" in r.stderr


def test_edits_write_through_a_symlink_and_say_that_comments_are_lost(cli, cfg: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.yaml"
    link.symlink_to(cfg)
    assert cli("--config", str(link), "config", "delete-context", "staging").exit_code == 0
    assert link.is_symlink() and sorted(load_config(cfg).contexts) == ["prod"]
    assert "# my clusters" not in cfg.read_text()  # PyYAML cannot keep comments: the help says so
    for command in ("set-context", "delete-context"):
        assert "cannot keep comments" in " ".join(cli("config", command, "--help").stdout.split())
