"""Real Apache Kafka brokers for tests and benchmarks, run from Maven Central jars with the machine's Java.

- :class:`ZkKafkaServer`: Kafka 3.9 in ZooKeeper mode, pointed at a (test) ZooKeeper under a chroot.
- ``ZkKafkaServer(jars_name="kafka-2.5", supports_quota_api=False)``: Kafka 2.5, the last release without
  the client-quota admin API, for the capability check.
- :class:`KRaftKafkaServer`: Kafka 4.4 (the newest: :mod:`kquotactl.testing.versions`), one process that is both
  broker and controller, with a PLAINTEXT
  listener and a SASL_PLAINTEXT listener (SCRAM-SHA-256/512, with a SCRAM user created when the log
  directory is formatted, and PLAIN for the same user/password); optionally a mutual-TLS SSL listener.
  ``roles="broker"`` or ``"controller"``: one role alone.
- :class:`KRaftCluster`: three combined nodes in one quorum; :class:`KRaftSplitCluster`: a controller alone and two
  brokers, the second's controller link through a proxy a test cuts (a fenced broker that still runs).

Both listen on 127.0.0.1 only, on free ports, with data in a temporary directory removed on close.
Start-up takes 10-20 s on a busy 2-core machine, so fixtures start each broker once per session.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kquotactl.testing.servers import classpath, fetch_jars, free_port, stop_process_group
from kquotactl.testing.versions import SUITES, jars_of

if TYPE_CHECKING:
    from kquotactl.testing.proxy import TcpProxy

JVM_OPTS = ["-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-Djava.awt.headless=true"]

LOG4J1 = """log4j.rootLogger={level}, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File={log}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{{ISO8601}} %-5p %c{{1}} - %m%n
"""

LOG4J2 = """Configuration:
  Appenders:
    File:
      name: F
      fileName: "{log}"
      PatternLayout:
        pattern: "%d{{ISO8601}} %-5p %c{{1}} - %m%n"
  Loggers:
    Root:
      level: {level}
      AppenderRef:
        ref: F
