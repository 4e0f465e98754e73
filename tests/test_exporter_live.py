"""``kquotactl exporter`` against real parts: a real ZooKeeper (the change watch; an outage and its recovery), a
KRaft 4.x broker and a ZooKeeper-mode 3.9 broker with the JMX exporter agent and real producers over their quota
(the exporter run as the CLI, in a subprocess, scraped by a real Prometheus with the shipped rules; the broker
stopped and started again), and SIGTERM.

/metrics is always read with prometheus_client's parser."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import run_cli
from fixtures_exporter_contract import rules_without_for

LIMIT, UP = "kquotactl_quota_limit", "kquotactl_exporter_up"
CONFIGURED = "kquotactl_quota_configured"


def read_metrics(url: str) -> dict[str, dict[frozenset[tuple[str, str]], float]]:
    """family/sample name -> {labels: value}, as prometheus_client's parser reads the exposition."""
    out: dict[str, dict[frozenset[tuple[str, str]], float]] = {}
    for family in text_string_to_metric_families(requests.get(url + "/metrics", timeout=10).text):
        for s in family.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def value(url: str, name: str, **labels: str) -> float | None:
    """The one sample of ``name`` whose labels include ``labels`` (None: no such series)."""
    found = [v for k, v in read_metrics(url).get(name, {}).items() if set(labels.items()) <= k]
    assert len(found) <= 1, found
    return found[0] if found else None


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.2)


def _zk_exporter(connect: str, **kw: Any):
    from kquotactl.backends.factory import open_backend
    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.services.exporter import serve

    opts = ConnectionOptions(zookeeper=connect, connect_timeout=5, timeout=3)
    return serve(lambda: open_backend(opts), listen=("127.0.0.1", 0), **kw)


@pytest.mark.zookeeper
def test_the_zookeeper_watch_follows_each_change_without_polling(chroot, tmp_path) -> None:
    """refresh is an hour: only the watch on /config/changes can bring the changes in; with a manifest, the drift
    follows them too."""
    zk = ("--zookeeper", chroot.connect)
    assert run_cli(*zk, "alter", "--client-id", "a", "--add-config", "producer_byte_rate=1000").exit_code == 0
    manifest = tmp_path / "q.yaml"
    manifest.write_text("quotas:\n  - entity: {client-id: a}\n    config: {producer_byte_rate: 1000}\n")
    ex = _zk_exporter(chroot.connect, refresh=3600, manifests=[str(manifest)])
    try:
        url = ex.url
        wait_for(lambda: ex.ready, 10, "the first read")
        assert value(url, CONFIGURED, client_id="a", key="producer_byte_rate") == 1000
        assert value(url, UP, source="quotas") == 1 and value(url, UP, source="manifest") == 1
        assert value(url, "kquotactl_quota_drift", client_id="a", key="producer_byte_rate") == 0
        started = time.monotonic()
        r = run_cli(*zk, "alter", "--user", "alice@corp", "--client-id", "b", "--add-config", "consumer_byte_rate=2MiB")
        assert r.exit_code == 0, r.stderr
        wait_for(lambda: value(url, CONFIGURED, user="alice@corp", client_id="b"), 5, "a new entity")
        assert value(url, CONFIGURED, entity="users/alice@corp/clients/b", key="consumer_byte_rate") == 2 * 2**20
        assert run_cli(*zk, "alter", "--client-id", "a", "--delete-config", "producer_byte_rate").exit_code == 0
        wait_for(lambda: value(url, CONFIGURED, client_id="a") is None, 5, "a deleted quota")
        wait_for(lambda: value(url, "kquotactl_quota_drift", client_id="a") == 1, 5, "drift from the manifest")
        assert time.monotonic() - started < 15 and value(url, "kquotactl_exporter_entities") == 1
        # one full read (the first) in all: the changes came through the watch
        assert value(url, "kquotactl_exporter_refresh_duration_seconds_count", source="quotas") == 3
    finally:
        ex.stop()


@pytest.mark.zookeeper
def test_a_zookeeper_outage_keeps_the_last_limits_and_says_so(own_zk) -> None:
    from kazoo.client import KazooClient

    admin = KazooClient(own_zk.connect)
    admin.start(timeout=30)
    admin.ensure_path("/kq/brokers/ids")
    admin.stop()
    admin.close()
    connect = f"{own_zk.connect}/kq"
    assert run_cli("--zookeeper", connect, "alter", "--ip", "10.0.0.1", "--add-config", "connection_creation_rate=7")
    ex = _zk_exporter(connect, refresh=1)
    try:
        url = ex.url
        wait_for(lambda: value(url, CONFIGURED, ip="10.0.0.1") == 7, 10, "the first read")
        # a quiet watch still says the values are current: the last success moves on without any change
        first = value(url, "kquotactl_exporter_last_success_timestamp_seconds", source="quotas")
        wait_for(
            lambda: value(url, "kquotactl_exporter_last_success_timestamp_seconds", source="quotas") > first + 1,
            10,
            "the last success of a quiet watch",
        )
        own_zk.stop()
        wait_for(lambda: value(url, UP, source="quotas") == 0, 20, "quotas down while ZooKeeper is")
        assert value(url, CONFIGURED, ip="10.0.0.1") == 7  # the last known value, still served
        assert value(url, "kquotactl_exporter_refresh_errors_total", source="quotas") >= 1
        health = requests.get(url + "/-/healthy", timeout=5)
        assert health.status_code == 200 and "stale: quotas" in health.text
        own_zk.restart()
        wait_for(lambda: value(url, UP, source="quotas") == 1, 60, "quotas back with ZooKeeper")
        r = run_cli("--zookeeper", connect, "alter", "--ip", "10.0.0.2", "--add-config", "connection_creation_rate=3")
        assert r.exit_code == 0, r.stderr
        wait_for(lambda: value(url, CONFIGURED, ip="10.0.0.2") == 3, 10, "a change after the outage")
    finally:
        ex.stop()


