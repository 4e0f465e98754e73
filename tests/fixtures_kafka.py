"""Real Apache Kafka brokers for the ``kafka`` tests, each started once per session.

- ``kraft_server``: Kafka 4.x KRaft (combined broker+controller), PLAINTEXT + SASL_PLAINTEXT/SCRAM listeners.
- ``zk_kafka``: Kafka 3.9 in ZooKeeper mode on the session ZooKeeper, under its own chroot.

The function-scoped ``kraft`` / ``zkmode`` fixtures remove every quota after each test, so tests start
from an empty quota state without restarting a broker.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kquotactl.testing.kafka import KRaftCluster, KRaftKafkaServer, ZkKafkaServer
from kquotactl.testing.versions import SUITES, jars_of


def _wipe(backend) -> None:
    """Remove every quota, and wait until describe shows none: a KRaft broker applies the controller's
    metadata asynchronously, so a describe right after an alter can briefly show the old state."""
    import time

    from kquotactl.core.changes import EntityChange

    records = backend.describe()
    if records:
        backend.alter([EntityChange(r.entity, remove=frozenset(r.config)) for r in records])
    deadline = time.monotonic() + 15
    while backend.describe() and time.monotonic() < deadline:
        time.sleep(0.05)


@dataclass
class Tls:
    """A throw-away CA, a broker certificate (127.0.0.1 / localhost) and a client certificate, as PEM files."""

    ca: Path
    broker_store: Path  # broker key (PKCS#8) + certificate chain, for ssl.keystore.type=PEM
    client_store: Path  # client certificate + key in one file, for --command-config ssl.keystore.location
    other_ca: Path  # a CA that signed nothing here (to prove verification fails)


def make_tls(directory: Path) -> Tls:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def cert(subject: str, key, issuer: str, issuer_key, ca: bool, sans=None) -> x509.Certificate:
        b = (
            x509.CertificateBuilder()
            .subject_name(name(subject))
            .issuer_name(name(issuer))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    def pem_key(key) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def pem(c: x509.Certificate) -> bytes:
        return c.public_bytes(serialization.Encoding.PEM)

    ca_key, other_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = cert("kquotactl test CA", ca_key, "kquotactl test CA", ca_key, True)
    other_cert = cert("someone else's CA", other_key, "someone else's CA", other_key, True)
    broker_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    sans = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    broker_cert = cert("broker", broker_key, "kquotactl test CA", ca_key, False, sans)
    client_cert = cert("kquotactl-client", client_key, "kquotactl test CA", ca_key, False)
    tls = Tls(directory / "ca.pem", directory / "broker.pem", directory / "client.pem", directory / "other-ca.pem")
    tls.ca.write_bytes(pem(ca_cert))
    tls.other_ca.write_bytes(pem(other_cert))
    tls.broker_store.write_bytes(pem_key(broker_key) + pem(broker_cert) + pem(ca_cert))
    tls.client_store.write_bytes(pem(client_cert) + pem_key(client_key))
    return tls


@pytest.fixture(scope="session")
def kafka_tls(tmp_path_factory) -> Tls:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def kraft_server(kafka_tls: Tls) -> Iterator[KRaftKafkaServer]:
    server = KRaftKafkaServer(ssl_keystore=kafka_tls.broker_store, ssl_truststore=kafka_tls.ca)
    server.start()
    yield server
    server.close()


@pytest.fixture
def kraft(kraft_server: KRaftKafkaServer) -> Iterator[KRaftKafkaServer]:
    from kquotactl.backends.kafka.quotas import AdminBackend

    yield kraft_server
    with AdminBackend.connect(kraft_server.bootstrap) as b:
        _wipe(b)


@dataclass
class ZkModeKafka:
    """A ZooKeeper-mode broker and the ZooKeeper connect string (with chroot) it reads its configs from."""

    server: ZkKafkaServer
    zookeeper: str

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap


@pytest.fixture(scope="session")
def zk_kafka(zk_server) -> Iterator[ZkModeKafka]:
    connect = f"{zk_server.connect}/kafka39"
    server = ZkKafkaServer(zookeeper=connect)
    server.start()
    yield ZkModeKafka(server, connect)
    server.close()


@pytest.fixture
def zkmode(zk_kafka: ZkModeKafka) -> Iterator[ZkModeKafka]:
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings

    yield zk_kafka
    with ZooKeeperBackend(ZkSettings(connect=zk_kafka.zookeeper)) as b:
        _wipe(b)


@pytest.fixture(scope="session")
def old_kafka(zk_server) -> Iterator[ZkKafkaServer]:
    """Kafka 2.5 (ZooKeeper mode): no DescribeClientQuotas/AlterClientQuotas (they came with 2.6)."""
    legacy = jars_of(SUITES["pre-kip546-broker"][0])
    server = ZkKafkaServer(zookeeper=f"{zk_server.connect}/kafka25", jars_name=legacy, supports_quota_api=False)
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session", params=SUITES["early-kip546-broker"])
def early_kafka(request, zk_server) -> Iterator[ZkModeKafka]:
    """Kafka 2.6 and 2.7 (ZooKeeper mode): the admin API's first releases, before DescribeCluster (2.8), with fewer
    keys (2.6: no controller_mutation_rate) and no ip quotas. Each under its own chroot, read back by ZooKeeper."""
    line = request.param
    connect = f"{zk_server.connect}/kafka{line.replace('.', '')}"
    server = ZkKafkaServer(zookeeper=connect, jars_name=jars_of(line))
    server.start()
    yield ZkModeKafka(server, connect)
    server.close()


# The brokers' own layout ("[%d] %p %m (%c)%n", config/log4j2.yaml) for the request logger, in its own file.
LOG4J2_REQUEST_LOG = """Configuration:
  Appenders:
    File:
      - name: F
        fileName: "{server}"
        PatternLayout:
          pattern: "[%d] %p %m (%c)%n"
      - name: R
        fileName: "{requests}"
        PatternLayout:
          pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        ref: F
    Logger:
      - name: kafka.request.logger
        level: DEBUG
        additivity: false
        AppenderRef:
          ref: R
