"""Reading znodes other tools wrote, on a real ZooKeeper: every command finds, shows and changes what is stored
the way a broker reads it (ip names by ``InetAddress``, values by the Java parser of the key's type)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.zookeeper


def put(chroot, path: str, config: dict[str, str]) -> None:
    """A znode as kafka-configs 2.8 ``--zookeeper`` (ip names as typed) or a broker's admin API path writes it."""
    chroot.zk.ensure_path(chroot.root + path.rsplit("/", 1)[0])
    data = json.dumps({"version": 1, "config": config}, separators=(",", ":")).encode()
    chroot.zk.create(chroot.root + path, data)


def config(chroot, path: str) -> dict[str, str]:
    return json.loads(chroot.get(path))["config"]


def zk(chroot, *args: str):
    return run_cli("--zookeeper", chroot.connect, *args)


def notified(chroot) -> list[str]:
    return [json.loads(n)["entity_path"] for n in chroot.notifications()]


def test_an_address_is_found_and_changed_under_its_stored_spelling(chroot) -> None:
    put(chroot, "/config/ips/2001:DB8:0::1", {"connection_creation_rate": "10"})  # kafka-configs: name as typed
    r = zk(chroot, "-o", "json", "describe", "--ip", "2001:db8::1")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == [{"entity": {"ip": "2001:DB8:0::1"}, "config": {"connection_creation_rate": 10}}]

    r = zk(chroot, "alter", "--ip", "2001:db8::1", "--add-config", "connection_creation_rate=20")
    assert r.exit_code == 0, r.stderr
    assert chroot.children("/config/ips") == ["2001:DB8:0::1"]  # no second node for the same address
    assert config(chroot, "/config/ips/2001:DB8:0::1") == {"connection_creation_rate": "20"}
    assert notified(chroot) == ["ips/2001:DB8:0::1"]

    r = zk(chroot, "-o", "json", "explain", "--ip", "2001:0db8::0:1")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert (out["quotas"][0]["limit"], out["quotas"][0]["entity_path"]) == (20, "ips/2001:DB8:0::1")
    assert any("brokers key ip quotas by address" in n for n in out["notes"])

    r = zk(chroot, "alter", "--ip", "2001:db8::1", "--delete-config", "connection_creation_rate")
    assert r.exit_code == 0, r.stderr
    assert not chroot.exists("/config/ips/2001:db8::1")
    assert not config(chroot, "/config/ips/2001:DB8:0::1") if chroot.exists("/config/ips/2001:DB8:0::1") else True


def test_two_spellings_of_one_address_are_flagged_and_changed_together(chroot, tmp_path: Path) -> None:
    put(chroot, "/config/ips/::ffff:10.0.0.1", {"connection_creation_rate": "10"})  # IPv4-mapped: 10.0.0.1
    put(chroot, "/config/ips/10.0.0.1", {"connection_creation_rate": "20"})
    r = zk(chroot, "-o", "table", "describe", "--ip", "10.0.0.1")
    assert r.exit_code == 0, r.stderr
    assert "2 stored names are the address 10.0.0.1" in r.stderr and "applied last" in r.stderr
    assert "::ffff:10.0.0.1" in r.stdout and "20" in r.stdout

    r = zk(chroot, "-o", "json", "explain", "--ip", "10.0.0.1")
    assert any("2 stored names are the address 10.0.0.1" in n for n in json.loads(r.stdout)["notes"])

    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        textwrap.dedent("""\
        quotas:
          - entity: {ip: 10.0.0.1}
            config: {connection_creation_rate: 30}
        """)
    )
    r = zk(chroot, "-o", "json", "plan", "-f", str(manifest))
    assert r.exit_code == 2, r.stderr
    out = json.loads(r.stdout)
    assert sorted(c["path"] for c in out["changes"]) == ["ips/10.0.0.1", "ips/::ffff:10.0.0.1"]
    assert any(n.startswith("2 stored names are the address 10.0.0.1") for n in out["notes"])
    assert r.stderr.count("2 stored names are the address 10.0.0.1") == 1  # said once
    r = zk(chroot, "apply", "-f", str(manifest), "--yes")
    assert r.exit_code == 0, r.stderr
    for name in ("10.0.0.1", "::ffff:10.0.0.1"):
        assert config(chroot, f"/config/ips/{name}") == {"connection_creation_rate": "30"}
    assert sorted(chroot.children("/config/ips")) == ["10.0.0.1", "::ffff:10.0.0.1"]

    r = zk(chroot, "alter", "--ip", "::ffff:10.0.0.1", "--add-config", "connection_creation_rate=40")
    assert r.exit_code == 0, r.stderr
    assert {
        config(chroot, f"/config/ips/{n}")["connection_creation_rate"] for n in ("10.0.0.1", "::ffff:10.0.0.1")
    } == {"40"}


