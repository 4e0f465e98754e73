"""``recommend`` against a real broker's records of real clients (issue 29): one Kafka 4.x KRaft broker with its
request log and the JMX exporter agent scraped every second by a real Prometheus; confluent-kafka producers at
known rates, with no quota in the way: a steady one, a bursty one, and one far above the rest.

Expected limit for a steady client at rate R, default policy (p99 + 20 %): the broker's ``Rate`` reads a steady
rate as up to 11/10 of itself (ten full samples and the current one partly elapsed), the limit is rounded up to two
significant digits, and the pacing here holds R within a few percent: 0.95 × 1.2 R ≤ limit ≤ 1.35 × 1.2 R, from
the request log and from Prometheus alike. The sensors of a broker with no quota name the client-id only (Kafka's
quota-id with client-id quotas; a broker records its sensors only while some quota is set, so a default no
client reaches is set), so both are read at ``--level client-id``.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from kquotactl.core.keys import KEYS

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.prometheus,
    pytest.mark.spark,
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),
]

TOPIC = "recommend-live"
SECONDS = 24
MESSAGE = 10_000  # bytes
#: client-id -> its produce rate (bytes/s) in each tenth of a second of the run
RATES = {
    "rc-steady": lambda tick: 200_000,
    "rc-bursty": lambda tick: 600_000 if tick % 80 < 30 else 40_000,  # 3 s bursts every 8 s
    "rc-heavy": lambda tick: 2_000_000,
}
PRODUCE = next(k for k in KEYS if KEYS[k].sensor is not None and KEYS[k].sensor.quota_type == "Produce")


def _produce(bootstrap: str, client: str) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client, "linger.ms": 5})
    start, owed = time.monotonic(), 0.0
    for tick in range(SECONDS * 10):
        owed += RATES[client](tick) / 10
        while owed >= MESSAGE:
            p.produce(TOPIC, b"x" * MESSAGE)
            owed -= MESSAGE
        p.poll(0)
        while (wait := start + (tick + 1) / 10 - time.monotonic()) > 0:
            time.sleep(wait)
    p.flush(30)


@pytest.fixture(scope="module")
def observed(observed_request_log: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The clients run once; the request log as it was then (the broker goes on logging its clients' metadata
    requests) and Prometheus' range of their run."""
    import shutil

    from confluent_kafka.admin import AdminClient, NewTopic

    broker = observed_request_log
    # A broker records its quota sensors only while some quota is set: a default no client reaches
    r = run_cli("--bootstrap-server", broker.bootstrap, "alter", "--entity-type", "clients", "--entity-default",
                "--add-config", f"{PRODUCE}=1000000000")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    time.sleep(1)  # the broker applies it asynchronously
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # held: the future fails once it is collected
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    start = time.time()
    threads = [threading.Thread(target=_produce, args=(broker.bootstrap, c)) for c in RATES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(3)  # the last readings reach Prometheus
    assert broker.server.workdir is not None
    log = tmp_path_factory.mktemp("recommend-live") / "kafka-request.log"
    shutil.copyfile(broker.server.workdir / "kafka-request.log", log)
    return {
        "broker": broker,
        "log": str(log),
        "range": [f"--since={time.time() - start + 2:.0f}s"],
    }


def _recommend(*args: str) -> dict[str, Any]:
    r = run_cli("recommend", "--level", "client-id", "--key", PRODUCE, "-o", "json", *args)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _limits(doc: dict[str, Any]) -> dict[str, float]:
    return {lim["entity"]["client-id"]: lim["value"] for lim in doc["limits"] if lim["key"] == PRODUCE}


def test_limits_are_the_known_rates_times_the_headroom_from_the_log_and_from_prometheus(observed) -> None:
    from_log = _recommend("--input-format", "kafka-request-log", "--engine", "local", observed["log"])
    from_prometheus = _recommend("--from-prometheus", observed["broker"].prometheus.url, *observed["range"])
    for doc in (from_log, from_prometheus):
        limits = _limits(doc)
        assert set(limits) >= set(RATES), limits
        for client in ("rc-steady", "rc-heavy"):
            rate = RATES[client](0)
            assert 0.95 * 1.2 * rate <= limits[client] <= 1.35 * 1.2 * rate, (client, limits[client], rate)
        assert limits["rc-bursty"] >= 1.2 * 40_000  # above its base rate: its bursts are in the window
        assert limits["rc-heavy"] > 5 * limits["rc-steady"]
        # the default policy's limits let each client's own traffic through: nobody throttled in the replay
        assert doc["replayed"]["summary"]["throttled_quota_ids"] == 0, doc["replayed"]["quota_ids"][:3]


def test_both_engines_give_identical_reports_on_the_real_log(observed, spark) -> None:
    args = ("--input-format", "kafka-request-log", observed["log"])
    local = _recommend(*args, "--engine", "local")
    on_spark = _recommend(*args, "--engine", "spark", "--master", "local[2]")
    assert on_spark == local


def test_a_tight_policy_throttles_the_bursty_client_in_its_bursts(observed) -> None:
    """p50 with no headroom: the bursty client's bursts are far above its median, the steady clients' seconds
    only a little above theirs."""
    doc = _recommend(
        "--from-prometheus", observed["broker"].prometheus.url, *observed["range"], "--percentile", "50",
        "--headroom", "0",
    )  # fmt: skip
    throttled = {r["quota_id"]["client-id"]: r for r in doc["replayed"]["quota_ids"] if r["seconds_throttled"]}
    assert "rc-bursty" in throttled
    worst = max(throttled.values(), key=lambda r: r["max_throttle_ms"])
    assert worst["quota_id"]["client-id"] == "rc-bursty", throttled


def test_plan_shows_exactly_the_recommended_changes(observed, tmp_path: Path) -> None:
    bootstrap = observed["broker"].bootstrap
    r = run_cli("--bootstrap-server", bootstrap, "recommend", "--level", "client-id", "--key", PRODUCE,
                "--from-prometheus", observed["broker"].prometheus.url, *observed["range"])  # fmt: skip
    assert r.exit_code == 0, r.stderr
    manifest = tmp_path / "recommended.yaml"
    manifest.write_text(r.stdout)
    planned = run_cli("--bootstrap-server", bootstrap, "plan", "-f", str(manifest), "-o", "json")
    assert planned.exit_code == 2, planned.stderr  # changes pending
    import yaml

    declared = {
        q["entity"]["client-id"]: q["config"] for q in yaml.safe_load(manifest.read_text())["quotas"]
    }  # the recommended limits, and the current default kept as it is
    doc = json.loads(planned.stdout)
    assert {c["entity"]["client-id"]: (c["action"], c["after"]) for c in doc["changes"]} == {
        client: ("create", config) for client, config in declared.items() if client in RATES
    }
    assert doc["summary"] == {**doc["summary"], "create": len(RATES), "update": 0, "delete": 0, "unchanged": 1}
    assert set(declared) == {*RATES, "<default>"}
