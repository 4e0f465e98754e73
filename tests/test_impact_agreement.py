"""Measured agreement between ``impact run`` and the throttling a real broker applied (issue 18, part 3).

One KRaft 4.x broker keeps both of its records of its clients: the request log (``kafka.request.logger`` at DEBUG)
and the quota sensors (JMX exporter agent, scraped every second by a real Prometheus). Real confluent-kafka clients
run over quotas set with kquotactl: a producer over its produce quota and a consumer over its fetch quota. Then
``impact run`` replays the same quota set from the request log and from Prometheus, on both engines, and each
replay is compared with what the broker did: the ``throttleTimeMs`` it returned in every response to that client
(the request log's own field).

Per case (one quota-id), over the seconds in which the client sent requests (from the request log):
- throttled fraction: the share of those seconds with a throttled response (broker) / in a throttled sample (replay);
- mean throttle ms: the mean ``throttleTimeMs`` of the throttled responses (broker) / the mean throttle of the
  throttled seconds (replay).

The clients are closed loop (a throttled client waits), so their rate hovers at the limit, where a few percent of
measurement difference decides whether a second is over; the replays see the traffic the broker let through. The
tolerances below are what that allows (measured figures: printed, and in the closing note of issue 18).

The consumer shows the limit of any replay of served traffic: a throttled Fetch is answered empty and its bytes are
unrecorded, so the fetch bytes the broker refused are in neither record, and a replay of the same limit sees the
consumer at about its limit: the replays understate its throttle, and that is what is asserted.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from kquotactl.core.entities import Entity
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact.engine import Runner
from kquotactl.impact.replay import Window

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.spark,
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),
]

PRODUCE_LIMIT = 100_000  # bytes/s, clients/agree-producer
FETCH_LIMIT = 50_000  # bytes/s, clients/agree-consumer
SECONDS = 12
TOPIC = "agree-traffic"
QUOTAS = {
    Entity(client_id="agree-producer"): {"producer_byte_rate": PRODUCE_LIMIT},
    Entity(client_id="agree-consumer"): {"consumer_byte_rate": FETCH_LIMIT},
}
CASES = {  # client-id -> (quota key, request log api key)
    "agree-producer": ("producer_byte_rate", 0),
    "agree-consumer": ("consumer_byte_rate", 1),
}
# |replay − broker| allowed for the throttled fraction (absolute); measured (4 runs): 0.00 to 0.17 from the log,
# 0.00 to 0.08 from Prometheus
FRACTION_TOLERANCE = 0.3
# replay / broker allowed for the mean throttle: within a factor of 2.5 either way. Measured (4 runs): 0.51 to 0.67
# from the log, 0.85 to 1.40 from Prometheus. The broker's figure is the mean over a handful of throttled responses
# (8 in 12 s: a throttled client waits), the replay's the mean over throttled seconds: a wide band, but a wrong
# limit or a wrong unit (bytes vs kB, one sample vs the window) is a factor of 10 or more away.
MEAN_MS_FACTOR = 2.5


def _produce(bootstrap: str, seconds: float) -> None:
    """3× the produce quota, paced in 20 kB messages, for ``seconds``; the backlog left is dropped."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "client.id": "agree-producer", "linger.ms": 5})
    per_tick = 3 * PRODUCE_LIMIT // 10
    start = time.monotonic()
    for i in range(int(seconds * 10)):
        for _ in range(per_tick // 20_000):
            p.produce(TOPIC, b"x" * 20_000)
        while (wait := start + (i + 1) / 10 - time.monotonic()) > 0:
            p.poll(wait)
    p.purge()
    p.flush(5)


def _consume(bootstrap: str, seconds: float) -> None:
    """Read the topic from its start (the backlog is several times the fetch quota) for ``seconds``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "agree-consumer",
            "group.id": "agree",
            "enable.auto.commit": False,
            "max.partition.fetch.bytes": 100_000,
            "fetch.wait.max.ms": 100,
        }
    )
    c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.poll(0.2)
    c.close()


@dataclass
class Broker:
    """What the broker did for one client: per second with requests, whether a response was throttled, and the
    throttle times it returned."""

    seconds: set[int]
    throttled_seconds: set[int]
    throttles: list[int]

    @property
    def fraction(self) -> float:
        return len(self.throttled_seconds) / len(self.seconds)

    @property
    def mean_ms(self) -> float:
        return sum(self.throttles) / len(self.throttles) if self.throttles else 0.0


def _broker_truth(log: Path) -> dict[str, Broker]:
    from kquotactl.impact.requestlog import epoch_seconds

    by: dict[str, Broker] = defaultdict(lambda: Broker(set(), set(), []))
    for line in log.read_text().splitlines():
        if "Completed request:" not in line:
            continue
        doc = json.loads(line.split("Completed request:", 1)[1].rsplit(" (kafka.request.logger)", 1)[0])
        client, api = doc["requestHeader"]["clientId"], doc["requestHeader"]["requestApiKey"]
        if client not in CASES or CASES[client][1] != api:
            continue
        second = int(epoch_seconds(line[1:20], line[21:24]) or 0)
        b = by[client]
        b.seconds.add(second)
        if doc["throttleTimeMs"] > 0:
            b.throttled_seconds.add(second)
            b.throttles.append(doc["throttleTimeMs"])
    return dict(by)


def _replayed(runner: Runner, index: QuotaIndex, key: str, client: str, seconds: set[int]) -> tuple[float, float]:
    """The replay's throttled fraction and mean throttle ms for (key, clients/``client``) over ``seconds``."""
    a = runner.analyze(index, top=10)
    rows = [r for r in a.report["quota_ids"] if r["key"] == key and r["quota_id"]["client-id"] == client]
    assert rows, a.report
    throttle: dict[int, int] = {}
    for sid, intervals in a.timeline.items():
        if sid[0] == key and sid[3] == client:
            for start, end, ms in intervals:
                for s in range(start, end):
                    throttle[s] = max(throttle.get(s, 0), ms)  # a sample size of 1 s: sample = second
    hit = [throttle[s] for s in seconds if s in throttle]
    return len(hit) / len(seconds), (sum(hit) / len(hit) if hit else 0.0)


@pytest.mark.prometheus
def test_replays_agree_with_the_brokers_throttling(observed_request_log, spark, tmp_path: Path) -> None:
    from kquotactl.observe.prometheus import traffic_table

    broker = observed_request_log
    for client, (key, _) in CASES.items():
        r = run_cli(
            "--bootstrap-server",
            broker.bootstrap,
            "alter",
            "--client-id",
            client,
            "--add-config",
            f"{key}={QUOTAS[Entity(client_id=client)][key]}",
        )
        assert r.exit_code == 0, r.stderr
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # held: the future fails once it is collected
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    time.sleep(1)  # the broker applies the quotas asynchronously
    start = time.time()
    threads = [
        threading.Thread(target=_produce, args=(broker.bootstrap, SECONDS)),
        threading.Thread(target=_consume, args=(broker.bootstrap, SECONDS)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(3)  # the last readings reach Prometheus
    end = time.time()
    assert broker.server.workdir is not None
    log = broker.server.workdir / "kafka-request.log"
    truth = _broker_truth(log)
    index = QuotaIndex(QUOTAS)
    table = traffic_table(broker.prometheus.url, start - 2, end, 1.0, 1)
    inputs: dict[str, dict[str, Any]] = {
        "request log": {"input_format": "kafka-request-log", "paths": (str(log),)},
        "prometheus": {"table": table},
    }
    figures = []
    for source, kwargs in inputs.items():
        for engine in ("local", "spark"):
            name = str(log) if source == "request log" else broker.prometheus.url
            window = Window(windowed=source == "prometheus")  # the sensors are the broker's window rates
            runner = Runner(name, engine, window, "local[2]", **kwargs)
            for client, (key, _) in CASES.items():
                b = truth[client]
                fraction, mean_ms = _replayed(runner, index, key, client, b.seconds)
                figures.append((client, source, engine, fraction, mean_ms, b))
    lines = [
        f"{client:15} {source:11} {engine:5}: throttled fraction {fraction:.2f} (broker {b.fraction:.2f}), "
        f"mean throttle {mean_ms:.0f} ms (broker {b.mean_ms:.0f} ms over {len(b.throttles)} responses)"
        for client, source, engine, fraction, mean_ms, b in figures
    ]
    print("\n" + "\n".join(lines))
    for client, _source, _engine, fraction, mean_ms, b in figures:
        assert b.throttles, f"the broker never throttled {client}: the quota was not in force"
        if client == "agree-consumer":
            # A throttled Fetch is answered empty and its bytes unrecorded (KafkaApis: unrecordQuotaSensor,
            # getThrottledResponse): neither the sensor nor the log holds the bytes the broker refused, so the
            # replays see the consumer at about its limit and understate the throttle (measured: 0 to 204 ms
            # against the broker's 1520 to 1745 ms; 836 against 1687 once).
            assert fraction <= b.fraction + 0.1 and mean_ms < b.mean_ms, lines
            continue
        assert abs(fraction - b.fraction) <= FRACTION_TOLERANCE, lines
        assert b.mean_ms / MEAN_MS_FACTOR <= mean_ms <= b.mean_ms * MEAN_MS_FACTOR, lines
    # the command line, on the live cluster's quotas: the producer's quota-id, throttled on the one broker
    r = run_cli(
        "--bootstrap-server",
        broker.bootstrap,
        "-o",
        "json",
        "impact",
        "run",
        "--from-prometheus",
        broker.prometheus.url,
        "--since",
        f"{time.time() - start + 2:.0f}s",
        "--engine",
        "local",
    )
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    [row] = [q for q in out["quota_ids"] if q["quota_id"] == {"user": "", "client-id": "agree-producer"}]
    assert row["broker"] == broker.exporter and row["seconds_throttled"] > 0, row
    assert out["summary"]["brokers"] == [broker.exporter] and out["summary"]["window"]["windowed_input"] is True
    # both engines give the same figures on the same input
    by_input = defaultdict(set)
    for client, source, _engine, fraction, mean_ms, _ in figures:
        by_input[(client, source)].add((round(fraction, 9), round(mean_ms, 6)))
    assert all(len(v) == 1 for v in by_input.values()), lines
