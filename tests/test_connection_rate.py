"""``connection-rate``: broker-level max.connection.creation.rate (KIP-612) through the admin client, against
the session KRaft broker (node id 1); plus the pure parts."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from kquotactl.connection.clientprops import ClientSettings, kafka_python_config
from kquotactl.core.broker_connection_rate import (
    KEY,
    RateSetting,
    config_name,
    parse_rate,
    settings_from_configs,
    sort_settings,
)
from kquotactl.core.errors import InvalidValue, UsageError


def test_config_names_and_values():
    assert config_name(None) == "max.connection.creation.rate"
    assert config_name("EXTERNAL") == "listener.name.external.max.connection.creation.rate"
    with pytest.raises(UsageError):
        config_name("a.b")
    assert parse_rate(" 50 ") == 50
    for bad in ("0", "-1", "1.5", "x", "2147483648"):
        with pytest.raises(InvalidValue):
            parse_rate(bad)


def test_settings_from_configs_and_sorting():
    configs = {
        "max.connection.creation.rate": ("30", "DYNAMIC_BROKER_CONFIG"),
        "listener.name.plaintext.max.connection.creation.rate": ("5", "DYNAMIC_BROKER_CONFIG"),
        "max.connections": ("2147483647", "DEFAULT_CONFIG"),
        "num.io.threads": ("2", "STATIC_BROKER_CONFIG"),
    }
    got = settings_from_configs("1", configs)
    assert got == [
        RateSetting("1", "plaintext", 5, "DYNAMIC_BROKER_CONFIG"),
        RateSetting("1", None, 30, "DYNAMIC_BROKER_CONFIG"),
    ]
    ordered = sort_settings([*got, RateSetting(None, None, 7), RateSetting("10", None, 1)])
    assert [(r.broker, r.listener) for r in ordered] == [(None, None), ("1", None), ("1", "plaintext"), ("10", None)]


def test_one_settings_mapping_from_command_config():
    """connection-rate and the quota commands connect with the same settings (one mapping, kafka-python's names)."""
    s = ClientSettings("SASL_SSL", "SCRAM-SHA-512", "u", "p", "/ca.pem", "/me.pem", "kp", False, "ops")
    conf = kafka_python_config("b:9093", s, 5)
    assert conf["security_protocol"] == "SASL_SSL" and conf["sasl_plain_username"] == "u"
    assert conf["ssl_cafile"] == "/ca.pem" and conf["ssl_certfile"] == "/me.pem" and conf["ssl_password"] == "kp"
    assert conf["ssl_check_hostname"] is False and conf["client_id"] == "ops" and conf["request_timeout_ms"] == 5000
    assert conf["bootstrap_servers"] == "b:9093"


def test_usage_errors_before_any_connection():
    r = run_cli("--zookeeper", "127.0.0.1:1", "connection-rate")
    assert r.exit_code == 1 and "needs --bootstrap-server" in r.stderr
    r = run_cli("--bootstrap-server", "127.0.0.1:1", "connection-rate", "--set", "5")
    assert r.exit_code == 1 and "--broker ID or --broker-defaults" in r.stderr
    r = run_cli("--bootstrap-server", "127.0.0.1:1", "connection-rate", "--broker", "1", "--broker-defaults")
    assert r.exit_code == 1 and "not both" in r.stderr
    r = run_cli("--bootstrap-server", "127.0.0.1:1", "connection-rate", "--broker", "1", "--set", "0")
    assert r.exit_code == 1 and "at least 1" in r.stderr


@pytest.mark.kafka
def test_set_show_delete_against_kraft(kraft):
    def kq(*args: str):
        return run_cli("--bootstrap-server", kraft.bootstrap, "--timeout", "15", "connection-rate", *args)

    def shown() -> list[dict]:
        r = run_cli("--bootstrap-server", kraft.bootstrap, "-o", "json", "connection-rate")
        assert r.exit_code == 0, r.stderr
        return [{k: v for k, v in x.items() if k != "source"} for x in json.loads(r.stdout)]

    try:
        r = kq("--broker", "1", "--set", "50")
        assert r.exit_code == 0, r.stderr
        assert r.stdout == "set broker 1: max.connection.creation.rate = 50 connections/s\n"
        assert r.stderr == ""  # no "does not show the change yet" warning: the command waited until it did
        r = kq("--broker", "1", "--listener", "PLAINTEXT", "--set", "20")
        assert r.exit_code == 0, r.stderr
        r = kq("--broker", "1", "--set", "30", "--dry-run")
        assert r.exit_code == 0 and r.stdout.startswith("would set"), r.stderr
        got = shown()
        assert {"broker": "1", "listener": None, "max.connection.creation.rate": 50} in got  # the dry run wrote nothing
        assert {"broker": "1", "listener": "plaintext", "max.connection.creation.rate": 20} in got
        assert len(got) == 2  # only dynamic settings: the broker's Int.MAX default is not listed
        r = kq("--broker", "1", "--listener", "PLAINTEXT", "--delete")
        assert r.exit_code == 0 and r.stderr == "", r.stderr
        assert not any(x["listener"] == "plaintext" for x in shown())
        # the cluster-wide default (an empty BROKER resource name)
        r = kq("--broker-defaults", "--set", "70")
        assert (r.exit_code, r.stdout, r.stderr) == (
            0,
            "set cluster default: max.connection.creation.rate = 70 connections/s\n",
            "",
        )
        r = kq("--broker-defaults", "--listener", "PLAINTEXT", "--set", "7", "--dry-run")
        assert r.exit_code == 0 and r.stdout.startswith("would set cluster default"), r.stderr
        got = shown()
        assert {"broker": None, "listener": None, "max.connection.creation.rate": 70} in got
        assert not any(x["broker"] is None and x["listener"] for x in got)
        assert got[0]["broker"] is None  # the default comes first
        r = kq("--broker-defaults", "--delete")
        assert r.exit_code == 0 and r.stderr == "", r.stderr
        assert not any(x["broker"] is None for x in shown())
    finally:
        kq("--broker-defaults", "--delete")
        kq("--broker", "1", "--delete")
        kq("--broker", "1", "--listener", "PLAINTEXT", "--delete")


@pytest.mark.kafka
def test_unreachable_is_one_line():
    r = run_cli("--bootstrap-server", "127.0.0.1:1", "--timeout", "2", "connection-rate")
    assert r.exit_code == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "kquotactl: error:" in r.stderr


@pytest.mark.kafka
def test_unknown_broker_is_one_line(kraft):
    r = run_cli("--bootstrap-server", kraft.bootstrap, "connection-rate", "--broker", "7")
    assert r.exit_code == 1 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no broker 7 in the cluster" in lines[0] and "brokers: 1" in lines[0], r.stderr


SCRAM = (
    "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="{user}" password="{password}";\n'
)


@pytest.mark.kafka
def test_same_settings_and_errors_as_quota_commands_over_sasl(kraft, tmp_path):
    """--command-config reaches connection-rate through the quota commands' mapping: SCRAM on the SASL listener
    (the Metadata answer names broker 1's SASL address), and a wrong password is the quota commands' one line."""
    good, bad = tmp_path / "good.properties", tmp_path / "bad.properties"
    good.write_text(SCRAM.format(user=kraft.scram_user, password=kraft.scram_password))
    bad.write_text(SCRAM.format(user=kraft.scram_user, password="wrong"))

    def kq(cfg, *args: str):
        return run_cli("--bootstrap-server", kraft.sasl_bootstrap, "--command-config", str(cfg), *args)

    try:
        r = kq(good, "connection-rate", "--broker", "1", "--set", "45")
        assert (r.exit_code, r.stderr) == (0, ""), r.stderr
        r = kq(good, "-o", "json", "connection-rate")
        assert r.exit_code == 0, r.stderr
        assert {"broker": "1", "listener": None, KEY: 45, "source": "DYNAMIC_BROKER_CONFIG"} in json.loads(r.stdout)
    finally:
        kq(good, "connection-rate", "--broker", "1", "--delete")
    for args in (("connection-rate",), ("describe",)):
        r = kq(bad, *args)
        lines = r.stderr.strip().splitlines()
        assert r.exit_code == 1 and len(lines) == 1, r.stderr
        assert "authentication to Kafka broker" in lines[0] and "check sasl.jaas.config" in lines[0], r.stderr


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_set_show_delete_against_zookeeper_mode(zkmode):
    """A ZooKeeper-mode broker (Kafka 3.9, broker id 0) answers its own BROKER resource and the cluster default."""

    def kq(*args: str):
        return run_cli("--bootstrap-server", zkmode.bootstrap, "--timeout", "15", "connection-rate", *args)

    try:
        r = kq("--broker", "0", "--listener", "PLAINTEXT", "--set", "25")
        assert (r.exit_code, r.stderr) == (0, ""), r.stderr
        r = kq("--broker-defaults", "--set", "60")
        assert (r.exit_code, r.stderr) == (0, ""), r.stderr
        r = run_cli("--bootstrap-server", zkmode.bootstrap, "-o", "json", "connection-rate")
        assert r.exit_code == 0, r.stderr
        # broker 0's own resource also reports the value it inherits from the cluster default, with that source
        assert json.loads(r.stdout) == [
            {"broker": None, "listener": None, KEY: 60, "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"},
            {"broker": "0", "listener": None, KEY: 60, "source": "DYNAMIC_DEFAULT_BROKER_CONFIG"},
            {"broker": "0", "listener": "plaintext", KEY: 25, "source": "DYNAMIC_BROKER_CONFIG"},
        ]
    finally:
        kq("--broker", "0", "--listener", "PLAINTEXT", "--delete")
        kq("--broker-defaults", "--delete")
    r = run_cli("--bootstrap-server", zkmode.bootstrap, "-o", "json", "connection-rate")
    assert (r.exit_code, json.loads(r.stdout)) == (0, []), r.stderr