"""

BROKER_DEFAULTS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "log.flush.interval.messages": "1000000",
}


def new_cluster_id(random_uuid: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A KRaft cluster id as Kafka's ``Uuid.randomUuid`` makes them: 22 url-safe base64 characters, never a leading '-'.

    kafka-storage parses ``-t -abc…`` as a missing argument; Kafka redraws such ids, so do we.
    """
    while True:
        candidate = base64.urlsafe_b64encode(random_uuid().bytes).decode()[:22]
        if not candidate.startswith("-"):
            return candidate


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float, what: str, tail: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{tail()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not open port {port} within {timeout:g}s:\n{tail()}")


@dataclass
class _KafkaBase:
    jars_name: str = ""
    log_level: str = "WARN"
    extra_props: dict[str, str] = field(default_factory=dict)
    workdir: Path | None = None
    port: int = 0
    supports_quota_api: bool = True  # False for brokers older than 2.6 (ready = handshake answered)
    jvm_opts: list[str] = field(default_factory=list)  # extra JVM arguments of the broker (e.g. a -javaagent)
    _proc: subprocess.Popen[bytes] | None = None
    _chosen_ports: list[str] = field(default_factory=list)  # the port attributes free_port() filled in

    def _choose_port(self, attr: str) -> None:
        """Fill in a port left at 0 with a free one, remembered so a lost race can choose again."""
        if not getattr(self, attr):
            setattr(self, attr, free_port())
            self._chosen_ports.append(attr)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def jars(self) -> Path:
        return fetch_jars(self.jars_name)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def java(self, main: str, *args: str, jvm: list[str] | None = None) -> list[str]:
        """A command line running ``main`` from this broker's jars (also used for ConfigCommand)."""
        assert self.workdir is not None
        return ["java", *JVM_OPTS, *self._log_opts(), *(jvm or []), "-cp", classpath(self.jars), main, *args]

    def _log_opts(self) -> list[str]:
        raise NotImplementedError

    def _props(self) -> dict[str, str]:
        raise NotImplementedError

    def _prepare(self) -> None:
        """Anything to do between writing server.properties and starting (KRaft: format)."""

    def start(self, timeout: float = 120.0, attempts: int = 3) -> _KafkaBase:
        """Launch and wait; a port chosen free that another process took before the broker bound it (any client's
        outgoing connection can) is chosen again, up to ``attempts`` launches."""
        for attempt in range(1, attempts + 1):
            self.launch()
            try:
                self.wait_started(timeout)
                return self
            except RuntimeError:
                lost_race = self._chosen_ports and "Address already in use" in self.log_tail(200)
                if attempt == attempts or not lost_race:
                    raise
                self.close()
                for attr in self._chosen_ports:
                    setattr(self, attr, 0)
                self._chosen_ports.clear()
        raise AssertionError("unreachable")

    def launch(self) -> None:
        """Write the configuration, format if needed, and start the process without waiting for it."""
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"kquotactl-{self.jars_name}-"))
        props = {**BROKER_DEFAULTS, **self._props(), **self.extra_props}
        (self.workdir / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self._prepare()
        out = open(self.workdir / "stdout.log", "ab")  # noqa: SIM115 - handed to the child process
        cmd = self.java("kafka.Kafka", str(self.workdir / "server.properties"), jvm=self.jvm_opts)
        self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_started(self, timeout: float = 120.0) -> None:
        """Wait until the launched broker's port is open and it answers a describe."""
        assert self._proc is not None, "launch() first"
        _wait_port(self.port, self._proc, timeout, f"Kafka ({self.jars_name})", self.log_tail)
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        """The port opens before the broker serves requests: wait until a describe answers."""
        from kquotactl.backends.kafka.quotas import AdminBackend
        from kquotactl.core.errors import QuotaError

        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                with AdminBackend.connect(self.bootstrap, connect_timeout=5, timeout=5) as b:
                    if self.supports_quota_api:
                        b.describe()
                    if b.broker_ids():  # a ZooKeeper-mode broker lists itself once the controller told it
                        return
                    last = QuotaError("the broker does not list itself in its metadata yet")
                time.sleep(0.5)
            except QuotaError as e:
                last = e
                if self._proc is not None and self._proc.poll() is not None:
                    break
                time.sleep(0.5)
        raise RuntimeError(f"Kafka ({self.jars_name}) not ready in {timeout:g}s ({last}):\n{self.log_tail()}")

    def log_tail(self, n: int = 40) -> str:
        parts = []
        for name in ("stdout.log", "server.log"):
            p = (self.workdir or Path(".")) / name
            if p.exists():
                parts.append("\n".join(p.read_text(errors="replace").splitlines()[-n:]))
        return "\n".join(parts)

    def stop(self) -> None:
        if self._proc is None:
            return
        stop_process_group(self._proc)
        self._proc = None

    def close(self) -> None:
        self.stop()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> _KafkaBase:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class ZkKafkaServer(_KafkaBase):
    """Kafka 3.9 in ZooKeeper mode: ``zookeeper`` is ``host:port/chroot`` (the chroot is created by Kafka)."""

    zookeeper: str = ""
    jars_name: str = jars_of(SUITES["zk-broker"][0])

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
            "broker.id": "0",
            "zookeeper.connect": self.zookeeper,
            "zookeeper.connection.timeout.ms": "30000",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.workdir / "logs"),
        }