"""


@dataclass
class RequestLogBroker(KRaftKafkaServer):
    """The harness's KRaft broker with the request log written to ``workdir/kafka-request.log``, timestamps in UTC."""

    def _log_opts(self) -> list[str]:
        assert self.workdir is not None
        cfg = self.workdir / "log4j2.yaml"
        logs = {"server": self.workdir / "server.log", "requests": self.workdir / "kafka-request.log"}
        cfg.write_text(LOG4J2_REQUEST_LOG.format(**logs))
        return [f"-Dlog4j2.configurationFile={cfg}", "-Duser.timezone=UTC"]


@dataclass
class ObservedKafka:
    """A broker whose quota sensors are served by the JMX exporter agent, and a Prometheus server scraping it."""

    server: KRaftKafkaServer
    exporter: str  # host:port of the broker's /metrics
    prometheus: Any  # kquotactl.testing.observe.PrometheusServer, or None (scrape only)

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap


def _observed(make_server, with_prometheus: bool = True) -> Iterator[ObservedKafka]:
    import os

    from kquotactl.testing.observe import PROMETHEUS, PrometheusServer, jmx_agent_opts
    from kquotactl.testing.servers import free_port

    if with_prometheus and not os.access(PROMETHEUS, os.X_OK):
        pytest.fail(f"{PROMETHEUS} is not installed (apt-get install prometheus; `make setup` does it)")
    port = free_port()
    server = make_server(jmx_agent_opts(port))
    prometheus = PrometheusServer(targets=[f"127.0.0.1:{port}"]) if with_prometheus else None
    try:
        server.start()
        if prometheus is not None:
            prometheus.start()
        yield ObservedKafka(server, f"127.0.0.1:{port}", prometheus)
    finally:
        if prometheus is not None:
            prometheus.close()
        server.close()


@pytest.fixture(scope="module")
def observed_kraft() -> Iterator[ObservedKafka]:
    """Kafka 4.4 KRaft started with ``-javaagent:jmx_prometheus_javaagent=PORT:<shipped rules>``, scraped every
    second by Debian's /usr/bin/prometheus (a failure when it is not installed: scripts/bootstrap.sh installs it)."""
    yield from _observed(lambda jvm: KRaftKafkaServer(jvm_opts=jvm))


@pytest.fixture(scope="module")
def observed_zk_kafka(zk_server) -> Iterator[ObservedKafka]:
    """Kafka 3.9 in ZooKeeper mode with the exporter agent (read directly: no Prometheus), under its own chroot."""
    connect = f"{zk_server.connect}/kafka39top"
    yield from _observed(lambda jvm: ZkKafkaServer(zookeeper=connect, jvm_opts=jvm), with_prometheus=False)


@pytest.fixture(scope="session")
def kraft3_cluster() -> Iterator[KRaftCluster]:
    """Three KRaft nodes (each broker and controller, one three-voter quorum): a real 3-broker cluster."""
    cluster = KRaftCluster()
    cluster.start()
    yield cluster
    cluster.close()


@pytest.fixture
def kraft3(kraft3_cluster: KRaftCluster) -> Iterator[KRaftCluster]:
    """The 3-broker cluster, every broker running (one a test stopped is started again before the next test uses
    the cluster, not after: a session's last test may stop one for free), every quota removed after the test."""
    from kquotactl.backends.kafka.quotas import AdminBackend

    for i, node in enumerate(kraft3_cluster.nodes):
        if not node.running:
            kraft3_cluster.start_broker(i)
    yield kraft3_cluster
    with AdminBackend.connect(kraft3_cluster.bootstrap) as b:
        _wipe(b)


@pytest.fixture(scope="module")
def observed_request_log() -> Iterator[ObservedKafka]:
    """Kafka 4.x KRaft with both of a broker's records of its clients: the request log (``kafka.request.logger`` at
    DEBUG, in ``workdir/kafka-request.log``) and the quota sensors through the JMX exporter agent, scraped every
    second by a real Prometheus."""
    yield from _observed(lambda jvm: RequestLogBroker(jvm_opts=jvm))
