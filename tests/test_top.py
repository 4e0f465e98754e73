"""``kquotactl top`` against real parts: a KRaft 4.x broker with the Prometheus JMX exporter agent (Maven Central)
and the shipped rules, a real Prometheus server scraping it, real confluent-kafka producers and a consumer over
their quotas; and a ZooKeeper-mode 3.9 broker scraped directly."""

from __future__ import annotations

import json
import threading
import time

import pytest

from conftest import run_cli

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),  # a client thread that fails
]

QUOTAS = [
    (["--client-id", "slow"], "producer_byte_rate=20000"),  # level 7, shared by the client-id
    (["--user", "ANONYMOUS", "--client-id", "pair-app"], "producer_byte_rate=30000"),  # level 1
    (["--client-id", "fast"], "producer_byte_rate=100MiB"),  # far above its traffic
    (["--client-id", "reader"], "consumer_byte_rate=2000"),  # a consumer reading the producers' backlog
    (["--client-id", "mutator"], "controller_mutation_rate=1"),  # an admin client creating topics
    (["--ip", "127.0.0.1"], "connection_creation_rate=500"),
]
THROTTLED = {  # quota-id -> (key, limit, level, entity path)
    ("", "slow"): ("producer_byte_rate", 20000, 7, "clients/slow"),
    ("ANONYMOUS", "pair-app"): ("producer_byte_rate", 30000, 1, "users/ANONYMOUS/clients/pair-app"),
    ("", "reader"): ("consumer_byte_rate", 2000, 7, "clients/reader"),
    ("", "mutator"): ("controller_mutation_rate", 1, 7, "clients/mutator"),
}
CLIENTS = ["slow", "pair-app", "fast", "reader", "mutator"]


def _produce(bootstrap: str, client_id: str, rate: int, seconds: float) -> None:
    """``rate`` bytes/s in 10 messages a second, for ``seconds`` (PLAINTEXT: the broker's user is ANONYMOUS)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 0})
    payload = b"x" * (rate // 10)
    start = time.monotonic()
    for i in range(int(seconds * 10)):
        p.produce("top-traffic", payload)
        while (wait := start + (i + 1) / 10 - time.monotonic()) > 0:  # poll returns early on events: pace by time
            p.poll(wait)
    p.purge()  # a throttled producer's backlog would drain at its quota: drop it, the broker has seen enough
    p.flush(5)


def _consume(bootstrap: str, client_id: str, seconds: float) -> None:
    """Read the topic from its start for ``seconds``, after 2 s (the producers' backlog); no group (no rebalance
    wait): the partition is assigned."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    time.sleep(2)
    # small fetches: each one crosses the quota by a few seconds' worth, not by the whole backlog
    small = {"max.partition.fetch.bytes": 20000, "fetch.wait.max.ms": 100, "enable.auto.commit": False}
    c = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": "top", **small})
    c.assign([TopicPartition("top-traffic", 0, OFFSET_BEGINNING)])
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c.poll(0.2)
    c.close()


