"""A ZooKeeper -> KRaft migration (KIP-866) on 127.0.0.1, as an operator runs it with Kafka 3.9: a real ZooKeeper,
a KRaft controller in migration mode and a ZooKeeper-mode broker with the migration enabled.

The configuration follows Kafka 3.9's ``docs/ops.html`` ("ZooKeeper to KRaft Migration"): the controller sets
``zookeeper.metadata.migration.enable=true`` and ``zookeeper.connect``, is formatted with the ZooKeeper cluster's
id, and names the brokers' ``inter.broker.listener.name``; the broker adds ``zookeeper.metadata.migration.enable``,
``controller.quorum.voters`` (or ``controller.quorum.bootstrap.servers``), ``controller.listener.names`` and the
CONTROLLER listener in ``listener.security.protocol.map``. Once every ZooKeeper broker has registered, the controller
claims ``/controller`` (``KafkaZkClient.tryRegisterKRaftControllerAsActiveController``), copies the metadata
(``KRaftMigrationDriver.MigrateMetadataEvent``), records the metadata offset in ``/migration`` and enters
dual-write: :meth:`ZkMigration.wait_migrated` waits for that.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kquotactl.testing.kafka import LOG4J1, ZkKafkaServer, _KafkaBase, new_cluster_id
from kquotactl.testing.servers import free_port
from kquotactl.testing.versions import SUITES, jars_of

#: the release line that runs both sides of the migration (the last one with ZooKeeper mode)
MIGRATION_LINE = SUITES["zk-broker"][0]
#: the KRaft controller's node id: KRaft ids share one namespace with the ZooKeeper brokers' (docs/ops.html)
CONTROLLER_ID = 3000
#: the controller logs its migration driver's state changes at INFO (``KRaftMigrationDriver.transitionTo``)
DUAL_WRITE_LINE = "to DUAL_WRITE state"


@dataclass
class MigrationController(_KafkaBase):
    """A Kafka 3.9 KRaft controller (``process.roles=controller``) in migration mode, alone in its quorum."""

    jars_name: str = jars_of(MIGRATION_LINE)
    zookeeper: str = ""
    cluster_id: str = ""
    node_id: int = CONTROLLER_ID
    inter_broker_listener: str = "PLAINTEXT"
    log_level: str = "INFO"  # the migration driver's transitions (DUAL_WRITE) are INFO lines

    @property
    def voters(self) -> str:
        return f"{self.node_id}@127.0.0.1:{self.port}"

    @property
    def controller_bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _log_opts(self) -> list[str]:
        assert self.workdir is not None
        cfg = self.workdir / "log4j.properties"
        if not cfg.exists():
            cfg.write_text(LOG4J1.format(level=self.log_level, log=self.workdir / "server.log"))
        return [f"-Dlog4j.configuration=file:{cfg}"]

    def _props(self) -> dict[str, str]:
        assert self.workdir is not None
        if not self.port:
            self._choose_port("port")
        return {
            "process.roles": "controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": f"CONTROLLER://127.0.0.1:{self.port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": self.zookeeper,
            "inter.broker.listener.name": self.inter_broker_listener,
            "log.dirs": str(self.workdir / "logs"),
        }

    def _prepare(self) -> None:
        assert self.workdir is not None
        if (self.workdir / "logs" / "meta.properties").exists():
            return
        cmd = self.java(
            "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(self.workdir / "server.properties")
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")

    def _wait_ready(self, timeout: float) -> None:
        """A controller answers no describe: its port open is enough (the migration is waited for separately)."""

    def log_text(self) -> str:
        p = (self.workdir or Path(".")) / "server.log"
        return p.read_text(errors="replace") if p.exists() else ""


def migrating_broker_props(controller: MigrationController) -> dict[str, str]:
    """What a ZooKeeper-mode broker adds to enter migration mode (Kafka 3.9 docs/ops.html)."""
    return {
        "zookeeper.metadata.migration.enable": "true",
        "controller.quorum.voters": controller.voters,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.protocol.version": MIGRATION_LINE,
    }


@dataclass
class ZkMigration:
    """ZooKeeper (given: ``zk_connect`` is ``host:port``) with a chroot of its own, a KRaft controller in migration
    mode and one ZooKeeper-mode broker with the migration enabled. :meth:`start` returns once the migration has
    copied ZooKeeper's metadata and the controller writes both ways (dual-write)."""

    zk_connect: str
    chroot: str = field(default_factory=lambda: f"/migration-{uuid.uuid4().hex[:8]}")
    heap: str = "-Xmx320m"
    controller: MigrationController | None = None
    broker: ZkKafkaServer | None = None
    cluster_id: str = field(default_factory=new_cluster_id)
    #: the migration znodes once the controller is up and before any broker has joined (Kafka's own bytes)
    before_brokers: dict[str, bytes | None] = field(default_factory=dict)

    @property
    def zookeeper(self) -> str:
        """The connect string brokers and kquotactl use (with the chroot)."""
        return f"{self.zk_connect}{self.chroot}"

    @property
    def bootstrap(self) -> str:
        assert self.broker is not None
        return self.broker.bootstrap

    @property
    def controller_bootstrap(self) -> str:
        assert self.controller is not None
        return self.controller.controller_bootstrap

    def kazoo(self, chroot: bool = True) -> Any:
        """A kazoo client (untyped) on the chroot, or on the server's root."""
        from kazoo.client import KazooClient

        client = KazooClient(self.zookeeper if chroot else self.zk_connect)
        client.start(timeout=30)
        return client

    def start(
        self,
        timeout: float = 240.0,
        seed: Callable[[str], None] | None = None,
        preparing: Callable[[str], None] | None = None,
    ) -> ZkMigration:
        """Start it all and wait for dual-write. ``seed(zookeeper)`` runs first, on the ZooKeeper cluster before
        any KRaft controller exists: the quotas an operator had before migrating (the migration copies them).
        ``preparing(zookeeper)`` runs once the controller has registered ``/migration``, before the broker joins."""
        deadline = time.monotonic() + timeout
        zk = self.kazoo(chroot=False)
        try:
            # The ZooKeeper cluster's id, as its first broker would write it (ClusterIdZNode): the controller is
            # formatted with it (a migration needs the same cluster id on both sides).
            zk.ensure_path(self.chroot + "/cluster")
            zk.create(self.chroot + "/cluster/id", json.dumps({"version": "1", "id": self.cluster_id}).encode())
        finally:
            zk.stop()
            zk.close()
        if seed is not None:
            seed(self.zookeeper)
        self.controller = MigrationController(
            zookeeper=self.zookeeper, cluster_id=self.cluster_id, port=free_port(), jvm_opts=[self.heap]
        )
        try:
            self.controller.start(timeout)
            self.before_brokers = self._wait_znode("/migration", max(deadline - time.monotonic(), 30.0))
            if preparing is not None:
                preparing(self.zookeeper)
            self.broker = ZkKafkaServer(
                zookeeper=self.zookeeper, extra_props=migrating_broker_props(self.controller), jvm_opts=[self.heap]
            )
            self.broker.start(max(deadline - time.monotonic(), 30.0))
            self.wait_migrated(max(deadline - time.monotonic(), 30.0))
        except BaseException:
            self.close()
            raise
        return self

    def znodes(self) -> dict[str, bytes | None]:
        """``/controller``, ``/controller_epoch`` and ``/migration`` as they are now (None: absent)."""
        zk = self.kazoo()
        try:
            out: dict[str, bytes | None] = {}
            for p in ("/controller", "/controller_epoch", "/migration"):
                got = zk.exists(p)
                out[p] = zk.get(p)[0] if got is not None else None
            return out
        finally:
            zk.stop()
            zk.close()

    def _wait_znode(self, path: str, timeout: float) -> dict[str, bytes | None]:
        """Until ``path`` exists: the znodes then."""
        assert self.controller is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.controller.running:
            seen = self.znodes()
            if seen[path] is not None:
                return seen
            time.sleep(0.2)
        raise RuntimeError(f"no {path} znode after {timeout:g}s:\n{self.controller.log_tail(60)}")

    def wait_migrated(self, timeout: float = 180.0) -> None:
        """Until the controller holds ``/controller``, ``/migration`` records the migrated metadata offset, and the
        controller's migration driver is in DUAL_WRITE (it has told the brokers it is their controller)."""
        assert self.controller is not None
        deadline = time.monotonic() + timeout
        seen: dict[str, bytes | None] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                seen = self.znodes()
                migration = json.loads(seen["/migration"] or b"null")
                controller = json.loads(seen["/controller"] or b"null")
                if (
                    migration
                    and migration["kraft_metadata_offset"] >= 0
                    and controller
                    and controller.get("kraftControllerEpoch", -1) > 0
                    and DUAL_WRITE_LINE in self.controller.log_text()
                ):
                    return
            if not self.controller.running:
                break
            time.sleep(0.5)
        raise RuntimeError(
            f"the migration did not complete in {timeout:g}s (znodes {seen}):\n{self.controller.log_tail(60)}"
        )

    def close(self) -> None:
        for server in (self.broker, self.controller):
            if server is not None:
                server.close()
        with contextlib.suppress(Exception):
            zk = self.kazoo(chroot=False)
            try:
                zk.delete(self.chroot, recursive=True)
            finally:
                zk.stop()
                zk.close()

    def __enter__(self) -> ZkMigration:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
