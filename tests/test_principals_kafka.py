"""``--principal`` against a real KRaft broker with mutual TLS and ``ssl.principal.mapping.rules``: the quota
written for the client certificate's DN throttles a real mTLS client, and the rules are read from the broker.

One private broker for the module (the mapping rules and super.users are static configs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from conftest import run_cli, write_manifest, zk_cli
from fixtures_kafka import Tls
from kquotactl.testing.kafka import KRaftKafkaServer

pytestmark = pytest.mark.kafka

RULES = "RULE:^CN=([^,]+)$/$1-mapped/L,DEFAULT"
CLIENT_DN = "CN=kquotactl-client"  # the test client certificate's subject (fixtures_kafka.make_tls)
MAPPED = "kquotactl-client-mapped"


@pytest.fixture(scope="module")
def mapped_kraft(kafka_tls: Tls) -> Iterator[KRaftKafkaServer]:
    server = KRaftKafkaServer(
        ssl_keystore=kafka_tls.broker_store,
        ssl_truststore=kafka_tls.ca,
        extra_props={
            "ssl.principal.mapping.rules": RULES,
            "super.users": "User:admin;User:ANONYMOUS",
        },
    )
    server.start()
    yield server
    server.close()


def _produce_throttle_ms(server: KRaftKafkaServer, tls: Tls, seconds: float = 3.0) -> float:
    """Produce as fast as possible over the mTLS listener for a few seconds; the broker's largest throttle."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=server.ssl_bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(tls.ca),
        ssl_certfile=str(tls.client_store),
        ssl_keyfile=str(tls.client_store),
        ssl_check_hostname=False,
        linger_ms=5,
        acks=1,
    )
    try:
        payload = b"x" * 10_000
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            producer.send("principals-throttle", payload)
            producer.flush()
        metrics = producer.metrics()["producer-metrics"]
        return float(metrics.get("throttle-time-max") or 0.0)
    finally:
        producer.close(timeout=5)


def test_a_quota_written_for_the_dn_throttles_the_mtls_client(mapped_kraft, kafka_tls):
    r = run_cli(
        "--bootstrap-server",
        mapped_kraft.bootstrap,
        "alter",
        "--principal",
        "cn=kquotactl-client",  # another spelling: written as X500Principal prints it
        "--add-config",
        "producer_byte_rate=20000",
        "-o",
        "table",
    )
    assert r.exit_code == 0, r.stderr
    assert f"-> user '{MAPPED}'" in r.stdout and "broker 1's configs" in r.stdout, r.stdout
    assert "as the broker sees it: CN=kquotactl-client" in r.stdout
    r = run_cli("--bootstrap-server", mapped_kraft.bootstrap, "describe", "--principal", CLIENT_DN, "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == [{"entity": {"user": MAPPED}, "config": {"producer_byte_rate": 20000}}]
    assert _produce_throttle_ms(mapped_kraft, kafka_tls) > 0


def test_dry_run_shows_the_mapping_and_writes_nothing(mapped_kraft):
    r = run_cli(
        "--bootstrap-server",
        mapped_kraft.bootstrap,
        "alter",
        "--principal",
        "CN=Other-App",
        "--add-config",
        "consumer_byte_rate=1000",
        "--dry-run",
        "-o",
        "json",
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["principal"]["user"] == "other-app-mapped" and data["principal"]["rules_from"] == "broker 1's configs"
    r = run_cli("--bootstrap-server", mapped_kraft.bootstrap, "describe", "--user", "other-app-mapped", "-o", "json")
    assert json.loads(r.stdout) == []


def test_explain_and_given_rules_win_over_the_brokers(mapped_kraft):
    r = run_cli(
        "--bootstrap-server",
        mapped_kraft.bootstrap,
        "explain",
        "--principal",
        CLIENT_DN,
        "--ssl-principal-mapping-rules",
        "DEFAULT",
        "-o",
        "json",
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["connection"]["user"] == CLIENT_DN
    assert "(ssl.principal.mapping.rules as given)" in r.stderr


def test_lint_with_the_brokers_rules_and_super_users(mapped_kraft, tmp_path):
    """The broker's DescribeConfigs hides super.users (it is not one of its own configs, so it is answered as
    sensitive): kquotactl says so, and lint takes it as data (--super-users)."""
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.core.lint import lint
    from kquotactl.manifests.loader import load_manifests
    from kquotactl.services.principals import PrincipalRuleArgs, broker_principals

    path = write_manifest(
        tmp_path,
        """
        quotas:
          - entity: {user: "<default>"}
            config: {producer_byte_rate: 1MiB}
          - entity: {user: "CN=kquotactl-client"}
            config: {producer_byte_rate: 2MiB}
        """,
    )
    with AdminBackend.connect(mapped_kraft.bootstrap) as backend:
        principals = broker_principals(backend, PrincipalRuleArgs(), read_super_users=True)
    assert principals.super_users == () and principals.super_users_hidden
    warnings = {w.code: w.message for w in lint(load_manifests([path]), principals)}
    assert f"to the user '{MAPPED}'" in warnings["unmapped-dn"]
    r = run_cli("validate", "-f", path, "--ssl-principal-mapping-rules", RULES, "--super-users", "User:admin")
    assert r.exit_code == 0, r.stderr
    assert "users/<default> applies to 'admin'" in r.stderr and f"'{MAPPED}'" in r.stderr


@pytest.mark.zookeeper
def test_zookeeper_reads_only_the_cluster_wide_dynamic_rules(chroot):
    """Through --zookeeper the rules come from /config/brokers/<default> (server.properties is not in ZooKeeper)."""
    r = zk_cli(chroot, "describe", "--principal", "CN=svc-a,OU=payments,O=acme", "-o", "table")
    assert r.exit_code == 0, r.stderr
    assert "-> user 'CN=svc-a,OU=payments,O=acme'" in r.stdout and "not set, Kafka's default" in r.stdout
    config = {"version": 1, "config": {"ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/U"}}
    chroot.zk.create(f"{chroot.root}/config/brokers/<default>", json.dumps(config).encode(), makepath=True)
    r = zk_cli(chroot, "describe", "--principal", "CN=svc-a,OU=payments,O=acme", "-o", "table")
    assert r.exit_code == 0, r.stderr
    assert "-> user 'SVC-A'" in r.stdout and "dynamic broker configs in ZooKeeper" in r.stdout, r.stdout