def test_names_that_are_not_addresses_depend_on_the_broker(chroot) -> None:
    put(chroot, "/config/ips/%3A%3A1", {"connection_creation_rate": "7"})  # the ZK admin path's sanitized ::1
    put(chroot, "/config/ips/kafka-client-1", {"connection_creation_rate": "8"})  # kafka-configs: a host name
    r = zk(chroot, "describe")
    assert r.exit_code == 0, r.stderr
    assert "ips/%3A%3A1: not an address literal: depends on the broker's resolver" in r.stderr
    assert "ZooKeeper-mode broker does not decode it" in r.stderr
    assert "ips/kafka-client-1: not an address literal" in r.stderr
    r = zk(chroot, "-o", "json", "explain", "--ip", "::1")
    out = json.loads(r.stdout)
    assert out["quotas"][0]["limit"] is None  # a broker never reads %3A%3A1 as ::1
    assert any("only if the broker's resolver maps 'kafka-client-1'" in n for n in out["notes"])
    r = zk(chroot, "alter", "--ip", "::1", "--add-config", "connection_creation_rate=9")
    assert r.exit_code == 0, r.stderr
    assert config(chroot, "/config/ips/::1") == {"connection_creation_rate": "9"}
    assert config(chroot, "/config/ips/%3A%3A1") == {"connection_creation_rate": "7"}  # a different entity


def test_values_brokers_cannot_parse_are_shown_not_applied_and_rewritten(chroot, tmp_path: Path) -> None:
    put(
        chroot,
        "/config/users/alice",
        {
            "producer_byte_rate": " 7",  # Long.parseLong refuses blanks
            "consumer_byte_rate": "1024.0",  # and fractions
            "request_percentage": " 50 ",  # Double.parseDouble trims
            "controller_mutation_rate": "0",  # zero parses: shown, not hidden
        },
    )
    put(
        chroot,
        "/config/users/<default>",
        {"producer_byte_rate": "-5", "consumer_byte_rate": "0x10", "request_percentage": "NaN"},
    )
    r = zk(chroot, "-o", "json", "describe", "--user", "alice")
    assert r.exit_code == 0, r.stderr
    [rec] = json.loads(r.stdout)
    assert rec["config"] == {"request_percentage": 50.0, "controller_mutation_rate": 0.0}
    assert rec["not_applied"] == {
        "producer_byte_rate": {"stored": " 7", "reason": "not applied: brokers cannot parse it"},
        "consumer_byte_rate": {"stored": "1024.0", "reason": "not applied: brokers cannot parse it"},
    }
    assert "users/alice: producer_byte_rate is stored as ' 7', which brokers cannot parse" in r.stderr
    r = zk(chroot, "-o", "table", "describe", "--user", "alice")
    assert "' 7' (not applied: brokers cannot parse it)" in r.stdout

    r = zk(chroot, "-o", "json", "explain", "--user", "alice", "--client-id", "app")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    by_key = {q["key"]: q for q in out["quotas"]}
    assert (by_key["producer_byte_rate"]["limit"], by_key["producer_byte_rate"]["level"]) == (-5, 6)
    assert by_key["consumer_byte_rate"]["limit"] is None
    assert (by_key["controller_mutation_rate"]["limit"], by_key["controller_mutation_rate"]["level"]) == (0.0, 3)
    assert "users/alice stores producer_byte_rate as ' 7': not applied: brokers cannot parse it" in " ".join(
        out["notes"]
    )
    assert "users/<default> stores request_percentage as 'NaN': not a limit: brokers parse it as NaN" in " ".join(
        out["notes"]
    )
    r = zk(chroot, "-o", "table", "explain", "--user", "alice", "--client-id", "app")
    assert "note: users/<default> stores consumer_byte_rate as '0x10'" in r.stdout
    r = zk(chroot, "-o", "json", "describe", "--user-defaults")
    assert json.loads(r.stdout)[0]["not_applied"]["request_percentage"]["reason"] == (
        "not a limit: brokers parse it as NaN"
    )

    manifest = tmp_path / "m.yaml"
    manifest.write_text("quotas:\n  - entity: {user: alice}\n    config: {consumer_byte_rate: 2048}\n")
    r = zk(chroot, "plan", "-f", str(manifest))
    assert r.exit_code == 2, r.stderr
    assert (
        "consumer_byte_rate is stored as '1024.0', which brokers cannot parse; applying the manifest rewrites it"
        in (r.stderr)
    )
    kept = "producer_byte_rate is stored as ' 7', which brokers cannot parse; the manifest does not set it, so it stays"
    assert f"{kept} (remove it with alter --delete-config)\n" in r.stderr  # the core's note, the CLI's command
    out = tmp_path / "plan.json"
    r = zk(chroot, "-o", "json", "plan", "-f", str(manifest), "--out", str(out))
    assert any(
        n.endswith(f"{kept} (remove it with alter --delete-config)") for n in json.loads(out.read_text())["notes"]
    )
    r = zk(chroot, "apply", "-f", str(manifest), "--yes")
    assert r.exit_code == 0, r.stderr
    assert config(chroot, "/config/users/alice")["consumer_byte_rate"] == "2048"

    r = zk(chroot, "alter", "--user", "alice", "--delete-config", "producer_byte_rate")
    assert r.exit_code == 0, r.stderr
    assert "producer_byte_rate" not in config(chroot, "/config/users/alice")


