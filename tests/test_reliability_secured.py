"""Secured ZooKeeper: digest and SASL authentication with Kafka's secure ACLs, and TLS with PEM certificates.

Each server is private to this module (secured nodes cannot be cleaned up by the shared harness's
unauthenticated admin client). Certificates come from :mod:`kquotactl.testing.pki`, generated per run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from fixtures_reliability import check_layout, walk
from kquotactl.testing.pki import Pki, make_pki
from kquotactl.testing.servers import ZooKeeperServer, free_port

pytestmark = [pytest.mark.reliability, pytest.mark.zookeeper]

PASSWORD = "kafka-secret-1"


def _one_line_error(r, *needles: str) -> None:
    assert r.exit_code == 1, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kquotactl: error: "), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


# -- digest authentication + --zk-acl secure ------------------------------------------------------------------


@pytest.fixture(scope="module")
def digest_zk() -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer()
    server.start()
    yield server
    server.close()


def _open(connect: str, auth: list[tuple[str, str]] | None = None):
    from kazoo.client import KazooClient

    zk = KazooClient(connect, auth_data=auth or [])
    zk.start(timeout=30)
    return zk


def test_secure_acls_are_what_kafka_brokers_set_and_outsiders_cannot_write(digest_zk) -> None:
    from kazoo.exceptions import NoAuthError
    from kazoo.security import ACL, Id, make_digest_acl_credential

    connect = digest_zk.connect + "/digest1"
    _open(digest_zk.connect).ensure_path("/digest1/brokers/ids")
    auth = ["--zk-auth", f"digest:kafka:{PASSWORD}", "--zk-acl", "secure"]
    for ent, cfg in (
        (["--user", "alice"], "producer_byte_rate=1024"),
        (["--user", "alice", "--client-id", "app"], "consumer_byte_rate=2048"),
        (["--client-id", "app"], "request_percentage=50"),
        (["--ip", "192.0.2.1"], "connection_creation_rate=5"),
    ):
        r = run_cli("--zookeeper", connect, *auth, "alter", *ent, "--add-config", cfg)
        assert r.exit_code == 0, r.stderr

    me = Id("digest", make_digest_acl_credential("kafka", PASSWORD))
    creator_all = ACL(31, me)
    world_read = ACL(1, Id("world", "anyone"))
    zk = _open(digest_zk.connect, [("digest", f"kafka:{PASSWORD}")])
    try:
        # Kafka's ZkData.defaultAcls(isSecure=true): creator-all, plus world-read outside the sensitive
        # /config/users tree (SCRAM credentials live there).
        expected = {
            "/config": [creator_all, world_read],
            "/config/changes": [creator_all, world_read],
            "/config/clients": [creator_all, world_read],
            "/config/clients/app": [creator_all, world_read],
            "/config/ips": [creator_all, world_read],
            "/config/ips/192.0.2.1": [creator_all, world_read],
            "/config/users": [creator_all],
            "/config/users/alice": [creator_all],
            "/config/users/alice/clients": [creator_all],
            "/config/users/alice/clients/app": [creator_all],
        }
        for path, acl in expected.items():
            assert sorted(zk.get_acls("/digest1" + path)[0]) == sorted(acl), path
        notes = zk.get_children("/digest1/config/changes")
        assert len(notes) == 4
        for n in notes:
            assert sorted(zk.get_acls(f"/digest1/config/changes/{n}")[0]) == sorted([creator_all, world_read])
        before = walk(zk, "/digest1")
        assert check_layout(before) == []
    finally:
        zk.stop()

    # an unauthenticated client can read what is world-readable, and modify nothing
    outsider = _open(digest_zk.connect)
    try:
        for op in (
            lambda: outsider.set("/digest1/config/users/alice", b"{}"),
            lambda: outsider.set("/digest1/config/clients/app", b"{}"),
            lambda: outsider.create("/digest1/config/clients/evil", b"{}"),
            lambda: outsider.create("/digest1/config/changes/config_change_", b"{}", sequence=True),
            lambda: outsider.delete("/digest1/config/ips/192.0.2.1"),
            lambda: outsider.get("/digest1/config/users/alice"),
        ):
            with pytest.raises(NoAuthError):
                op()
    finally:
        outsider.stop()

    # kquotactl without credentials: one clear line, nothing written
    r = run_cli("--zookeeper", connect, "alter", "--client-id", "app", "--add-config", "request_percentage=60")
    _one_line_error(r, "/config/clients/app", "authenticated")
    r = run_cli("--zookeeper", connect, "alter", "--client-id", "new", "--add-config", "request_percentage=60")
    _one_line_error(r, "/config/clients", "authenticated")
    zk = _open(digest_zk.connect, [("digest", f"kafka:{PASSWORD}")])
    try:
        assert walk(zk, "/digest1") == before
    finally:
        zk.stop()


def test_wrong_digest_password_is_named_as_such(digest_zk) -> None:
    """A wrong digest password does not fail the connection (ZooKeeper just sees another identity); the
    refusal comes later, and kquotactl says it is the password, by comparing identities with the ACL."""
    connect = digest_zk.connect + "/digest2"
    _open(digest_zk.connect).ensure_path("/digest2/brokers/ids")
    ok = run_cli(
        "--zookeeper", connect, "--zk-auth", f"digest:kafka:{PASSWORD}", "--zk-acl", "secure",
        "alter", "--client-id", "app", "--add-config", "producer_byte_rate=1",
    )  # fmt: skip
    assert ok.exit_code == 0, ok.stderr
    for ent in (["--client-id", "app"], ["--client-id", "other"], ["--user", "bob"]):
        r = run_cli(
            "--zookeeper", connect, "--zk-auth", "digest:kafka:WRONG-pw", "--zk-acl", "secure",
            "alter", *ent, "--add-config", "producer_byte_rate=2",
        )  # fmt: skip
        _one_line_error(r, "wrong password for digest user 'kafka'")
        assert "WRONG-pw" not in r.stderr and PASSWORD not in r.stderr
    r = run_cli(
        "--zookeeper", connect, "--zk-auth", "digest:mallory:x", "alter", "--client-id", "app",
        "--add-config", "producer_byte_rate=2",
    )  # fmt: skip
    _one_line_error(r, "digest:kafka")


def test_secure_acl_without_credentials_is_refused_before_writing(digest_zk) -> None:
    connect = digest_zk.connect + "/digest3"
    zk = _open(digest_zk.connect)
    zk.ensure_path("/digest3/brokers/ids")
    r = run_cli(
        "--zookeeper", connect, "--zk-acl", "secure", "alter", "--user", "a", "--add-config", "producer_byte_rate=1"
    )
    _one_line_error(r, "--zk-acl secure needs an authenticated")
    assert zk.get_children("/digest3") == ["brokers"]  # no /config: nothing written
    zk.stop()


# -- SASL (DIGEST-MD5 through JAAS) --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sasl_zk(tmp_path_factory) -> Iterator[tuple[ZooKeeperServer, Path]]:
    d = tmp_path_factory.mktemp("sasl")
    server_jaas = d / "server-jaas.conf"
    server_jaas.write_text(
        f'Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_kafka="{PASSWORD}";\n}};\n'
    )
    server = ZooKeeperServer(
        extra_cfg={"authProvider.1": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"},
        jvm_opts=[f"-Djava.security.auth.login.config={server_jaas}"],
    )
    server.start()
    yield server, d
    server.close()


def _client_jaas(d: Path, password: str, name: str) -> Path:
    f = d / name
    f.write_text(
        "Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
        f'  username="kafka"\n  password="{password}";\n}};\n'
    )
    return f


def test_sasl_digest_md5_with_secure_acls_and_a_bad_password(sasl_zk) -> None:
    from kazoo.security import ACL, Id

    server, d = sasl_zk
    good, bad = _client_jaas(d, PASSWORD, "good.conf"), _client_jaas(d, "nope", "bad.conf")
    connect = server.connect + "/sasl1"
    _open(server.connect).ensure_path("/sasl1/brokers/ids")
    r = run_cli(
        "--zookeeper", connect, "--zk-sasl-jaas", str(good), "--zk-acl", "secure",
        "alter", "--user", "alice", "--add-config", "producer_byte_rate=1024",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    r = run_cli("--zookeeper", connect, "--zk-sasl-jaas", str(good), "describe", "--user", "alice", "-o", "json")
    assert json.loads(r.stdout)[0]["config"] == {"producer_byte_rate": 1024}
    from kazoo.client import KazooClient

    insider = KazooClient(
        server.connect, sasl_options={"mechanism": "DIGEST-MD5", "username": "kafka", "password": PASSWORD}
    )
    insider.start(timeout=30)
    try:
        assert insider.get_acls("/sasl1/config/users/alice")[0] == [ACL(31, Id("sasl", "kafka"))]
    finally:
        insider.stop()
    # a bad password: kazoo's start() succeeds and the failure arrives later; kquotactl probes and says so
    r = run_cli("--zookeeper", connect, "--connect-timeout", "5", "--zk-sasl-jaas", str(bad), "describe")
    _one_line_error(r, "SASL authentication failed")
    assert "nope" not in r.stderr
    # unauthenticated: cannot modify the SASL-owned node
    r = run_cli("--zookeeper", connect, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1")
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1


# -- TLS with PEM certificates -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_zk(tmp_path_factory) -> Iterator[tuple[ZooKeeperServer, Pki, int]]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    secure_port = free_port()
    server = ZooKeeperServer(
        extra_cfg={
            "secureClientPort": str(secure_port),
            "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.keyStore.location": str(pki.server.bundle),
            "ssl.keyStore.type": "PEM",
            "ssl.trustStore.location": str(pki.ca),
            "ssl.trustStore.type": "PEM",
            "ssl.clientAuth": "need",
        }
    )
    server.start()
    yield server, pki, secure_port
    server.close()


def _tls_props(d: Path, pki: Pki, keystore: Path | None, name: str = "zk-tls.properties") -> Path:
    f = d / name
    lines = [
        "zookeeper.ssl.client.enable=true",
        "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
        f"zookeeper.ssl.truststore.location={pki.ca}",
        "zookeeper.ssl.truststore.type=PEM",
    ]
    if keystore is not None:
        lines += [f"zookeeper.ssl.keystore.location={keystore}", "zookeeper.ssl.keystore.type=PEM"]
    f.write_text("\n".join(lines) + "\n")
    return f


def test_zookeeper_over_tls_with_pem_certificates(tls_zk, tmp_path) -> None:
    server, pki, port = tls_zk
    _open(server.connect).ensure_path("/tls1/brokers/ids")
    connect = f"127.0.0.1:{port}/tls1"
    props = _tls_props(tmp_path, pki, pki.client.bundle)
    r = run_cli(
        "--zookeeper", connect, "--zk-tls-config-file", str(props),
        "alter", "--user", "alice", "--add-config", "producer_byte_rate=1024",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    r = run_cli("--zookeeper", connect, "--zk-tls-config-file", str(props), "describe", "-o", "json")
    assert json.loads(r.stdout) == [{"entity": {"user": "alice"}, "config": {"producer_byte_rate": 1024}}]


@pytest.mark.parametrize("case", ["no-client-cert", "stranger-cert", "plaintext-port"])
def test_tls_misconfigurations_fail_within_the_connect_timeout_with_a_hint(tls_zk, tmp_path, case) -> None:
    server, pki, port = tls_zk
    keystore = {"no-client-cert": None, "stranger-cert": pki.stranger.bundle, "plaintext-port": pki.client.bundle}[case]
    props = _tls_props(tmp_path, pki, keystore)
    target = server.connect if case == "plaintext-port" else f"127.0.0.1:{port}"
    r = run_cli("--zookeeper", target, "--connect-timeout", "3", "--zk-tls-config-file", str(props), "describe")
    _one_line_error(r, "TLS")


def test_jks_store_is_refused_with_how_to_convert(tmp_path) -> None:
    store = tmp_path / "client.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed")
    props = tmp_path / "zk.properties"
    props.write_text(f"zookeeper.ssl.client.enable=true\nzookeeper.ssl.keystore.location={store}\n"
                     "zookeeper.ssl.keystore.type=JKS\nzookeeper.ssl.keystore.password=changeit\n")  # fmt: skip
    r = run_cli("--zookeeper", "127.0.0.1:1", "--zk-tls-config-file", str(props), "describe")
    _one_line_error(r, "PEM")
    assert "changeit" not in r.stderr
