"""Real brokers (KRaft, the newest; ZooKeeper-mode 3.9) with ``kafka.request.logger`` at DEBUG, a real producer over a
produce quota set by kquotactl and a real consumer (confluent-kafka); ``impact run --input-format kafka-request-log``
on the broker's log finds the quota-id and the bytes, on both engines (the same report). On 4.4 a custom principal
builder makes every principal a ``ServiceAccount``: the broker applies the user quota to the principal's name, and
impact finds the same quota-id.

Tolerance: the log gives record-batch sizes, which include the batch and record framing (61 bytes a batch, a few
bytes a record) on top of the payload, so produced and fetched bytes are asserted within [payload, payload × 1.15].
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from fixtures_kafka import RequestLogBroker
from kquotactl.core.entities import Entity
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact.engine import Runner
from kquotactl.impact.replay import Window
from kquotactl.testing.kafka import KRaftKafkaServer, ZkKafkaServer
from kquotactl.testing.versions import NEWEST, RELEASES, SUITES, jars_of

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

LOG4J1_REQUEST_LOG = """log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File={server}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.R=org.apache.log4j.FileAppender
log4j.appender.R.File={requests}
log4j.appender.R.layout=org.apache.log4j.PatternLayout
log4j.appender.R.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=DEBUG, R
log4j.additivity.kafka.request.logger=false
"""

LIMIT = 100_000  # bytes/s for (user, rl-producer)
MESSAGES, SIZE = 1500, 1000  # 1.5 MB in 16 kB batches: about 15 s at the limit, well past it without a quota


@dataclass
class ZkRequestLogBroker(ZkKafkaServer):
    """The harness's ZooKeeper-mode broker (2.8, 3.9), the request log in ``workdir/kafka-request.log`` (log4j 1)."""

    def _log_opts(self) -> list[str]:
        assert self.workdir is not None
        cfg = self.workdir / "log4j.properties"
        logs = {"server": self.workdir / "server.log", "requests": self.workdir / "kafka-request.log"}
        cfg.write_text(LOG4J1_REQUEST_LOG.format(**logs))
        return [f"-Dlog4j.configuration=file:{cfg}", "-Duser.timezone=UTC"]


def _traffic(broker: KRaftKafkaServer | ZkKafkaServer, producer_conf: dict[str, str], topic: str) -> None:
    from confluent_kafka import Consumer, Producer

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "rl-producer",
            "compression.type": "none",
            "linger.ms": "5",
            "batch.size": "16384",
            **producer_conf,
        }
    )
    for i in range(MESSAGES):
        producer.produce(topic, b"x" * SIZE, key=str(i).encode())
        producer.poll(0)
    assert producer.flush(120) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": "rl-consumer",
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 120
    while got < MESSAGES and time.monotonic() < deadline:
        m = consumer.poll(1.0)
        if m is not None and m.error() is None:
            got += 1
    consumer.close()
    assert got == MESSAGES


def _replay_broker_log(
    spark: Any,
    tmp_path: Path,
    broker: KRaftKafkaServer | ZkKafkaServer,
    user: str,
    producer_conf: Callable[[], dict[str, str]],
) -> None:
    """Start ``broker``, set (user, rl-producer)'s produce quota with kquotactl, drive traffic, stop it, and replay
    its request log on both engines."""
    assert broker.workdir is not None
    log = broker.workdir / "kafka-request.log"
    try:
        broker.start()
        r = run_cli(
            "--bootstrap-server",
            broker.bootstrap,
            "alter",
            "--user",
            user,
            "--client-id",
            "rl-producer",
            "--add-config",
            f"producer_byte_rate={LIMIT}",
        )
        assert r.exit_code == 0, r.stderr
        time.sleep(2)  # brokers apply quota changes asynchronously
        _traffic(broker, producer_conf(), f"rl-{uuid.uuid4().hex[:8]}")
        broker.stop()  # the log is complete; the JVM's cores go to Spark
        logs = tmp_path / "logs"
        logs.mkdir()
        log = Path(shutil.copy(log, logs / log.name))
    finally:
        broker.close()
    index = QuotaIndex({Entity(user=user, client_id="rl-producer"): {"producer_byte_rate": LIMIT}})
    reports = {}
    for engine in ("local", "spark"):
        runner = Runner(str(log), engine, Window(), "local[2]", input_format="kafka-request-log")
        reports[engine] = runner.analyze(index).report
        assert runner.log_stats is not None and runner.log_stats.malformed == 0
    assert reports["local"] == reports["spark"]
    rep = reports["local"]
    traffic = rep["summary"]["traffic"]
    payload = MESSAGES * SIZE
    assert payload <= traffic["producer_byte_rate"]["usage"] <= payload * 1.15
    assert payload <= traffic["consumer_byte_rate"]["usage"] <= payload * 1.15
    (row,) = [r for r in rep["quota_ids"] if r["key"] == "producer_byte_rate"]
    assert row["quota_id"] == {"user": user, "client-id": "rl-producer"}
    assert (row["level"], row["limit"]) == (1, LIMIT)
    # The producer ran against the quota: its replayed rate reached it, and no further than a burst can.
    assert LIMIT * 0.5 <= row["max_rate"] <= LIMIT * 3
    # What the broker applied (the top-level throttleTimeMs of the producer's Produce lines), next to the replay.
    applied = []
    for line in log.read_text().splitlines():
        doc = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
        if doc["requestHeader"]["clientId"] == "rl-producer" and doc["requestHeader"]["requestApiKey"] == 0:
            applied.append(doc["throttleTimeMs"])
    print(
        f"\n{type(broker).__name__}: produced {traffic['producer_byte_rate']['usage']:.0f} B for a {payload} B payload;"
        f" broker throttled {sum(1 for a in applied if a)}/{len(applied)} produce requests, {sum(applied)} ms in all,"
        f" max {max(applied)} ms; replay: {row['seconds_throttled']} s throttled, {row['total_throttle_ms']} ms in all,"
        f" max {row['max_throttle_ms']} ms, max rate {row['max_rate']:.0f} B/s"
    )
    assert sum(applied) > 0  # the quota kquotactl set was in force on the broker