@pytest.mark.kafka
def test_a_zookeeper_mode_brokers_admin_api_reports_values_its_quota_managers_cannot_parse(zkmode, zk_admin) -> None:
    """The broker's own DescribeClientQuotas (ZkAdminManager: ``.toDouble`` for every key) shows ``1024.0`` and
    `` 7`` as limits, while its quota managers (``.toLong``) cannot apply them: the ZooKeeper backend says so."""
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.entities import Entity
    from kquotactl.core.filters import EntityFilter

    root = zkmode.zookeeper.split("/", 1)[1]
    path = f"/{root}/config/users/stored-by-hand"
    zk_admin.ensure_path(f"/{root}/config/users")
    zk_admin.create(path, b'{"version":1,"config":{"producer_byte_rate":"1024.0","consumer_byte_rate":" 7"}}')
    try:
        entity = Entity(user="stored-by-hand")
        with AdminBackend.connect(zkmode.bootstrap) as admin:
            [rec] = admin.describe(EntityFilter.exact(entity))
        assert dict(rec.config) == {"producer_byte_rate": 1024, "consumer_byte_rate": 7}
        with ZooKeeperBackend(ZkSettings(connect=zkmode.zookeeper)) as zkb:
            [rec] = zkb.describe(EntityFilter.exact(entity))
        assert (dict(rec.config), dict(rec.unparsed)) == (
            {},
            {"producer_byte_rate": "1024.0", "consumer_byte_rate": " 7"},
        )
    finally:
        zk_admin.delete(path)


def kafka_configs_28(chroot, *args: str) -> None:
    """The real kafka-configs 2.8 (``kafka.admin.ConfigCommand`` from the Maven jars) in ZooKeeper mode."""
    import subprocess

    from kquotactl.testing.servers import classpath, fetch_jars

    cmd = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", classpath(fetch_jars("kafka-2.8"))]
    p = subprocess.run(
        [*cmd, "kafka.admin.ConfigCommand", "--zookeeper", chroot.connect, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr


def test_what_kafka_configs_28_writes_is_read_found_and_changed(chroot) -> None:
    """kafka-configs 2.8 stores ip names as typed and values as typed (after its own validation)."""
    chroot.zk.ensure_path(chroot.root + "/config")
    for name in ("2001:DB8:0::1", "::ffff:10.0.0.7", "10.0.0.7"):
        kafka_configs_28(
            chroot,
            "--alter",
            "--entity-type",
            "ips",
            "--entity-name",
            name,
            "--add-config",
            "connection_creation_rate=5",
        )
    assert sorted(chroot.children("/config/ips")) == ["10.0.0.7", "2001:DB8:0::1", "::ffff:10.0.0.7"]
    r = zk(chroot, "-o", "json", "describe", "--ip", "2001:db8::1")
    assert json.loads(r.stdout) == [{"entity": {"ip": "2001:DB8:0::1"}, "config": {"connection_creation_rate": 5}}]
    assert "2 stored names are the address 10.0.0.7" in zk(chroot, "describe").stderr
    r = zk(chroot, "alter", "--ip", "10.0.0.7", "--add-config", "connection_creation_rate=6")
    assert r.exit_code == 0, r.stderr
    r = zk(chroot, "alter", "--ip", "2001:db8::1", "--add-config", "connection_creation_rate=7")
    assert r.exit_code == 0, r.stderr
    assert {n: config(chroot, f"/config/ips/{n}") for n in chroot.children("/config/ips")} == {
        "10.0.0.7": {"connection_creation_rate": "6"},
        "::ffff:10.0.0.7": {"connection_creation_rate": "6"},
        "2001:DB8:0::1": {"connection_creation_rate": "7"},
    }


def test_zero_and_negative_values_kafka_configs_28_stores_are_shown_as_numbers(chroot) -> None:
    """kafka-configs 2.8 refuses ``1024.0`` and ``0x10`` for a LONG key, trims `` 7``, and stores ``-5`` and ``0``:
    brokers parse those, so they are limits (explain shows them; the throttle model is another matter)."""
    chroot.zk.ensure_path(chroot.root + "/config")
    kafka_configs_28(
        chroot, "--alter", "--entity-type", "users", "--entity-name", "neg", "--add-config", "producer_byte_rate=-5"
    )
    kafka_configs_28(
        chroot, "--alter", "--entity-type", "clients", "--entity-name", "zero", "--add-config", "consumer_byte_rate=0"
    )
    assert config(chroot, "/config/users/neg") == {"producer_byte_rate": "-5"}
    r = zk(chroot, "-o", "json", "describe")
    assert r.exit_code == 0 and r.stderr == "", r.stderr
    assert [(x["entity"], x["config"]) for x in json.loads(r.stdout)] == [
        ({"user": "neg"}, {"producer_byte_rate": -5}),
        ({"client-id": "zero"}, {"consumer_byte_rate": 0}),
    ]
    r = zk(chroot, "-o", "json", "explain", "--user", "neg", "--client-id", "zero")
    by_key = {q["key"]: q for q in json.loads(r.stdout)["quotas"]}
    assert (by_key["producer_byte_rate"]["limit"], by_key["consumer_byte_rate"]["limit"]) == (-5, 0)
