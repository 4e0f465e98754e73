"""``verify --drive``: a real confluent-kafka (librdkafka) producer with a user's credentials and client-id, producing
at a steady rate for a few seconds, and what the broker answered: the throttle of every throttled response
(librdkafka's ``throttle_cb``) and the throttle window of its statistics (``statistics.interval.ms``,
``brokers.*.throttle``). The only module that imports confluent-kafka; imported only when a drive runs.

All messages go to partition 0 of the topic (one broker, its leader: quotas are per broker), paced in
:data:`REQUESTS_PER_SECOND` equal messages a second with ``linger.ms=0`` (one produce request each). A warm-up message
is sent and delivered first, so metadata and topic creation are not part of the drive; it is the first recording:
the broker's sensor for the quota-id, and its samples, start with it. Time 0 is its acknowledgement; the broker
recorded it between the ``produce`` call and then (connection set-up, SASL, metadata and topic creation come first,
in an unknown share): ``Drive.origin_band_ms``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from kquotactl.connection.clientprops import ClientSettings, librdkafka_config
from kquotactl.core.errors import BackendUnavailable
from kquotactl.core.keys import PRODUCE_KEY
from kquotactl.core.retry import RetryPolicy
from kquotactl.core.verify import Drive

REQUESTS_PER_SECOND = 50
STATS_INTERVAL_MS = 500
#: how often the warm-up message's delivery is looked for (the producer's poll), within the connect timeout
DELIVERY_POLL = RetryPolicy(delay=0.002)


def drive_producer(
    bootstrap: str,
    settings: ClientSettings,
    client_id: str,
    topic: str,
    rate: float,
    seconds: float,
    connect_timeout: float = 10.0,
) -> Drive:
    """Produce ``rate`` bytes/s to ``topic`` for ``seconds`` as ``client_id``; the recordings and throttles seen."""
    from confluent_kafka import KafkaException, Producer

    stats: list[dict[str, Any]] = []
    throttles: list[tuple[int, int]] = []
    errors: list[str] = []
    origin = time.monotonic()  # when the warm-up message was acknowledged: the broker's sensor starts with it

    def on_throttle(event: Any) -> None:
        ms = round(event.throttle_time * 1000)
        if ms > 0:
            throttles.append((round((time.monotonic() - origin) * 1000), ms))

    def on_error(err: Any) -> None:
        if err.name() in ("_AUTHENTICATION", "_ALL_BROKERS_DOWN", "_TRANSPORT"):  # librdkafka's local errors
            errors.append(err.str())

    config = {
        **librdkafka_config(bootstrap, settings, client_id),
        "linger.ms": 0,
        "acks": 1,
        "enable.idempotence": False,
        "statistics.interval.ms": STATS_INTERVAL_MS,
        "stats_cb": lambda text: stats.append(json.loads(text)),
        "throttle_cb": on_throttle,
        "error_cb": on_error,
        "log_level": 0,
    }
    try:
        producer = Producer(config)
    except KafkaException as e:
        raise BackendUnavailable(f"--drive: the producer's configuration was refused: {e}") from None
    try:
        delivered: list[Any] = []
        called = time.monotonic()
        producer.produce(topic, b"w", partition=0, on_delivery=lambda err, msg: delivered.append(err))
        for attempt in DELIVERY_POLL.within(connect_timeout).tries(time.monotonic, producer.poll):
            if delivered or errors or attempt.last:
                break  # (the producer's poll is the wait: it serves the delivery callback meanwhile)
        origin = time.monotonic()
        if errors or not delivered or delivered[0] is not None:
            why = errors[0] if errors else str(delivered[0]) if delivered else f"no answer within {connect_timeout:g}s"
            raise BackendUnavailable(f"--drive: the producer cannot produce to {topic!r} through {bootstrap}: {why}")
        size = max(1, round(rate / REQUESTS_PER_SECOND))
        payload = b"x" * size
        sent: list[tuple[int, float]] = [(0, 1.0)]  # the warm-up message
        start = time.monotonic()
        for i in range(round(seconds * REQUESTS_PER_SECOND)):
            now = time.monotonic()
            sent.append((round((now - origin) * 1000), float(size)))
            try:
                producer.produce(topic, payload, partition=0)
            except BufferError:  # the local queue is full: the broker throttles hard; stop feeding it
                break
            while (wait := start + (i + 1) / REQUESTS_PER_SECOND - time.monotonic()) > 0:
                producer.poll(wait)
        producer.poll(STATS_INTERVAL_MS / 1000 + 0.1)  # the last statistics and throttles
    finally:
        producer.purge()
        producer.flush(2)
    overhead = _request_overhead(stats, size, len(sent) - 1)
    recorded = [(t, b + overhead) for t, b in sent]
    avg, top = _throttle_window(stats)
    band = round((origin - called) * 1000)  # the broker recorded the warm-up within this many ms before time 0
    return Drive(PRODUCE_KEY, rate, seconds, recorded, list(throttles), avg, top, band)


def _brokers(stats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for s in stats for b in s.get("brokers", {}).values() if b.get("nodeid", -1) >= 0]


def _request_overhead(stats: list[dict[str, Any]], size: int, paced: int) -> float:
    """Bytes the broker records per request beyond the payload (request header, record batch), from the last
    statistics: (bytes sent to the brokers − payloads of the messages transmitted) / messages transmitted (the
    warm-up message's payload is 1 byte, the ``paced`` others ``size``). Messages still queued (a throttled client
    is muted) are in neither count."""
    if not stats:
        return 0.0
    last = stats[-1]
    sent = sum(int(b.get("txbytes", 0)) for b in last.get("brokers", {}).values() if b.get("nodeid", -1) >= 0)
    messages = sum(
        int(p.get("txmsgs", 0))
        for t in last.get("topics", {}).values()
        for pid, p in t.get("partitions", {}).items()
        if pid != "-1"
    )
    if not messages:
        return 0.0
    payloads = 1 + min(messages - 1, paced) * size
    return max(0.0, (sent - payloads) / messages)


def _throttle_window(stats: list[dict[str, Any]]) -> tuple[float, float]:
    """The average (weighted by count) and largest throttle of the statistics' per-interval windows."""
    total = count = 0.0
    top = 0.0
    for b in _brokers(stats):
        w = b.get("throttle") or {}
        n = w.get("cnt", 0)
        if n:
            total += w.get("avg", 0) * n
            count += n
            top = max(top, float(w.get("max", 0)))
    return (total / count if count else 0.0), top
