"""Named contexts: the config file, precedence (flags > environment > context > error), the ``config``
commands, secrets never printed, and a real ZooKeeper reached through a context."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kquotactl.connection import ConnectionOptions
from kquotactl.contexts import apply_context, default_path, load_config, parse_config, redact_auth, resolve, set_current
from kquotactl.errors import UsageError

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
        ({"contexts": {"a": {"zookeper": "z:1"}}}, "unknown setting 'zookeper' — did you mean zookeeper?"),
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
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse_config(doc, Path("/c.yaml"))


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
        load_config(p)
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