def _mutate(bootstrap: str, client_id: str, seconds: float) -> None:
    """Create topics of 4 partitions, one call a second: over 1 partition mutation/s (refused calls included)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": client_id})
    for i in range(int(seconds)):
        futures = admin.create_topics([NewTopic(f"top-{client_id}-{i}", 4, 1)], request_timeout=5)
        for f in futures.values():
            f.exception(timeout=10)  # THROTTLING_QUOTA_EXCEEDED once over the quota: expected
        time.sleep(0.5)


def _quota_ids(rows: list[dict]) -> dict[tuple[str, ...], dict]:
    out = {}
    for row in rows:
        q = row["quota_id"]
        out[
            (q["ip"],) if "ip" in q else ("listener", q["listener"]) if "listener" in q else (q["user"], q["client-id"])
        ] = row
    return out


def _check_throttled(rows: list[dict]) -> None:
    got = _quota_ids(rows)
    assert set(got) == set(THROTTLED), rows
    for qid, (key, limit, level, path) in THROTTLED.items():
        row = got[qid]
        assert row["throttled"] and row["throttle_ms"] > 0
        [use] = [u for u in row["quotas"] if u["key"] == key]
        assert (use["limit"], use["level"], use["entity_path"]) == (limit, level, path)
        if key == "controller_mutation_rate" and any(u.get("note") for u in row["quotas"]):
            # KRaft: the controller's throttle comes back through the broker's Request sensor (forwarded)
            [req] = [u for u in row["quotas"] if u.get("note")]
            assert (req["key"], req["limit"], req["throttle_ms"] > 0) == ("request_percentage", None, True)
            assert use["usage"] > 0
            continue
        # a throttled fetch is answered empty and its bytes un-recorded (ClientQuotaManager.unrecordQuotaSensor):
        # a consumer throttled on every fetch reads 0 B/s while throttled
        assert use["throttle_ms"] > 0 and (use["usage"] > 0 or key == "consumer_byte_rate"), row
        assert list(use["brokers"]) and all(b.startswith("127.0.0.1:") for b in use["brokers"])


def _traffic(
    cluster: list[str], bootstrap: str, quotas: list[tuple[list[str], str]], clients: list[str]
) -> list[threading.Thread]:
    """Set the quotas with kquotactl, then start the producers together for 5 s (the first ones at 100 kB/s, over
    their limits; "fast" at 20 kB/s under its own), the consumer and the admin client: the running threads.

    top looks while they run: a throttle time averages over a minute, and once the traffic stops its usage drains
    under the limit and top calls the throttle history (``past``), not a throttle now."""
    for ent, cfg in quotas:
        r = run_cli(*cluster, "alter", *ent, "--add-config", cfg)
        assert r.exit_code == 0, r.stderr
    time.sleep(1)  # brokers apply quota changes asynchronously (KRaft metadata, ZooKeeper notifications)
    threads = [
        threading.Thread(target=_consume, args=(bootstrap, c, 5))
        if c == "reader"
        else threading.Thread(target=_mutate, args=(bootstrap, c, 4))
        if c == "mutator"
        else threading.Thread(target=_produce, args=(bootstrap, c, 20_000 if c == "fast" else 100_000, 5))
        for c in clients
    ]
    for t in threads:
        t.start()
    time.sleep(4)  # all throttled by now, none done
    return threads


def _join(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.join()


@pytest.mark.prometheus
def test_top_names_the_throttled_quota_ids(observed_kraft, tmp_path):
    bs = observed_kraft.bootstrap
    threads = _traffic(["--bootstrap-server", bs], bs, QUOTAS, CLIENTS)

    # straight from the broker's exporter
    r = run_cli("--bootstrap-server", bs, "top", "--scrape", observed_kraft.exporter, "-o", "json")
    assert r.exit_code == 0, r.stderr
    _check_throttled(json.loads(r.stdout))
    mutator = _quota_ids(json.loads(r.stdout))[("", "mutator")]
    assert any(u.get("note") for u in mutator["quotas"]), mutator  # KRaft forwards CreateTopics to the controller
    # the table names them too
    r = run_cli("--bootstrap-server", bs, "top", "--scrape", observed_kraft.exporter, "-o", "table")
    assert r.exit_code == 0, r.stderr
    assert "client-id slow" in r.stdout and "user ANONYMOUS, client-id pair-app" in r.stdout
    assert "clients/slow" in r.stdout and "fast" not in r.stdout
    _join(threads)

    # --all lists the unthrottled quota-ids too, with their limits: the fast client and the ip
    r = run_cli("--bootstrap-server", bs, "top", "--scrape", observed_kraft.exporter, "--all", "-o", "json")
    assert r.exit_code == 0, r.stderr
    every = _quota_ids(json.loads(r.stdout))
    assert not every[("", "fast")]["throttled"]
    [fast] = [u for u in every[("", "fast")]["quotas"] if u["key"] == "producer_byte_rate"]
    assert fast["limit"] == 100 * 1024 * 1024 and fast["level"] == 7 and fast["throttle_ms"] == 0, every
    [ip_use] = every[("127.0.0.1",)]["quotas"]
    assert (ip_use["key"], ip_use["limit"], ip_use["level"]) == ("connection_creation_rate", 500, 1)
    assert ip_use["level_pattern"] == "ips/<ip>"
    # a throttled ip connection would show only here (the broker takes it back out of the ip's rate)
    [listener] = every[("listener", "PLAINTEXT")]["quotas"]
    assert (listener["key"], listener["throttle_ms"], listener["limit"]) == ("connection_creation_rate", 0, None)

    # -f: the limits from manifests instead of the cluster (offline): the cluster's own export gives the same
    # limits and levels; a proposed manifest gives its own
    def limits(rows: list[dict]) -> dict:
        return {q: sorted((u["key"], u["limit"], u["level"]) for u in r["quotas"]) for q, r in _quota_ids(rows).items()}

    exported = tmp_path / "live.yaml"
    assert run_cli("--bootstrap-server", bs, "export", "--out", str(exported)).exit_code == 0
    r = run_cli("top", "--scrape", observed_kraft.exporter, "--all", "-f", str(exported), "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert limits(json.loads(r.stdout)) == limits(list(every.values()))
    proposed = tmp_path / "proposed.yaml"
    proposed.write_text("quotas:\n- entity: {client-id: fast}\n  config: {producer_byte_rate: 10KiB}\n")
    r = run_cli("top", "--scrape", observed_kraft.exporter, "--all", "-f", str(proposed), "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert ("producer_byte_rate", 10240, 7) in limits(json.loads(r.stdout))[("", "fast")]
    r = run_cli("--bootstrap-server", bs, "top", "--scrape", observed_kraft.exporter, "-f", str(proposed))
    assert r.exit_code == 1 and "drop --zookeeper/--bootstrap-server, or -f" in r.stderr

    # through Prometheus (range query over the last 30 s: the throttle is seen even once the scrape moved on)
    prom = observed_kraft.prometheus.url
    deadline = time.monotonic() + 20
    while True:
        r = run_cli("--bootstrap-server", bs, "top", "--prometheus", prom, "--lookback", "30", "-o", "json")
        assert r.exit_code == 0, r.stderr
        rows = json.loads(r.stdout)
        if len(rows) >= len(THROTTLED) or time.monotonic() > deadline:
            break
        time.sleep(1)
    _check_throttled(rows)
    r = run_cli("--bootstrap-server", bs, "top", "--prometheus", prom, "-o", "json")  # instant query
    assert r.exit_code == 0, r.stderr
    assert set(_quota_ids(json.loads(r.stdout))) <= set(THROTTLED)

    # the traffic is over: the producers' throttle times still average their throttles (for a minute), but within
    # a quota window (11 s) their usage drains under the limits: history, not a throttle now
    time.sleep(12)
    r = run_cli("--bootstrap-server", bs, "top", "--scrape", observed_kraft.exporter, "--all", "-o", "json")
    assert r.exit_code == 0, r.stderr
    after = _quota_ids(json.loads(r.stdout))
    for qid in (("", "slow"), ("ANONYMOUS", "pair-app")):
        [use] = [u for u in after[qid]["quotas"] if u["key"] == "producer_byte_rate"]
        assert use["throttle"] == "past" and not after[qid]["throttled"], after[qid]
        assert all(b["throttle_ms"] > 0 for b in use["brokers"].values())
    r = run_cli("--bootstrap-server", bs, "top", "--scrape", observed_kraft.exporter, "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert not {("", "slow"), ("ANONYMOUS", "pair-app")} & set(_quota_ids(json.loads(r.stdout)))


ODD = 'odd,id="1"'  # the broker JMX-quotes this client-id in its MBean name; top shows it as it is


@pytest.mark.zookeeper
def test_top_on_a_zookeeper_mode_broker(observed_zk_kafka, zk_server):
    """Kafka 3.9 (ZooKeeper mode, the Scala quota managers): limits read from ZooKeeper, sensors scraped."""
    zk = ["--zookeeper", f"{zk_server.connect}/kafka39top"]
    quotas = [*QUOTAS, (["--client-id", ODD], "producer_byte_rate=20000")]
    threads = _traffic(zk, observed_zk_kafka.bootstrap, quotas, [*CLIENTS, ODD])
    r = run_cli(*zk, "top", "--scrape", observed_zk_kafka.exporter, "-o", "json")
    _join(threads)
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    got = _quota_ids(rows)
    assert set(got) == {*THROTTLED, ("", ODD)}, rows
    [use] = [u for u in got[("", ODD)]["quotas"] if u["key"] == "producer_byte_rate"]
    assert (use["limit"], use["level"], use["entity_path"]) == (20000, 7, "clients/odd%2Cid%3D%221%22")
    _check_throttled([row for row in rows if row["quota_id"].get("client-id") != ODD])
    [mutation] = [u for u in got[("", "mutator")]["quotas"] if u["key"] == "controller_mutation_rate"]
    assert mutation["throttle_ms"] > 0 and "note" not in mutation  # a ZooKeeper-mode broker throttles it itself


@pytest.mark.prometheus
def test_a_throttled_ip_connection_shows_on_its_listener(observed_kraft, tmp_path):
    """KIP-612: over its connection_creation_rate, an ip's new connection is throttled and taken back out of the ip's
    rate; only the listener's ip-connection-accept-throttle-time records it, and top shows it there."""
    import socket

    bs = observed_kraft.bootstrap
    r = run_cli("--bootstrap-server", bs, "alter", "--ip", "127.0.0.1", "--add-config", "connection_creation_rate=2")
    assert r.exit_code == 0, r.stderr
    time.sleep(1)
    host, port = bs.rsplit(":", 1)
    conns = [socket.create_connection((host, int(port)), timeout=5) for _ in range(30)]
    time.sleep(1)
    try:
        # the limits from a manifest: top's own admin connection would be throttled too
        limits = tmp_path / "ip.yaml"
        limits.write_text("quotas:\n- entity: {ip: 127.0.0.1}\n  config: {connection_creation_rate: 2}\n")
        r = run_cli("top", "--scrape", observed_kraft.exporter, "-f", str(limits), "-o", "json")
        assert r.exit_code == 0, r.stderr
        got = _quota_ids(json.loads(r.stdout))
        [use] = got[("listener", "PLAINTEXT")]["quotas"]
        assert use["throttle_ms"] > 0 and use["throttle"] == "recent" and use["limit"] is None, use
        assert ("127.0.0.1",) not in got  # the ip's own row: its rate never shows the throttled connections
    finally:
        for c in conns:
            c.close()
        deadline = time.monotonic() + 30
        cfg = "connection_creation_rate=500"
        restore = ("--bootstrap-server", bs, "alter", "--ip", "127.0.0.1", "--add-config", cfg)
        while time.monotonic() < deadline:  # once the ip's rate is back under 2/s, the admin connection gets in
            if run_cli(*restore).exit_code == 0:
                break
            time.sleep(2)
