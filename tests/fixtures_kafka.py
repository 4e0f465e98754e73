"""Real Apache Kafka brokers for the ``kafka`` tests, each started once per session.

- ``kraft_server``: Kafka 4.x KRaft (combined broker+controller), PLAINTEXT + SASL_PLAINTEXT/SCRAM listeners.
- ``zk_kafka``: Kafka 3.9 in ZooKeeper mode on the session ZooKeeper, under its own chroot.

The function-scoped ``kraft`` / ``zkmode`` fixtures remove every quota after each test, so tests start
from an empty quota state without restarting a broker.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kquotactl.testing.kafka import KRaftKafkaServer, ZkKafkaServer


def _wipe(backend) -> None:
    """Remove every quota, and wait until describe shows none: a KRaft broker applies the controller's
    metadata asynchronously, so a describe right after an alter can briefly show the old state."""
    import time

    from kquotactl.model import EntityChange

    records = backend.describe()
    if records:
        backend.alter([EntityChange(r.entity, remove=frozenset(r.config)) for r in records])
    deadline = time.monotonic() + 15
    while backend.describe() and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture(scope="session")
def kraft_server() -> Iterator[KRaftKafkaServer]:
    server = KRaftKafkaServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def kraft(kraft_server: KRaftKafkaServer) -> Iterator[KRaftKafkaServer]:
    from kquotactl.backends.admin import AdminBackend

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
    from kquotactl.backends.zookeeper import ZkSettings, ZooKeeperBackend

    yield zk_kafka
    with ZooKeeperBackend(ZkSettings(connect=zk_kafka.zookeeper)) as b:
        _wipe(b)
