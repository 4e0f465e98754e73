"""``kquotactl verify`` and ``apply --verify`` against real brokers: a KRaft 4.x broker (each broker asked with
DescribeClientQuotas, a producer over the SASL/SCRAM listener) and a ZooKeeper-mode 3.9 broker (the znode; a driven
producer shows what the broker really applies).

The drives are short (5 s): a fresh quota-id at 100 kB/s over a 20 kB/s limit is first throttled after 2 s (the
sensor's 10 s padded window fills with 200 kB)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from conftest import run_cli, write_manifest

pytestmark = pytest.mark.kafka

SCRAM = (
    "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="{user}" password="{password}";\n'
)


def _alter(cluster: list[str], *args: str) -> None:
    r = run_cli(*cluster, "alter", *args)
    assert r.exit_code == 0, r.stderr


def test_verify_waits_until_every_broker_reports_the_change(kraft) -> None:
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.core.changes import EntityChange
    from kquotactl.core.entities import Entity

    cluster = ["--bootstrap-server", kraft.bootstrap]
    _alter(cluster, "--client-id", "v-wait", "--add-config", "producer_byte_rate=20000")
    r = run_cli(*cluster, "verify", "--client-id", "v-wait", "-o", "json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["converged"] and out["lagging"] == [] and out["expected"] == {"producer_byte_rate": 20000}
    assert out["brokers"] == [{"broker": "broker 1", "config": {"producer_byte_rate": 20000}}]
    assert out["source"] == "DescribeClientQuotas sent to each broker"

    # a change made while verify waits for it: verify returns once the broker reports it
    def change() -> None:  # not through run_cli: CliRunner swaps the process's stdout, one at a time
        with AdminBackend.connect(kraft.bootstrap) as b:
            b.alter([EntityChange(Entity(client_id="v-wait"), {"producer_byte_rate": 30000})])

    later = threading.Timer(1.5, change)
    later.start()
    try:
        r = run_cli(*cluster, "verify", "--client-id", "v-wait", "--expect", "producer_byte_rate=30000", "-o", "json")
    finally:
        later.join()
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["converged"] and 1.0 < out["waited_s"] < 15, out


def test_verify_times_out_naming_the_broker_and_what_it_reports(kraft) -> None:
    cluster = ["--bootstrap-server", kraft.bootstrap]
    _alter(cluster, "--user", "v-late", "--add-config", "producer_byte_rate=20000")
    start = time.monotonic()
    r = run_cli(*cluster, "verify", "--user", "v-late", "--expect", "producer_byte_rate=5000", "--timeout", "1")
    # --timeout is the option that bounds every request: here, the wait
    assert r.exit_code == 2, r.stderr
    assert 1 <= time.monotonic() - start < 10
    [line] = r.stderr.strip().splitlines()
    assert "not applied everywhere after" in line and "expected producer_byte_rate=5000" in line
    assert "broker 1 reports producer_byte_rate=20000" in line, line

    # an entity with no quotas and nothing expected: a one-line error, exit 1
    r = run_cli(*cluster, "verify", "--user", "nobody-here")
    assert r.exit_code == 1
    assert r.stderr == (
        "kquotactl: error: no such entity: user=nobody-here has no quotas (give --expect to wait for values)\n"
    )


def test_a_driven_producer_over_sasl_is_throttled_as_simulated(kraft, tmp_path) -> None:
    cfg = tmp_path / "client.properties"
    cfg.write_text(SCRAM.format(user=kraft.scram_user, password=kraft.scram_password))
    cluster = ["--bootstrap-server", kraft.sasl_bootstrap, "--command-config", str(cfg)]
    entity = ["--user", kraft.scram_user, "--client-id", "v-drive"]
    _alter(cluster, *entity, "--add-config", "producer_byte_rate=20000")
    r = run_cli(*cluster, "verify", *entity, "--drive", "100000", "--seconds", "5", "-o", "json")
    assert r.exit_code == 0, r.stderr
    drive = json.loads(r.stdout)["drive"]
    assert drive["agrees"] and drive["limit"] == 20000, drive
    # 200 kB in the padded 10 s window after 2 s: the first throttle comes then, on the broker as simulated
    assert 1700 <= drive["simulated"]["first_throttle_at_ms"] <= 2300, drive
    assert abs(drive["broker"]["first_throttle_at_ms"] - drive["simulated"]["first_throttle_at_ms"]) <= 300, drive
    assert drive["broker"]["first_throttle_ms"] > 0 and drive["broker"]["max_throttle_ms"] > 0, drive
    assert drive["steady_state_throttle_ms"] == 44000  # explain --observed: (100000 − 20000) / 20000 × 11 s


def test_apply_verify_checks_every_changed_entity(kraft, tmp_path) -> None:
    cluster = ["--bootstrap-server", kraft.bootstrap]
    path = write_manifest(
        tmp_path,
        """\
        quotas:
          - entity: {user: v-apply}
            config: {producer_byte_rate: 1048576}
          - entity: {client-id: v-apply}
            config: {consumer_byte_rate: 2048}
        """,
    )
    r = run_cli(*cluster, "apply", "-f", path, "--yes", "--verify", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert "verified: 2 entities reported by every broker (DescribeClientQuotas sent to each broker)" in r.stderr
    r = run_cli(*cluster, "apply", "-f", path, "--yes", "--verify", "--verify-sample", "1", "--dry-run")
    assert r.exit_code == 1 and "--dry-run applies nothing" in r.stderr


@pytest.mark.zookeeper
def test_zookeeper_mode_a_znode_written_without_notification_fails_the_drive(zkmode) -> None:
    """The znode says 20 kB/s but no change notification was written: the broker keeps applying 100 kB/s. Step 1
    (the znode) passes; the driven producer shows the broker never applied it: exit 2, both figures shown."""
    from kazoo.client import KazooClient

    cluster = ["--zookeeper", zkmode.zookeeper]
    _alter(cluster, "--client-id", "v-zk", "--add-config", "producer_byte_rate=100000")
    r = run_cli(*cluster, "verify", "--client-id", "v-zk", "--expect", "producer_byte_rate=100000", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["source"] == "the ZooKeeper znode brokers read"
    time.sleep(0.5)  # the broker consumes the notification

    zk = KazooClient(zkmode.zookeeper)
    zk.start(timeout=10)
    try:
        zk.set("/config/clients/v-zk", json.dumps({"version": 1, "config": {"producer_byte_rate": "20000"}}).encode())
    finally:
        zk.stop()
        zk.close()
    # 8 s: long enough that even a sensor whose window began a quota window before the drive (one an exporter read
    # while idle, which verify cannot rule out without --scrape) would be throttled by 20 kB/s: a sure "disagrees"
    args = ["verify", "--client-id", "v-zk", "--drive", "60000", "--seconds", "8", "-o", "json"]
    r = run_cli(*cluster, *args, "--drive-bootstrap", zkmode.bootstrap)
    assert r.exit_code == 2, r.stderr
    drive = json.loads(r.stdout)["drive"]
    assert not drive["agrees"] and drive["limit"] == 20000
    assert drive["simulated"]["first_throttle_at_ms"] is not None  # 20 kB/s would throttle after ~3.3 s ...
    assert drive["broker"]["first_throttle_at_ms"] is None  # ... the broker, still at 100 kB/s, never did
    assert "disagrees with the simulation" in r.stderr and "broker none" in r.stderr, r.stderr


@pytest.mark.prometheus
def test_two_drives_back_to_back_both_agree(observed_kraft) -> None:
    """A quota-id that already carries traffic (here the previous drive, still inside the broker's 11 s window)
    would be throttled sooner than a fresh one: verify reads its sensors and waits until its window is clean
    (--scrape), or waits a quota window when it cannot read them; a correct quota is never "disagrees"."""
    bs = observed_kraft.bootstrap
    _alter(["--bootstrap-server", bs], "--client-id", "v-twice", "--add-config", "producer_byte_rate=20000")
    drive = ["verify", "--client-id", "v-twice", "--drive", "100000", "--seconds", "4", "-o", "json"]
    for sensors in (["--scrape", observed_kraft.exporter], ["--prometheus", observed_kraft.prometheus.url]):
        start = time.monotonic()
        r = run_cli("--bootstrap-server", bs, *drive, *sensors)
        assert r.exit_code == 0, (sensors, r.stdout)
        out = json.loads(r.stdout)["drive"]
        assert out["agrees"] and out["limit"] == 20000, out
        assert 1700 <= out["broker"]["first_throttle_at_ms"] <= 3000, out
        quiet = out["quiet"]
        assert quiet["waited_s"] <= time.monotonic() - start and quiet["busy"] == {}, quiet
    assert quiet["waited_s"] >= 5 and quiet["sensor_existed"], quiet  # the first drive was still in its window
    assert out["simulated"]["idle_window_start_band_ms"] == 12000  # an idle sensor, scraped: its window began earlier

    # without the sensors: a quota window waited (the previous drive is out of it), and the broker's throttle is
    # either the fresh sensor's or, as the sensor was scraped while idle, "cannot tell": never "disagrees"
    r = run_cli("--bootstrap-server", bs, *drive)
    out = json.loads(r.stdout)["drive"]
    assert out["quiet"]["how"].startswith("no sensors") and out["quiet"]["waited_s"] >= 11, out
    assert (r.exit_code, out["agrees"]) == (0, True) or (r.exit_code, out["inconclusive"]) == (2, True), r.stderr
    assert "disagrees" not in r.stderr

    # a lower limit, right after: verify waits until the last drive is out of the window, and the new limit agrees
    _alter(["--bootstrap-server", bs], "--client-id", "v-twice", "--add-config", "producer_byte_rate=5000")
    r = run_cli("--bootstrap-server", bs, *drive, "--scrape", observed_kraft.exporter)
    assert r.exit_code == 0 and json.loads(r.stdout)["drive"]["limit"] == 5000, r.stderr