@dataclass
class KRaftKafkaServer(_KafkaBase):
    """Kafka in KRaft mode (the newest release: testing.versions), combined broker+controller, PLAINTEXT +
    SASL_PLAINTEXT (SCRAM) listeners."""

    jars_name: str = jars_of(SUITES["kraft-broker"][0])
    controller_port: int = 0
    sasl_port: int = 0
    scram_user: str = "admin"
    scram_password: str = "admin-secret"
    # An SSL listener (mutual TLS) when set: PEM files for the broker's key store (key + chain) and trust store.
    ssl_keystore: Path | None = None
    ssl_truststore: Path | None = None
    ssl_port: int = 0
    cluster_id: str = field(default_factory=new_cluster_id)
    node_id: int = 1
    # ``controller.quorum.voters`` when this node is one of several (KRaftCluster); empty: a quorum of itself
    quorum_voters: str = ""
    # ``process.roles``: "broker" and "controller" alone are the nodes of a KRaftSplitCluster (a broker then has
    # no CONTROLLER listener and needs ``quorum_voters``; a controller has only that one)
    roles: str = "broker,controller"
    # a controller's second listener (CONTROLLER2) and the address it advertises there (a proxy in front of it);
    # a broker whose ``controller_listener`` is CONTROLLER2 reaches the controller only through that address:
    # the quorum hands each follower the leader's advertised endpoint of the follower's controller listener
    second_controller_port: int = 0
    second_controller_advertised: str = ""
    controller_listener: str = "CONTROLLER"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def controller_bootstrap(self) -> str:
        return f"127.0.0.1:{self.controller_port}"

    def _log_opts(self) -> list[str]:
        assert self.workdir is not None
        cfg = self.workdir / "log4j2.yaml"
        if not cfg.exists():
            cfg.write_text(LOG4J2.format(level=self.log_level, log=self.workdir / "server.log"))
        return [f"-Dlog4j2.configurationFile={cfg}"]

    def _props(self) -> dict[str, str]:
        assert self.workdir is not None
        if self.roles == "controller":
            return self._controller_props()
        for attr in ("port", "sasl_port") if self.roles == "broker" else ("port", "controller_port", "sasl_port"):
            if not getattr(self, attr):
                self._choose_port(attr)
        p, c, s = self.port, self.controller_port, self.sasl_port
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        listeners = f"PLAINTEXT://127.0.0.1:{p},CONTROLLER://127.0.0.1:{c},SASL_PLAINTEXT://127.0.0.1:{s}"
        advertised = f"PLAINTEXT://127.0.0.1:{p},SASL_PLAINTEXT://127.0.0.1:{s}"
        protocols = f"PLAINTEXT:PLAINTEXT,{self.controller_listener}:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
        ssl: dict[str, str] = {}
        if self.ssl_keystore is not None:
            if not self.ssl_port:
                self._choose_port("ssl_port")
            listeners += f",SSL://127.0.0.1:{self.ssl_port}"
            advertised += f",SSL://127.0.0.1:{self.ssl_port}"
            protocols += ",SSL:SSL"
            ssl = {
                "listener.name.ssl.ssl.keystore.type": "PEM",
                "listener.name.ssl.ssl.keystore.location": str(self.ssl_keystore),
                "listener.name.ssl.ssl.truststore.type": "PEM",
                "listener.name.ssl.ssl.truststore.location": str(self.ssl_truststore),
                "listener.name.ssl.ssl.client.auth": "required",
            }
        if self.roles == "broker":
            listeners = listeners.replace(f",CONTROLLER://127.0.0.1:{c}", "")
        return {
            "process.roles": self.roles,
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.quorum_voters or f"{self.node_id}@127.0.0.1:{c}",
            "listeners": listeners,
            "advertised.listeners": advertised,
            "listener.security.protocol.map": protocols,
            "controller.listener.names": self.controller_listener,
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": scram,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": scram,
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{self.scram_user}="{self.scram_password}";'
            ),
            "log.dirs": str(self.workdir / "logs"),
            **ssl,
        }

    def _controller_props(self) -> dict[str, str]:
        """A controller alone (``process.roles=controller``): its CONTROLLER listener is its only port."""
        assert self.workdir is not None
        if not self.port:
            self._choose_port("port")
        self.controller_port = self.port
        listeners, advertised, names = f"CONTROLLER://127.0.0.1:{self.port}", "", "CONTROLLER"
        if self.second_controller_port:
            listeners += f",CONTROLLER2://127.0.0.1:{self.second_controller_port}"
            advertised = f"CONTROLLER://127.0.0.1:{self.port},CONTROLLER2://{self.second_controller_advertised}"
            names += ",CONTROLLER2"
        return {
            "process.roles": "controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.quorum_voters or f"{self.node_id}@127.0.0.1:{self.port}",
            "listeners": listeners,
            **({"advertised.listeners": advertised} if advertised else {}),
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,CONTROLLER2:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "controller.listener.names": names,
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.workdir / "logs"),
        }

    def _wait_ready(self, timeout: float) -> None:
        """A controller answers no describe (its port open is enough); a broker is ready once it describes."""
        if self.roles != "controller":
            super()._wait_ready(timeout)

    def _prepare(self) -> None:
        assert self.workdir is not None
        if (self.workdir / "logs" / "meta.properties").exists():
            return  # formatted before: a restart keeps the data
        cmd = self.java(
            "kafka.tools.StorageTool",
            "format",
            "-t",
            self.cluster_id,
            "-c",
            str(self.workdir / "server.properties"),
            "--add-scram",
            f"SCRAM-SHA-256=[name={self.scram_user},password={self.scram_password}]",
            "--add-scram",
            f"SCRAM-SHA-512=[name={self.scram_user},password={self.scram_password}]",
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


@dataclass
class KRaftCluster:
    """Three Kafka 4.x KRaft nodes, each broker *and* controller, in one three-voter quorum: a real 3-broker
    cluster for the cheapest price (three JVMs; a separate controller would be a fourth). With three voters,
    one node can be stopped (:meth:`stop_broker`) and the other two keep a quorum and serve; :meth:`start_broker`
    brings it back with its data. The nodes are started together (a quorum needs a majority to elect a leader).
    """

    size: int = 3
    log_level: str = "WARN"
    heap: str = "-Xmx256m"
    #: more JVM arguments of node i (its index), e.g. a JMX exporter agent on a port of its own
    node_jvm_opts: list[list[str]] = field(default_factory=list)
    nodes: list[KRaftKafkaServer] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        """Every running node's PLAINTEXT address, comma-separated (clients pick any)."""
        return ",".join(n.bootstrap for n in self.nodes if n.running)

    def start(self, timeout: float = 180.0) -> KRaftCluster:
        cluster_id = new_cluster_id()
        controller_ports = [free_port() for _ in range(self.size)]
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(controller_ports))
        self.nodes = [
            KRaftKafkaServer(
                node_id=i + 1,
                controller_port=p,
                quorum_voters=voters,
                cluster_id=cluster_id,
                log_level=self.log_level,
                jvm_opts=[self.heap, *(self.node_jvm_opts[i] if i < len(self.node_jvm_opts) else [])],
                # the log cleaner's 128 MiB default dedupe buffer does not fit a small heap beside a large
                # metadata image (a restarted node died of it with 10,000 entities)
                extra_props={"controlled.shutdown.enable": "true", "log.cleaner.dedupe.buffer.size": str(16 << 20)},
            )
            for i, p in enumerate(controller_ports)
        ]
        try:
            for n in self.nodes:
                n.launch()
            for n in self.nodes:
                n.wait_started(timeout)
            self.wait_brokers(self.size, timeout)
        except BaseException:
            self.close()
            raise
        return self

    def broker_ids(self) -> list[int]:
        """The broker ids the cluster's metadata lists as alive (DescribeCluster), asked of a running node."""
        from kquotactl.backends.kafka.quotas import AdminBackend

        with AdminBackend.connect(self.bootstrap, connect_timeout=5, timeout=10) as b:
            return sorted(b.broker_ids())

    def wait_brokers(self, count: int, timeout: float = 60.0) -> None:
        """Wait until the metadata lists ``count`` alive brokers (a stopped broker is fenced, then dropped)."""
        deadline = time.monotonic() + timeout
        seen: list[int] = []
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                seen = self.broker_ids()
                if len(seen) == count:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"the cluster lists brokers {seen}, not {count} of them, after {timeout:g}s")

    def stop_broker(self, index: int) -> None:
        """Stop one node (SIGTERM: a controlled shutdown), and wait until the others list it no more."""
        self.nodes[index].stop()
        self.wait_brokers(sum(n.running for n in self.nodes))

    def start_broker(self, index: int, timeout: float = 120.0) -> None:
        """Start a stopped node again (same ports and data), and wait until all running nodes are listed."""
        self.nodes[index].start(timeout)
        self.wait_brokers(sum(n.running for n in self.nodes), timeout)

    def active_controller(self) -> int:
        """The index in :attr:`nodes` of the active controller: the metadata quorum's leader (DescribeQuorum,
        asked of a running node, as ``kafka-metadata-quorum describe --status`` does)."""
        from kquotactl.backends.kafka.quotas import AdminBackend

        with AdminBackend.connect(self.bootstrap, connect_timeout=5, timeout=10) as b:
            q = b.wire.quorum()
        if q is None or q.leader < 0:
            raise RuntimeError(f"no active controller in the quorum ({q})")
        return next(i for i, n in enumerate(self.nodes) if n.node_id == q.leader)

    def kill(self, index: int) -> None:
        """SIGKILL one node (no controlled shutdown, no goodbye to the quorum); :meth:`start_broker` restarts it."""
        proc = self.nodes[index]._proc
        assert proc is not None, f"node {index} is not running"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.nodes[index]._proc = None

    def close(self) -> None:
        """Stop every node at once (one after the other, the last ones would lose their quorum and wait for it
        until SIGKILL), and remove their data."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(len(self.nodes), 1)) as pool:
            list(pool.map(lambda n: n.close(), self.nodes))

    def __enter__(self) -> KRaftCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class KRaftSplitCluster:
    """One KRaft controller alone (``process.roles=controller``) and two brokers (``process.roles=broker``), the
    second broker's every connection to the controller (metadata fetches, heartbeats, forwarded requests) through
    a :class:`~kquotactl.testing.proxy.TcpProxy` a test can :meth:`cut` and :meth:`restore`. Cut, that broker keeps
    running and answering clients from its last metadata image while the controller fences it: the
    fenced-but-running broker of ``tests/test_reliability_fenced.py``."""

    log_level: str = "WARN"
    heap: str = "-Xmx256m"
    #: the controller fences a broker whose heartbeats stop for this long (Kafka's default is 9 s)
    session_ms: int = 6000
    controller: KRaftKafkaServer | None = None
    brokers: list[KRaftKafkaServer] = field(default_factory=list)
    proxy: TcpProxy | None = None

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def start(self, timeout: float = 180.0) -> KRaftSplitCluster:
        from kquotactl.testing.proxy import TcpProxy

        cluster_id = new_cluster_id()
        port, second = free_port(), free_port()
        self.proxy = TcpProxy(target=second).start()
        heartbeat = {"broker.heartbeat.interval.ms": str(max(self.session_ms // 6, 500))}

        def node(node_id: int, roles: str, **kw: Any) -> KRaftKafkaServer:
            return KRaftKafkaServer(node_id=node_id, roles=roles, cluster_id=cluster_id, log_level=self.log_level,
                                    jvm_opts=[self.heap], **kw)  # fmt: skip

        self.controller = node(
            1, "controller", port=port, second_controller_port=second, second_controller_advertised=self.proxy.address,
            extra_props={"broker.session.timeout.ms": str(self.session_ms)},
        )  # fmt: skip
        self.brokers = [
            node(2, "broker", quorum_voters=f"1@127.0.0.1:{port}", extra_props=heartbeat),
            node(3, "broker", quorum_voters=f"1@{self.proxy.address}", controller_listener="CONTROLLER2",
                 extra_props=heartbeat),
        ]  # fmt: skip
        try:
            self.controller.start(timeout)
            for b in self.brokers:
                b.launch()
            for b in self.brokers:
                b.wait_started(timeout)
        except BaseException:
            self.close()
            raise
        return self

    def cut(self) -> None:
        """Cut the second broker off from the controller (its open connections reset, new ones refused)."""
        assert self.proxy is not None
        self.proxy.cut()

    def restore(self) -> None:
        assert self.proxy is not None
        self.proxy.restore()

    def close(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        if self.proxy is not None:
            self.proxy.restore()  # a broker cut off would wait for its controlled shutdown until SIGKILL
        with ThreadPoolExecutor(max_workers=max(len(self.brokers), 1)) as pool:
            list(pool.map(lambda n: n.close(), self.brokers))
        if self.controller is not None:
            self.controller.close()  # last: the brokers' controlled shutdowns ask it
        if self.proxy is not None:
            self.proxy.close()

    def __enter__(self) -> KRaftSplitCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