def _firing(prometheus: str, alert: str) -> list[dict[str, Any]]:
    """The alerts named ``alert`` firing in Prometheus (``/api/v1/alerts``)."""
    alerts = requests.get(prometheus + "/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    return [a for a in alerts if a["labels"].get("alertname") == alert and a["state"] == "firing"]


def _produce(bootstrap: str, client_id: str, rate: int, stop: threading.Event) -> None:
    """``rate`` bytes/s in 10 messages a second until ``stop`` (the broker's user is ANONYMOUS)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 0})
    payload = b"x" * (rate // 10)
    start, i = time.monotonic(), 0
    while not stop.is_set():
        p.produce("exporter-traffic", payload)
        i += 1
        while (wait := start + i / 10 - time.monotonic()) > 0:
            p.poll(wait)
    p.purge()
    p.flush(5)


@pytest.mark.kafka
@pytest.mark.prometheus
def test_the_exporter_command_on_a_kraft_broker(observed_kraft, tmp_path) -> None:
    """The CLI in a subprocess: utilization against the broker's own exporter, a change within one refresh, a real
    Prometheus scraping it with the shipped rules (the throttle alert fires for the throttled client alone), the
    broker stopped and started again, and SIGTERM."""
    from kquotactl.observe.prometheus import instant, scrape
    from kquotactl.testing.observe import PrometheusServer
    from kquotactl.testing.servers import free_port

    bs = observed_kraft.bootstrap
    assert run_cli("--bootstrap-server", bs, "alter", "--client-id", "slow", "--add-config", "producer_byte_rate=20000")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "kquotactl", "--bootstrap-server", bs, "exporter", "--listen", f"127.0.0.1:{port}"]
    cmd += ["--scrape", observed_kraft.exporter, "--refresh", "1s", "--sensor-interval", "1s"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(bs, "slow", 100_000, stop))
    # the shipped rules, their for: left out (promtool holds those edges): an alert fires at its first evaluation
    prometheus = PrometheusServer(
        targets=[f"127.0.0.1:{port}"], job="kquotactl", rule_files=[rules_without_for(tmp_path)]
    )
    try:
        wait_for(lambda: _answers(url), 30, "the exporter serving")
        producer.start()
        labels = {"client_id": "slow", "quota_type": "Produce"}
        wait_for(lambda: (value(url, "kquotactl_quota_throttle_time_seconds", **labels) or 0) > 0, 30, "throttled")
        assert value(url, LIMIT, **labels, level="7", entity="clients/slow", key="producer_byte_rate") == 20000
        # utilization = the broker's own byte-rate / the limit: the broker's exporter read right after ours
        # (<= 1 s apart: the sensor interval); a throttled rate moves, so within 25 %
        ours = read_metrics(url)
        [broker_rate] = [
            s.value for s in scrape([observed_kraft.exporter]) if s.metric == "byte_rate" and s.client_id == "slow"
        ]
        [(k, util)] = [
            (k, v) for k, v in ours["kquotactl_quota_utilization_ratio"].items() if ("client_id", "slow") in k
        ]
        assert util == pytest.approx(ours["kquotactl_quota_usage"][k] / 20000, rel=1e-9)
        assert util == pytest.approx(broker_rate / 20000, rel=0.25), (util, broker_rate)
        assert util > 0.8  # 100 kB/s against 20 kB/s: held at about the limit

        # a change shows within one refresh (1 s; the alter's own read-back and a scrape on top)
        r = run_cli(
            "--bootstrap-server", bs, "alter", "--client-id", "slow", "--add-config", "producer_byte_rate=25000"
        )
        assert r.exit_code == 0, r.stderr
        changed = time.monotonic()
        wait_for(lambda: value(url, LIMIT, **labels) == 25000, 5, "the new limit")
        assert time.monotonic() - changed < 3

        # a real Prometheus scraping the exporter gets the series
        prometheus.start()
        got = wait_for(
            lambda: instant(prometheus.url, 'kquotactl_quota_limit{client_id="slow"}'), 30, "Prometheus' series"
        )
        assert got[0]["metric"]["level"] == "7" and float(got[0]["value"][1]) == 25000
        # the throttle alert fires in Prometheus for the throttled client, and for no other quota-id
        firing = wait_for(lambda: _firing(prometheus.url, "KquotactlQuotaThrottled"), 30, "the throttle alert")
        assert {(a["labels"]["client_id"], a["labels"]["quota_type"]) for a in firing} == {("slow", "Produce")}

        # the same series from the Prometheus that scrapes the broker (in-process, --prometheus)
        from kquotactl.backends.factory import open_backend
        from kquotactl.connection.cluster import ConnectionOptions
        from kquotactl.services.exporter import serve

        opts = ConnectionOptions(bootstrap_server=bs)
        with serve(lambda: open_backend(opts), listen=("127.0.0.1", 0), prometheus=observed_kraft.prometheus.url) as ex:
            ex.refresh_quotas()
            ex.refresh_sensors()
            assert value(ex.url, LIMIT, **labels, level="7") == 25000
            assert (value(ex.url, "kquotactl_quota_usage", **labels) or 0) > 0

        # the broker down: both sources go stale, the last limits stay, the exporter keeps answering
        stop.set()
        producer.join()
        observed_kraft.server.stop()
        wait_for(lambda: value(url, UP, source="sensors") == 0, 30, "sensors down")
        wait_for(lambda: value(url, UP, source="quotas") == 0, 90, "quotas down")
        assert value(url, LIMIT, **labels) == 25000 and proc.poll() is None
        assert "stale: quotas, sensors" in requests.get(url + "/-/healthy", timeout=5).text
        observed_kraft.server.start()
        wait_for(lambda: value(url, UP, source="quotas") == 1, 90, "quotas back with the broker")
        wait_for(lambda: value(url, UP, source="sensors") == 1, 30, "sensors back with the broker")

        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        assert proc.wait(timeout=10) == 0, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() - sent < 5
    finally:
        stop.set()
        if producer.is_alive():
            producer.join()
        prometheus.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        run_cli("--bootstrap-server", bs, "alter", "--client-id", "slow", "--delete-config", "producer_byte_rate")


def _answers(url: str) -> bool:
    try:
        return requests.get(url + "/-/ready", timeout=2).status_code == 200
    except requests.RequestException:
        return False


@pytest.mark.kafka
@pytest.mark.zookeeper
@pytest.mark.prometheus
def test_the_exporter_on_a_zookeeper_mode_broker(observed_zk_kafka, zk_server, tmp_path) -> None:
    """Kafka 3.9 in ZooKeeper mode with the JMX exporter agent: the exporter reads the quotas through the change
    watch and the sensors from the broker; a user-level limit (level 3) shows with its utilization, a change shows
    without a poll, and a real Prometheus with the shipped rules fires the throttle alert for that user alone."""
    from kquotactl.observe.prometheus import scrape
    from kquotactl.testing.observe import PrometheusServer
    from kquotactl.testing.servers import free_port

    zk = ["--zookeeper", f"{zk_server.connect}/kafka39top"]
    bs = observed_zk_kafka.bootstrap
    assert run_cli(*zk, "alter", "--user", "ANONYMOUS", "--add-config", "producer_byte_rate=20000").exit_code == 0
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "kquotactl", *zk, "exporter", "--listen", f"127.0.0.1:{port}"]
    cmd += ["--scrape", observed_zk_kafka.exporter, "--refresh", "1h", "--sensor-interval", "1s"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(bs, "zk-client", 100_000, stop))
    rules = [rules_without_for(tmp_path)]
    prometheus = PrometheusServer(targets=[f"127.0.0.1:{port}"], job="kquotactl", rule_files=rules)
    try:
        wait_for(lambda: _answers(url), 30, "the exporter serving")
        producer.start()
        labels = {"user": "ANONYMOUS", "quota_type": "Produce"}
        wait_for(lambda: (value(url, "kquotactl_quota_throttle_time_seconds", **labels) or 0) > 0, 30, "throttled")
        assert value(url, LIMIT, **labels, level="3", entity="users/ANONYMOUS", key="producer_byte_rate") == 20000
        ours = read_metrics(url)
        [broker_rate] = [
            s.value for s in scrape([observed_zk_kafka.exporter]) if s.metric == "byte_rate" and s.user == "ANONYMOUS"
        ]
        [util] = [v for k, v in ours["kquotactl_quota_utilization_ratio"].items() if ("user", "ANONYMOUS") in k]
        assert util == pytest.approx(broker_rate / 20000, rel=0.25), (util, broker_rate)
        # the watch, not a poll (--refresh 1h), brings a change in
        assert run_cli(*zk, "alter", "--user", "ANONYMOUS", "--add-config", "producer_byte_rate=30000").exit_code == 0
        wait_for(lambda: value(url, LIMIT, **labels) == 30000, 5, "the change through the watch")
        prometheus.start()
        firing = wait_for(lambda: _firing(prometheus.url, "KquotactlQuotaThrottled"), 40, "the throttle alert")
        assert {(a["labels"]["user"], a["labels"]["quota_type"]) for a in firing} == {("ANONYMOUS", "Produce")}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        stop.set()
        if producer.is_alive():
            producer.join()
        prometheus.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        run_cli(*zk, "alter", "--user", "ANONYMOUS", "--delete-config", "producer_byte_rate")