REQUEST_LOG_LINES = SUITES["request-log-broker"]


@pytest.mark.parametrize("version", [v for v in REQUEST_LOG_LINES if not RELEASES[v].zookeeper])
def test_request_log_of_a_kraft_broker(spark, tmp_path: Path, version: str) -> None:
    broker = RequestLogBroker(jars_name=jars_of(version), workdir=tmp_path / "broker")
    broker.workdir.mkdir()

    def sasl() -> dict[str, str]:  # after start(): the SASL listener's port is picked then
        return {
            "bootstrap.servers": broker.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": broker.scram_user,
            "sasl.password": broker.scram_password,
        }

    _replay_broker_log(spark, tmp_path, broker, broker.scram_user, sasl)


@pytest.mark.zookeeper
@pytest.mark.parametrize("version", [v for v in REQUEST_LOG_LINES if RELEASES[v].zookeeper])
def test_request_log_of_a_zookeeper_mode_broker(spark, zk_server, tmp_path: Path, version: str) -> None:
    chroot = f"{zk_server.connect}/rl-{uuid.uuid4().hex[:8]}"
    broker = ZkRequestLogBroker(zookeeper=chroot, jars_name=jars_of(version), workdir=tmp_path / "b")
    broker.workdir.mkdir()
    _replay_broker_log(spark, tmp_path, broker, "ANONYMOUS", dict)


# A principal builder of another type than User (as custom builders have): Kafka's default builder's principal,
# retyped. Extending DefaultKafkaPrincipalBuilder keeps its KafkaPrincipalSerde, which KRaft forwarding needs.
SERVICE_ACCOUNT_BUILDER = """package kq;
import org.apache.kafka.common.security.auth.AuthenticationContext;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder;
public class ServiceAccountPrincipalBuilder extends DefaultKafkaPrincipalBuilder {
    public ServiceAccountPrincipalBuilder() { super(null, null); }
    @Override public KafkaPrincipal build(AuthenticationContext context) {
        return new KafkaPrincipal("ServiceAccount", super.build(context).getName());
    }
}
"""


@dataclass
class ServiceAccountBroker(RequestLogBroker):
    """A 4.4 request-log broker whose principals are ``ServiceAccount:<name>`` (classes compiled into ``classes``)."""

    classes: Path | None = None

    def java(self, main: str, *args: str, jvm: list[str] | None = None) -> list[str]:
        cmd = super().java(main, *args, jvm=jvm)
        i = cmd.index("-cp") + 1
        cmd[i] = f"{self.classes}:{cmd[i]}"
        return cmd


def test_request_log_of_a_kraft_44_broker_with_a_custom_principal_type(spark, tmp_path: Path) -> None:
    from kquotactl.testing.servers import classpath, fetch_jars

    src = tmp_path / "src" / "kq" / "ServiceAccountPrincipalBuilder.java"
    src.parent.mkdir(parents=True)
    src.write_text(SERVICE_ACCOUNT_BUILDER)
    classes = tmp_path / "classes"
    cp = classpath(fetch_jars(jars_of(NEWEST)))
    subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes), str(src)], check=True, capture_output=True)
    broker = ServiceAccountBroker(
        jars_name=jars_of(NEWEST),
        workdir=tmp_path / "broker",
        classes=classes,
        extra_props={"principal.builder.class": "kq.ServiceAccountPrincipalBuilder"},
    )
    broker.workdir.mkdir()  # type: ignore[union-attr]

    def sasl() -> dict[str, str]:
        return {
            "bootstrap.servers": broker.sasl_bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": broker.scram_user,
            "sasl.password": broker.scram_password,
        }

    # The quota is set for user admin; the broker throttles ServiceAccount:admin by it, and impact finds it.
    _replay_broker_log(spark, tmp_path, broker, broker.scram_user, sasl)
    lines = (tmp_path / "logs" / "kafka-request.log").read_text().splitlines()
    principals = {json.loads(x.split("Completed request:", 1)[1].rsplit(" (", 1)[0])["principal"] for x in lines}
    assert f"ServiceAccount:{broker.scram_user}" in principals and not any(p.startswith("User:") for p in principals)


