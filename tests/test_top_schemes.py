"""``kquotactl top`` on a broker whose JMX exporter runs a configuration operators already have, not kquotactl's:
a real KRaft broker (the newest Kafka) with the agent running the Prometheus JMX exporter's Kafka example
(tests/data/exporter-configs/jmx-exporter-kafka-2_0_0.yml, verbatim), a real Prometheus scraping it, and real
producers over their quotas. top names the throttled quota-ids from the scrape, from Prometheus (instant and range
queries), and impact's traffic table reads the same sensors, with no option saying which names they carry."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from test_top import _produce, _quota_ids

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.prometheus,
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),
]

EXAMPLE = Path(__file__).parent / "data" / "exporter-configs" / "jmx-exporter-kafka-2_0_0.yml"
QUOTAS = [
    (["--client-id", "slow"], "producer_byte_rate=20000"),  # level 7: the example's client-id-only rule
    (["--user", "ANONYMOUS", "--client-id", "pair-app"], "producer_byte_rate=30000"),  # level 1: user and client-id
    (["--client-id", "fast"], "producer_byte_rate=100MiB"),
]
THROTTLED = {("", "slow"): (20000, 7), ("ANONYMOUS", "pair-app"): (30000, 1)}


@pytest.fixture(scope="module")
def example_broker() -> Iterator[tuple[str, str, str]]:
    """(bootstrap, exporter host:port, Prometheus URL) of a KRaft broker running the JMX exporter's example."""
    from kquotactl.testing.kafka import KRaftKafkaServer
    from kquotactl.testing.observe import PrometheusServer, jmx_agent_opts
    from kquotactl.testing.servers import free_port

    port = free_port()
    server = KRaftKafkaServer(jvm_opts=jmx_agent_opts(port, EXAMPLE))
    # the example exports all of the broker's MBeans: a scrape takes 1-1.5 s on two busy cores, so every 5 s
    prometheus = PrometheusServer(targets=[f"127.0.0.1:{port}"], interval=5.0)
    try:
        server.start()
        prometheus.start()
        yield server.bootstrap, f"127.0.0.1:{port}", prometheus.url
    finally:
        prometheus.close()
        server.close()


def _check(rows: list[dict]) -> None:
    got = _quota_ids(rows)
    assert set(got) == set(THROTTLED), rows
    for qid, (limit, level) in THROTTLED.items():
        [use] = [u for u in got[qid]["quotas"] if u["key"] == "producer_byte_rate"]
        assert (use["limit"], use["level"]) == (limit, level), got[qid]
        assert got[qid]["throttled"] and use["throttle_ms"] > 0 and use["usage"] > 0, got[qid]


def test_top_reads_the_jmx_exporter_example(example_broker: tuple[str, str, str]) -> None:
    bs, exporter, prom = example_broker
    for entity, cfg in QUOTAS:
        r = run_cli("--bootstrap-server", bs, "alter", *entity, "--add-config", cfg)
        assert r.exit_code == 0, r.stderr
    time.sleep(1)
    start = time.time()
    threads = [
        threading.Thread(target=_produce, args=(bs, c, 20_000 if c == "fast" else 100_000, 8))
        for c in ("slow", "pair-app", "fast")
    ]
    for t in threads:
        t.start()
    try:
        time.sleep(4)  # throttled by now
        text = run_cli("--bootstrap-server", bs, "top", "--scrape", exporter, "-o", "json")
        assert text.exit_code == 0, text.stderr
        _check(json.loads(text.stdout))
        assert "kafka_server_quota_byte_rate" in _metrics(exporter)  # the example's names, not kquotactl's
        deadline = time.monotonic() + 20
        while True:  # the range query sees the throttle once Prometheus has scraped it
            r = run_cli("--bootstrap-server", bs, "top", "--prometheus", prom, "--lookback", "30", "-o", "json")
            assert r.exit_code == 0, r.stderr
            if len(json.loads(r.stdout)) >= len(THROTTLED) or time.monotonic() > deadline:
                break
            time.sleep(1)
        _check(json.loads(r.stdout))
        r = run_cli("--bootstrap-server", bs, "top", "--prometheus", prom, "--all", "-o", "json")  # instant
        assert r.exit_code == 0, r.stderr
        assert {("", "slow"), ("ANONYMOUS", "pair-app"), ("", "fast")} <= set(_quota_ids(json.loads(r.stdout)))
    finally:
        for t in threads:
            t.join()
    # impact --from-prometheus's traffic table: the same sensors, as produce bytes per client
    from kquotactl.observe.prometheus import traffic_table

    table = traffic_table(prom, start, time.time(), 1.0).to_pydict()
    produced = {c: 0.0 for c in ("slow", "pair-app", "fast")}
    for client, user, value in zip(table["client_id"], table["user"], table["produce_bytes"], strict=True):
        if client in produced:
            produced[client] += value
            assert user == ("ANONYMOUS" if client == "pair-app" else "")
    assert all(v > 0 for v in produced.values()), produced


def _metrics(exporter: str) -> str:
    import requests

    return requests.get(f"http://{exporter}/metrics", timeout=10).text
