"""The admin API backend against a real Kafka 4.x KRaft broker (combined broker+controller)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from kquotactl.backends.kafka.quotas import AdminBackend
from kquotactl.core.changes import EntityChange, Outcome
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.filters import EntityFilter

pytestmark = pytest.mark.kafka


def bs(kraft, *args: str):
    return run_cli("--bootstrap-server", kraft.bootstrap, *args)


def state(kraft) -> list[dict]:
    r = bs(kraft, "describe", "-o", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_round_trip_all_entity_kinds(kraft):
    cases = [
        (["--user", "alice"], "producer_byte_rate=10MiB"),
        (["--user-defaults"], "consumer_byte_rate=2048"),
        (["--user", "alice", "--client-id", "app 1/x"], "request_percentage=12.5"),
        (["--user", "alice", "--client-defaults"], "controller_mutation_rate=3"),
        (["--user-defaults", "--client-defaults"], "producer_byte_rate=1000"),
        (["--client-id", "c~*"], "producer_byte_rate=7"),
        (["--client-defaults"], "consumer_byte_rate=4096"),
        (["--ip", "2001:DB8:0::1"], "connection_creation_rate=20"),
        (["--ip-defaults"], "connection_creation_rate=100"),
    ]
    for ent, cfg in cases:
        r = bs(kraft, "alter", *ent, "--add-config", cfg)
        assert r.exit_code == 0, (ent, r.stderr)
    got = state(kraft)
    assert {"entity": {"user": "alice"}, "config": {"producer_byte_rate": 10485760}} in got
    assert {"entity": {"user": None}, "config": {"consumer_byte_rate": 2048}} in got
    assert {"entity": {"user": "alice", "client-id": "app 1/x"}, "config": {"request_percentage": 12.5}} in got
    assert {"entity": {"user": "alice", "client-id": None}, "config": {"controller_mutation_rate": 3.0}} in got
    assert {"entity": {"user": None, "client-id": None}, "config": {"producer_byte_rate": 1000}} in got
    assert {"entity": {"client-id": "c~*"}, "config": {"producer_byte_rate": 7}} in got
    assert {"entity": {"client-id": None}, "config": {"consumer_byte_rate": 4096}} in got
    assert {"entity": {"ip": "2001:db8::1"}, "config": {"connection_creation_rate": 20}} in got
    assert {"entity": {"ip": None}, "config": {"connection_creation_rate": 100}} in got
    assert len(got) == 9
    assert got[0] == {"entity": {"user": None}, "config": {"consumer_byte_rate": 2048}}  # sorted, default first
    assert isinstance(got[0]["config"]["consumer_byte_rate"], int)  # LONG/INT keys come back as integers


def test_update_remove_and_last_key_removes_entity(kraft):
    assert (
        bs(kraft, "alter", "--user", "u", "--add-config", "producer_byte_rate=100,consumer_byte_rate=200").exit_code
        == 0
    )
    r = bs(
        kraft, "alter", "--user", "u", "--add-config", "producer_byte_rate=150", "--delete-config", "consumer_byte_rate"
    )
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["before"] == {"producer_byte_rate": 100, "consumer_byte_rate": 200}
    assert out["after"] == {"producer_byte_rate": 150}
    assert state(kraft) == [{"entity": {"user": "u"}, "config": {"producer_byte_rate": 150}}]
    assert bs(kraft, "alter", "--user", "u", "--delete-config", "producer_byte_rate").exit_code == 0
    assert state(kraft) == []


def test_delete_unset_key_is_refused_unless_if_exists(kraft):
    r = bs(kraft, "alter", "--user", "u", "--delete-config", "producer_byte_rate")
    assert r.exit_code == 1
    assert "Invalid config(s): producer_byte_rate" in r.stderr
    r = bs(kraft, "alter", "--user", "u", "--delete-config", "producer_byte_rate", "--if-exists", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["outcome"] == "unchanged"


def test_ip_with_user_rejected_by_broker_with_its_reason(kraft):
    # The CLI refuses it before sending; the broker refuses it too when sent directly.
    r = bs(kraft, "alter", "--ip", "192.0.2.1", "--user", "alice", "--add-config", "connection_creation_rate=5")
    assert r.exit_code == 1 and "INVALID_REQUEST" in r.stderr
    with AdminBackend.connect(kraft.bootstrap) as b:
        outcomes = b.wire.alter(
            [([("user", "alice"), ("ip", "192.0.2.1")], [("connection_creation_rate", 5.0, False)])], False
        )
    assert outcomes[0].error_name == "INVALID_REQUEST"
    assert "IP entity shouldnot be combined with User or ClientId" in (outcomes[0].message or "")
    assert state(kraft) == []


def test_bad_values_rejected_with_brokers_reason_others_applied(kraft):
    good = EntityChange(Entity.of(user="good"), {"producer_byte_rate": 1024})
    fractional = EntityChange(Entity.of(user="frac"), {"producer_byte_rate": 10.5})
    negative = EntityChange(Entity.of(user="neg"), {"consumer_byte_rate": -2.0})
    with AdminBackend.connect(kraft.bootstrap) as b:
        results = b.alter([good, fractional, negative])
    assert [r.outcome for r in results] == [Outcome.APPLIED, Outcome.REJECTED, Outcome.REJECTED]
    assert results[1].message == "INVALID_REQUEST: producer_byte_rate cannot be a fractional value."
    assert results[2].message == "INVALID_REQUEST: Quota consumer_byte_rate must be greater than 0"
    assert state(kraft) == [{"entity": {"user": "good"}, "config": {"producer_byte_rate": 1024}}]


def test_request_rate_key_refused_before_the_broker_sees_it(kraft):
    r = bs(kraft, "alter", "--user", "alice", "--add-config", "request_rate=5")
    assert r.exit_code == 1
    assert r.stderr.startswith("kquotactl: error: user=alice: request_rate is not a quota key of any Apache Kafka")
    assert "set request_percentage" in r.stderr and r.stderr.count("\n") == 1
    assert state(kraft) == []


@pytest.mark.parametrize("value", [2**63 - 3, 2**53 + 1])
def test_a_value_the_wire_double_cannot_carry_is_refused_before_anything_is_written(kraft, tmp_path, value):
    """The broker would store the nearest double; kquotactl would then see a change that never converges."""
    r = bs(kraft, "alter", "--user", "big", "--add-config", f"producer_byte_rate={value}")
    assert r.exit_code == 1 and r.stderr.count("\n") == 1, r.stderr
    assert f"user=big: producer_byte_rate={value} cannot be sent exactly" in r.stderr
    assert f"would store {int(float(value)) if value < 2**63 - 1024 else 2**63 - 1}" in r.stderr
    manifest = tmp_path / "q.yaml"
    manifest.write_text(
        f"quotas:\n- entity: {{user: ok}}\n  config: {{producer_byte_rate: 1024}}\n"
        f"- entity: {{user: big}}\n  config: {{producer_byte_rate: {value}}}\n"
    )
    r = bs(kraft, "apply", "-f", str(manifest), "--yes")
    assert r.exit_code == 1 and "cannot be sent exactly" in r.stderr, r.stderr
    assert state(kraft) == []
    assert bs(kraft, "alter", "--user", "max", "--add-config", f"producer_byte_rate={2**63 - 1}").exit_code == 0
    assert state(kraft) == [{"entity": {"user": "max"}, "config": {"producer_byte_rate": 2**63 - 1}}]


def test_dry_run_uses_validate_only_and_writes_nothing(kraft):
    assert bs(kraft, "alter", "--user", "u", "--add-config", "producer_byte_rate=100").exit_code == 0
    r = bs(kraft, "alter", "--user", "u", "--add-config", "producer_byte_rate=200", "--dry-run", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["outcome"] == "validated"
    r = bs(kraft, "alter", "--user", "v", "--add-config", "consumer_byte_rate=0.5", "--dry-run")
    assert r.exit_code == 1 and "whole number" in r.stderr
    assert state(kraft) == [{"entity": {"user": "u"}, "config": {"producer_byte_rate": 100}}]


def test_unchanged_sends_nothing(kraft):
    assert bs(kraft, "alter", "--user", "u", "--add-config", "producer_byte_rate=100").exit_code == 0
    r = bs(kraft, "alter", "--user", "u", "--add-config", "producer_byte_rate=100", "-o", "json")
    assert json.loads(r.stdout)["outcome"] == "unchanged"


def test_describe_filters_kip546(kraft):
    for args in (
        ["--user", "user-1"],
        ["--user", "user-1", "--client-id", "c1"],
        ["--user", "user-1", "--client-defaults"],
        ["--user-defaults", "--client-id", "c1"],
        ["--client-id", "c1"],
        ["--ip", "10.0.0.1"],
    ):
        key = "connection_creation_rate=5" if "--ip" in args else "request_percentage=50"
        assert bs(kraft, "alter", *args, "--add-config", key).exit_code == 0

    def ents(*args: str) -> list[dict]:
        r = bs(kraft, "describe", *args, "-o", "json")
        assert r.exit_code == 0, r.stderr
        return [x["entity"] for x in json.loads(r.stdout)]

    assert ents("--user", "user-1") == [{"user": "user-1"}]
    assert ents("--entity-type", "users") == [{"user": "user-1"}]
    assert ents("--entity-type", "users", "--entity-type", "clients") == [
        {"user": None, "client-id": "c1"},
        {"user": "user-1", "client-id": None},
        {"user": "user-1", "client-id": "c1"},
    ]
    assert ents("--user", "user-1", "--client-defaults") == [{"user": "user-1", "client-id": None}]
    assert ents("--entity-type", "clients") == [{"client-id": "c1"}]
    assert ents("--entity-type", "ips") == [{"ip": "10.0.0.1"}]
    assert len(ents()) == 6
    with AdminBackend.connect(kraft.bootstrap) as b:
        from kquotactl.core.entities import EntityType
        from kquotactl.core.filters import FilterComponent, MatchType

        non_strict = EntityFilter((FilterComponent(EntityType.USER, MatchType.EXACT, "user-1"),), strict=False)
        assert len(b.describe(non_strict)) == 3
        assert b.describe(EntityFilter((), strict=True)) == []


def test_kafka_output_is_kafka_configs_bootstrap_dialect(kraft):
    r = bs(
        kraft,
        "alter",
        "--user",
        "alice",
        "--client-defaults",
        "--add-config",
        "producer_byte_rate=10MiB,request_percentage=200",
        "-o",
        "kafka",
    )
    # kafka-configs names the head type: with --user and --client-defaults that is the user
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "Completed updating config for user alice.\n"
    r = bs(kraft, "alter", "--user", "alice", "--add-config", "consumer_byte_rate=1", "-o", "kafka")
    assert r.stdout == "Completed updating config for user alice.\n"
    r = bs(
        kraft,
        "--describe",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--entity-type",
        "clients",
        "--entity-default",
    )
    assert r.exit_code == 0, r.stderr
    # kafka-configs 4.1.1 prints exactly this (checked with its own ConfigCommand): the two keys share a bucket of
    # the client's HashMap, so they come in the broker's response order
    assert r.stdout == (
        "Quota configs for user-principal 'alice', the default client-id are "
        "request_percentage=200.0, producer_byte_rate=1.048576E7\n"
    )


def test_many_entities_batched_with_per_entity_results(kraft, monkeypatch):
    import kquotactl.backends.kafka.quotas as admin

    monkeypatch.setattr(admin, "MAX_ENTRIES_PER_REQUEST", 7)
    changes = [EntityChange(Entity.of(user=f"u{i:03d}"), {"producer_byte_rate": 1000 + i}) for i in range(40)]
    changes.append(EntityChange(Entity.of(client_id="bad"), {"producer_byte_rate": 0.5}))
    seen = []
    with AdminBackend.connect(kraft.bootstrap) as b:
        results = b.alter(changes, progress=seen.append)
        # each answered request reported as it came (7 entries each), every result once
        assert [len(x) for x in seen] == [7] * 5 + [6]
        assert sorted(r.entity.label() for x in seen for r in x) == sorted(r.entity.label() for r in results)
        assert [r.outcome for r in results].count(Outcome.APPLIED) == 40
        assert results[-1].outcome is Outcome.REJECTED
        recs = b.describe(EntityFilter.all())
    assert len(recs) == 40
    assert recs[5].entity == Entity.of(user="u005") and recs[5].config == {"producer_byte_rate": 1005}


def test_stale_plan_rejected(kraft):
    assert bs(kraft, "alter", "--user", "u", "--add-config", "producer_byte_rate=100").exit_code == 0
    e = Entity.of(user="u")
    with AdminBackend.connect(kraft.bootstrap) as b:
        [r] = b.alter([EntityChange(e, {"producer_byte_rate": 5})], expected={e: {"producer_byte_rate": 99}})
    assert r.outcome is Outcome.REJECTED and "stale plan" in r.message


def test_default_entities_use_null_names(kraft):
    with AdminBackend.connect(kraft.bootstrap) as b:
        b.alter([EntityChange(Entity.of(user=DEFAULT, client_id=DEFAULT), {"producer_byte_rate": 5})])
        found = b.wire.describe([("user", 1, None), ("client-id", 1, None)], True)
    assert len(found) == 1
    assert sorted(found[0][0]) == [("client-id", None), ("user", None)]
    assert found[0][1] == {"producer_byte_rate": 5.0}


# -- security and failures: one line, exit 1 ----------------------------------------------------------


def write_config(tmp_path, text: str) -> str:
    p = tmp_path / "client.properties"
    p.write_text(text)
    return str(p)


SCRAM = (
    "security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mech}\n"
    "sasl.jaas.config=org.apache.kafka.common.security.{module} required "
    'username="{user}" password="{password}";\n'
)
MODULES = {"PLAIN": "plain.PlainLoginModule"}


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_sasl_through_command_config(kraft, tmp_path, mech):
    module = MODULES.get(mech, "scram.ScramLoginModule")
    cfg = write_config(
        tmp_path, SCRAM.format(mech=mech, module=module, user=kraft.scram_user, password=kraft.scram_password)
    )
    r = run_cli(
        "--bootstrap-server",
        kraft.sasl_bootstrap,
        "--command-config",
        cfg,
        "alter",
        "--user",
        "s",
        "--add-config",
        "producer_byte_rate=5",
    )
    assert r.exit_code == 0, r.stderr
    r = run_cli("--bootstrap-server", kraft.sasl_bootstrap, "--command-config", cfg, "describe", "-o", "json")
    assert json.loads(r.stdout) == [{"entity": {"user": "s"}, "config": {"producer_byte_rate": 5}}]


def test_bad_password_is_one_line(kraft, tmp_path):
    cfg = write_config(
        tmp_path,
        SCRAM.format(mech="SCRAM-SHA-256", module="scram.ScramLoginModule", user=kraft.scram_user, password="wrong"),
    )
    r = run_cli("--bootstrap-server", kraft.sasl_bootstrap, "--command-config", cfg, "describe")
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "authentication to Kafka broker" in lines[0] and "failed" in lines[0], r.stderr


def test_plaintext_client_on_sasl_listener_is_one_line(kraft):
    r = run_cli("--bootstrap-server", kraft.sasl_bootstrap, "--connect-timeout", "3", "describe")
    assert r.exit_code == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "kquotactl: error:" in r.stderr


def test_unreachable_is_bounded_one_line():
    import time

    t = time.monotonic()
    r = run_cli("--bootstrap-server", "127.0.0.1:1", "--connect-timeout", "2", "describe")
    assert time.monotonic() - t < 10
    assert r.exit_code == 1
    assert r.stderr.startswith("kquotactl: error: cannot connect to Kafka broker 127.0.0.1:1")


def test_controller_alters_but_cannot_describe(kraft):
    r = run_cli("--bootstrap-controller", kraft.controller_bootstrap, "describe")
    assert r.exit_code == 1 and "use --bootstrap-server" in r.stderr
    r = run_cli(
        "--bootstrap-controller",
        kraft.controller_bootstrap,
        "alter",
        "--user",
        "c",
        "--add-config",
        "producer_byte_rate=9",
    )
    assert r.exit_code == 0, r.stderr
    assert state(kraft) == [{"entity": {"user": "c"}, "config": {"producer_byte_rate": 9}}]


def test_alter_waits_until_its_writes_are_visible(kraft):
    """KRaft brokers apply committed metadata asynchronously; alter returns only once the broker describes it."""
    changes = [EntityChange(Entity.of(user=f"ryw-{i}"), {"consumer_byte_rate": 100 + i}) for i in range(500)]
    with AdminBackend.connect(kraft.bootstrap) as b:
        b.alter(changes)
        assert b.warnings == []
        assert len(b.describe()) == 500
        b.alter([EntityChange(c.entity, remove=frozenset({"consumer_byte_rate"})) for c in changes])
        assert b.describe() == []


@pytest.mark.zookeeper
def test_broker_older_than_2_6_is_one_line(old_kafka):
    for args in (["describe"], ["alter", "--user", "a", "--add-config", "producer_byte_rate=5"]):
        r = run_cli("--bootstrap-server", old_kafka.bootstrap, *args)
        assert r.exit_code == 1
        assert r.stderr == (
            f"kquotactl: error: Kafka broker {old_kafka.bootstrap} does not support DescribeClientQuotas (API 48): "
            "client quotas through the admin API need Kafka 2.6 or later; use --zookeeper for older ZooKeeper-mode "
            "clusters\n"
        )


def test_mutual_tls_with_pem_stores(kraft, kafka_tls, tmp_path):
    cfg = write_config(
        tmp_path,
        "security.protocol=SSL\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={kafka_tls.ca}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={kafka_tls.client_store}\n",
    )
    r = run_cli(
        "--bootstrap-server",
        kraft.ssl_bootstrap,
        "--command-config",
        cfg,
        "alter",
        "--user",
        "t",
        "--add-config",
        "producer_byte_rate=5",
    )
    assert r.exit_code == 0, r.stderr
    r = run_cli("--bootstrap-server", kraft.ssl_bootstrap, "--command-config", cfg, "describe", "-o", "json")
    assert json.loads(r.stdout) == [{"entity": {"user": "t"}, "config": {"producer_byte_rate": 5}}]


def test_tls_untrusted_broker_is_one_line(kraft, kafka_tls, tmp_path):
    cfg = write_config(
        tmp_path,
        f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={kafka_tls.other_ca}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={kafka_tls.client_store}\n",
    )
    r = run_cli(
        "--bootstrap-server", kraft.ssl_bootstrap, "--connect-timeout", "5", "--command-config", cfg, "describe"
    )
    assert r.exit_code == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "TLS" in r.stderr, r.stderr


def test_reconnects_when_the_connection_was_closed(kraft):
    """A connection closed while idle (connections.max.idle.ms, a broker restart) is re-opened on the next request."""
    with AdminBackend.connect(kraft.bootstrap) as b:
        b.alter([EntityChange(Entity.of(user="r"), {"producer_byte_rate": 5})])
        b.wire._conn.close()
        assert [r.entity for r in b.describe()] == [Entity.of(user="r")]


def test_bootstrap_server_and_command_config_from_environment(kraft, tmp_path):
    cfg = write_config(
        tmp_path,
        SCRAM.format(
            mech="SCRAM-SHA-512",
            module="scram.ScramLoginModule",
            user=kraft.scram_user,
            password=kraft.scram_password,
        ),
    )
    env = {"KQUOTACTL_BOOTSTRAP_SERVER": kraft.sasl_bootstrap, "KQUOTACTL_COMMAND_CONFIG": cfg}
    r = run_cli("alter", "--client-defaults", "--add-config", "consumer_byte_rate=1MB", env=env)
    assert r.exit_code == 0, r.stderr
    r = run_cli("describe", "-o", "json", env=env)
    assert json.loads(r.stdout) == [{"entity": {"client-id": None}, "config": {"consumer_byte_rate": 1000000}}]


def test_an_address_stored_under_another_spelling_is_found_and_changed(kraft):
    """KRaft stores ip names as sent (the controller only checks them with InetAddress.getByName): a record written
    as ``2001:DB8:0::2`` by another client is the address ``2001:db8::2``, and kquotactl changes that record."""
    typed = Entity(ip="2001:DB8:0::2")  # as another admin client would send it
    with AdminBackend.connect(kraft.bootstrap) as b:
        [r] = b.alter([EntityChange(typed, {"connection_creation_rate": 3})])
        assert r.outcome is Outcome.APPLIED, r.message
        [rec] = b.describe(EntityFilter.exact(Entity.of(ip="2001:db8::2")))
        assert rec.entity == typed
        [r] = b.alter([EntityChange(Entity.of(ip="2001:db8::2"), {"connection_creation_rate": 4})])
        assert (r.entity, r.outcome) == (typed, Outcome.APPLIED)
        ips = [x for x in b.describe() if x.entity.ip is not None and x.entity.ip is not DEFAULT]
        assert [(x.entity, dict(x.config)) for x in ips if "2001" in str(x.entity.ip)] == [
            (typed, {"connection_creation_rate": 4})
        ]
        b.alter([EntityChange(typed, remove=frozenset({"connection_creation_rate"}))])


def test_kraft_refuses_a_sanitized_ip_name_as_an_unresolvable_host(kraft):
    """KRaft's controller checks ip names with InetAddress.getByName: ``%3A%3A1`` (how a ZooKeeper-mode broker's
    admin path spells ``::1``) is a host name to it, refused unless the resolver knows it (ZooKeeper-to-KRaft
    migration desanitizes such nodes into ``::1`` instead)."""
    with AdminBackend.connect(kraft.bootstrap) as b:
        [r] = b.alter([EntityChange(Entity(ip="%3A%3A1"), {"connection_creation_rate": 3})])
    assert r.outcome is Outcome.REJECTED
    assert "%3A%3A1" in r.message and "not a valid IP or resolvable host" in r.message