def _request_time(exporter: str, client_id: str) -> float:
    """The broker's request-time sensor (% of a thread over the quota window) of a client-id, from the exporter."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"http://{exporter}/metrics", timeout=10) as r:
        text = r.read().decode()
    found = re.findall(rf'kafka_quota_request_time\{{[^}}]*client_id="{client_id}"[^}}]*\}} ([0-9.eE+-]+)', text)
    assert found, f"no request-time sensor for {client_id}"
    return float(found[0])


def test_acks_0_produce_time_is_exempt_on_a_44_broker_and_in_impact(tmp_path: Path) -> None:
    """KafkaApis.handleProduceRequest records no request time for acks=0 (sendNoOpResponseExemptThrottle): the 4.4
    broker's request-time sensor of an acks=0 producer stays near 0 while an acks=1 producer's grows, and impact
    gives the acks=0 Produce lines no request time although the log shows their handler time."""
    from confluent_kafka import Producer

    from kquotactl.impact import readers
    from kquotactl.testing.observe import jmx_agent_opts
    from kquotactl.testing.servers import free_port

    port = free_port()
    broker = RequestLogBroker(jars_name=jars_of(NEWEST), workdir=tmp_path / "broker", jvm_opts=jmx_agent_opts(port))
    broker.workdir.mkdir()  # type: ignore[union-attr]
    try:
        broker.start()
        for client in ("rl-acks0", "rl-acks1"):  # a request quota makes the broker keep the client's sensors
            r = run_cli("--bootstrap-server", broker.bootstrap, "alter", "--client-id", client, "--add-config",
                        "request_percentage=10000")  # fmt: skip
            assert r.exit_code == 0, r.stderr
        time.sleep(2)
        started = time.monotonic()
        for client, acks in (("rl-acks0", "0"), ("rl-acks1", "1")):
            p = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client, "acks": acks, "linger.ms": 0})
            p.produce("warm-up", b"x")
            p.flush(30)
            for _ in range(300):  # one request each: linger 0, flushed one by one
                p.produce("rl-acks", b"x" * 1000)
                p.flush(30)
        seen = {client: _request_time(f"127.0.0.1:{port}", client) for client in ("rl-acks0", "rl-acks1")}
        elapsed = time.monotonic() - started
        broker.stop()
        log = Path(shutil.copy(tmp_path / "broker" / "kafka-request.log", tmp_path / "kafka-request.log"))
    finally:
        broker.close()
    table, _ = readers.read_request_log([str(log)])
    rows = table.to_pylist()
    produce0 = [r for r in rows if r["client_id"] == "rl-acks0" and r["produce_bytes"]]
    produce1 = [r for r in rows if r["client_id"] == "rl-acks1" and r["produce_bytes"]]
    logged0 = 0.0
    for line in log.read_text().splitlines():
        doc = json.loads(line.split("Completed request:", 1)[1].rsplit(" (", 1)[0])
        if doc["requestHeader"]["clientId"] == "rl-acks0" and doc["requestHeader"]["requestApiKey"] == 0:
            logged0 += doc["localTimeMs"]
    print(f"\nbroker request-time %: {seen} after {elapsed:.1f} s; acks=0 Produce time logged: {logged0:.1f} ms")
    assert len(produce0) >= 300 and len(produce1) >= 300
    assert all(r["request_time_ms"] == 0 for r in produce0) and logged0 > 0
    assert sum(r["request_time_ms"] for r in produce1) > 0
    # The sensor is a rate in % of a thread over at most the 11 s window (the default quota.window.*): all the time
    # it holds is at most rate / 100 × 11 s. All the traffic fell inside one window; the acks=0 producer's sensor holds
    # less than its Produce handler time alone (so the broker did not count it), the acks=1 one's more.
    assert elapsed < 10, f"traffic took {elapsed:.1f} s: longer than one quota window"
    held = {client: rate / 100 * 11_000 for client, rate in seen.items()}
    assert held["rl-acks0"] < logged0 and seen["rl-acks1"] > seen["rl-acks0"]
