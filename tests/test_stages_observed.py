"""The observed check between stages against real parts: a KRaft broker with the JMX exporter agent (the sensors
``kquotactl top`` reads, scraped directly), a real producer. A stage that throttles as predicted passes; a client
whose traffic surges during the wait is throttled far beyond what the next stage predicts: the apply stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

import pytest

from kquotactl.backends.base import QuotaBackend
from kquotactl.backends.factory import open_backend
from kquotactl.connection.cluster import ConnectionOptions
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import Entity
from kquotactl.core.keys import Number
from kquotactl.core.stages import StageShape, staged_plan
from kquotactl.manifests.loader import load_text
from kquotactl.services.plans import plan
from kquotactl.services.staged import StageObserver, StepCheck, apply_stages, check_step

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),
]


class Producer(threading.Thread):
    """Produces ``rate`` bytes/s (10 messages a second) until stopped; ``rate`` can change while it runs."""

    def __init__(self, bootstrap: str, client_id: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.client_id, self.rate = bootstrap, client_id, rate
        self.done = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Producer as KafkaProducer

        p = KafkaProducer({"bootstrap.servers": self.bootstrap, "client.id": self.client_id, "linger.ms": 0})
        start, i = time.monotonic(), 0
        while not self.done.is_set():
            p.produce("stages-traffic", b"x" * (self.rate // 10))
            i += 1
            while (wait := start + i / 10 - time.monotonic()) > 0:
                p.poll(wait)
        p.purge()
        p.flush(5)


@pytest.mark.prometheus
def test_the_observed_check_passes_a_predicted_stage_and_stops_on_a_surge(observed_kraft) -> None:
    bs = observed_kraft.bootstrap
    with open_backend(ConnectionOptions(bootstrap_server=bs)) as backend:
        backend.alter([EntityChange(Entity(client_id="surge"), {"producer_byte_rate": 400_000})])
        producer = Producer(bs, "surge", 20_000)
        producer.start()
        try:
            time.sleep(4)  # the sensors see steady traffic, far under the limit
            manifest = load_text("quotas:\n  - entity: {client-id: surge}\n    config: {producer_byte_rate: 25000}\n")
            staged = staged_plan(plan(backend, manifest).plan, 2, StageShape.GEOMETRIC)
            observer = StageObserver(scrape=[observed_kraft.exporter])
            observer.baseline(backend)

            def surge(seconds: float) -> None:  # the wait between stage 1 (100,000) and 2 (25,000)
                producer.rate = 1_000_000
                time.sleep(6)

            def check(b: QuotaBackend, expected: Mapping[Entity, Mapping[str, Number]]) -> StepCheck:
                time.sleep(2)  # brokers apply quota changes asynchronously: let the new limit reach the sensors
                return check_step(b, expected, observer=observer)

            result = apply_stages(backend, staged, interval=0, check=check, sleep=surge)
        finally:
            producer.done.set()
            producer.join(15)
    assert [e.at(1)["producer_byte_rate"] for e in staged.entities] == [100_000]
    assert result.stopped_at == 2 and result.stopped == "the check after the stage failed", result
    assert result.done == {Entity(client_id="surge"): 2}  # written, then the check failed
    [line] = result.details
    assert line.startswith("client-id surge: producer_byte_rate throttled ") and " predicted " in line, line


@pytest.mark.prometheus
def test_a_raised_limit_is_not_blamed_for_the_throttle_time_it_ended(observed_kraft) -> None:
    """throttle-time averages over a minute: right after a stage that lifts a throttled client's limit, the sensor
    still holds the old throttles. The client's usage is then far under its new limit: history, not a regression."""
    bs = observed_kraft.bootstrap
    with open_backend(ConnectionOptions(bootstrap_server=bs)) as backend:
        backend.alter([EntityChange(Entity(client_id="lifted"), {"producer_byte_rate": 20_000})])
        producer = Producer(bs, "lifted", 100_000)
        producer.start()
        try:
            time.sleep(5)  # throttled: seconds of throttle time on the sensor
            manifest = load_text("quotas:\n  - entity: {client-id: lifted}\n    config: {producer_byte_rate: 4MiB}\n")
            staged = staged_plan(plan(backend, manifest).plan, 2, StageShape.GEOMETRIC)
            observer = StageObserver(scrape=[observed_kraft.exporter])
            observer.baseline(backend)
            [before] = [r for r in observer.last or [] if r.quota_id.client_id == "lifted"]
            assert before.throttled and before.uses[0].throttle == "now", before.to_json()

            def check(b: QuotaBackend, expected: Mapping[Entity, Mapping[str, Number]]) -> StepCheck:
                time.sleep(2)  # the new limit reaches the broker; the throttle-time average still holds the old
                found = check_step(b, expected, observer=observer)
                [row] = [r for r in observer.last or [] if r.quota_id.client_id == "lifted"]
                assert max(f.throttle_ms for f in row.uses[0].brokers.values()) > 1000, row.to_json()
                return found

            result = apply_stages(backend, staged, interval=0, check=check, sleep=lambda s: time.sleep(1))
        finally:
            producer.done.set()
            producer.join(15)
    assert result.finished, (result.stopped, result.details)
