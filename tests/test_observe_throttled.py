"""``kquotactl top``'s pure model (sensors joined with limits) and the exporter scrape, without a broker."""

from __future__ import annotations

import math

import pytest

from conftest import run_cli
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.precedence import QuotaIndex
from kquotactl.observe.prometheus import broker_of, metrics_url, scrape
from kquotactl.observe.throttled import Sample, jmx_unquote, stage_regressions, top_rows

INDEX = QuotaIndex(
    {
        Entity(user="alice@corp"): {"producer_byte_rate": 1000},
        Entity(user="alice@corp", client_id="etl"): {"consumer_byte_rate": 5000},
        Entity(client_id=DEFAULT): {"producer_byte_rate": 2000, "request_percentage": 25},
        Entity(ip="10.0.0.1"): {"connection_creation_rate": 7},
    }
)


def test_jmx_unquote_undoes_objectname_quote() -> None:
    assert jmx_unquote("plain-id") == "plain-id"
    assert jmx_unquote('"a,b=c"') == "a,b=c"
    assert jmx_unquote(r'"q\"s\\t\*\?\n"') == 'q"s\\t*?\n'
    assert jmx_unquote('"') == '"'


def test_rows_join_each_quota_id_with_its_limit_and_level() -> None:
    samples = [
        # user-level quota-id: the broker's tag is the sanitized user, no client-id
        Sample("byte_rate", "b1:7071", 1500.0, "Produce", user="alice%40corp"),
        Sample("throttle_time", "b1:7071", 400.0, "Produce", user="alice%40corp"),
        Sample("byte_rate", "b2:7071", 900.0, "Produce", user="alice%40corp"),
        Sample("throttle_time", "b2:7071", math.nan, "Produce", user="alice%40corp"),
        # client-id level (default): a JMX-quoted client-id
        Sample("byte_rate", "b1:7071", 100.0, "Produce", client_id='"x,y"'),
        Sample("throttle_time", "b1:7071", 0.0, "Produce", client_id='"x,y"'),
        Sample("request_time", "b1:7071", 30.0, "Request", client_id='"x,y"'),
        Sample("throttle_time", "b1:7071", 12.0, "Request", client_id='"x,y"'),
        # pair level, fetch: not throttled
        Sample("byte_rate", "b1:7071", 10.0, "Fetch", user="alice%40corp", client_id="etl"),
        Sample("connection_accept_rate", "b1:7071", 3.0, ip="10.0.0.1"),
        Sample("queue_size", "b1:7071", 3.0, "Produce"),  # not a per-quota-id sensor
    ]
    rows = top_rows(samples, INDEX)
    assert [r.quota_id.words() for r in rows] == [
        "user alice@corp",
        "client-id x,y",
        "user alice@corp, client-id etl",
        "ip 10.0.0.1",
    ]
    alice, xy, etl, ip = rows
    [use] = alice.uses
    assert (use.key, use.usage, use.throttle_ms, use.limit, use.resolution.level) == (
        "producer_byte_rate",
        2400.0,
        400.0,
        1000,
        3,
    )
    assert use.to_json()["entity_path"] == "users/alice%40corp"
    assert use.to_json()["brokers"] == {
        "b1:7071": {"usage": 1500.0, "throttle_ms": 400.0, "throttle": "now"},  # usage over the limit: now
        "b2:7071": {"usage": 900.0, "throttle_ms": 0.0, "throttle": None},  # NaN: no throttle in the window
    }
    assert [(u.key, u.limit, u.resolution.level) for u in xy.uses] == [
        ("request_percentage", 25, 8),  # the throttled one first
        ("producer_byte_rate", 2000, 8),
    ]
    assert xy.throttled and xy.throttle_ms == 12.0
    assert (ip.uses[0].key, ip.uses[0].limit, ip.uses[0].resolution.level) == ("connection_creation_rate", 7, 1)
    assert not etl.throttled
    assert (etl.uses[0].key, etl.uses[0].limit, etl.uses[0].resolution.level) == ("consumer_byte_rate", 5000, 1)
    assert etl.to_json()["quota_id"] == {"user": "alice@corp", "client-id": "etl"}


def test_a_user_label_that_is_no_sanitized_name_is_shown_as_written() -> None:
    [row] = top_rows([Sample("byte_rate", "b", 5.0, "Produce", user="50%zz")], INDEX)
    assert row.quota_id.user == "50%zz"


def test_a_request_throttle_without_a_request_limit_is_the_controllers() -> None:
    """KRaft: the controller's controller_mutation_rate throttle comes back on the broker's Request sensor."""
    samples = [
        Sample("throttle_time", "b", 3330.0, "Request", client_id="c"),
        Sample("mutation_rate", "b", 0.4, "ControllerMutation", client_id="c"),
        Sample("throttle_time", "b", 0.0, "ControllerMutation", client_id="c"),
    ]
    [row] = top_rows(samples, INDEX)
    req, mutation = row.uses
    assert req.key == "request_percentage" and req.limit == 25  # clients/<default> limits requests here
    assert req.note is None
    index = QuotaIndex({Entity(client_id="c"): {"controller_mutation_rate": 1}})
    [row] = top_rows(samples, index)
    req, mutation = row.uses
    assert req.limit is None and "controller" in (req.to_json()["note"] or "")
    assert (mutation.key, mutation.limit, mutation.resolution.level) == ("controller_mutation_rate", 1, 7)
    assert "note" not in mutation.to_json()


def test_an_unlimited_quota_id_says_so() -> None:
    [row] = top_rows([Sample("byte_rate", "b", 5.0, "Fetch", client_id="c")], INDEX)
    assert row.uses[0].to_json()["limit"] is None and row.uses[0].to_json()["applies"] == "unlimited"


def test_scrape_reads_the_quota_series_of_an_exporter(exporter: str) -> None:
    samples = scrape([exporter])
    assert sorted((s.metric, s.client_id, s.value, s.broker) for s in samples) == [
        ("byte_rate", 'a "b"', 2500.0, exporter),
        ("throttle_time", 'a "b"', 250.0, exporter),
    ]


def test_exporter_addresses() -> None:
    assert metrics_url("b1:7071") == "http://b1:7071/metrics"
    assert metrics_url("https://b1:7071/") == "https://b1:7071/metrics"
    assert metrics_url("http://b1:7071/custom") == "http://b1:7071/custom"
    assert broker_of("http://b1:7071/metrics") == "b1:7071"


def test_top_errors_are_one_line() -> None:
    r = run_cli("--bootstrap-server", "127.0.0.1:9", "top", "--scrape", "127.0.0.1:9", "-o", "json")
    assert r.exit_code != 0 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("kquotactl: error: http://127.0.0.1:9/metrics: cannot reach it")
    r = run_cli("--bootstrap-server", "127.0.0.1:9", "top", "-o", "json")
    assert r.exit_code == 1 and "--prometheus URL or --scrape URL" in r.stderr
    r = run_cli("--bootstrap-server", "127.0.0.1:9", "top", "--scrape", "x:1", "--lookback", "5")
    assert r.exit_code == 1 and "--lookback" in r.stderr


@pytest.mark.zookeeper
def test_watch_refreshes_a_live_table_until_interrupted(exporter: str, chroot) -> None:
    """``--watch`` on a terminal: the table is redrawn in place (rich Live) and Ctrl-C ends it cleanly."""
    import os
    import pty
    import signal
    import subprocess
    import sys
    import time

    r = run_cli(
        "--zookeeper", chroot.connect, "alter", "--client-id", 'a "b"', "--add-config", "producer_byte_rate=2000"
    )
    assert r.exit_code == 0, r.stderr
    main, child = pty.openpty()
    cmd = [sys.executable, "-m", "kquotactl", "--zookeeper", chroot.connect, "top", "--scrape", exporter]
    env = {**os.environ, "COLUMNS": "200"}  # a pty opens 0x0: rich would assume 80 columns
    proc = subprocess.Popen([*cmd, "--watch", "0.5"], stdin=child, stdout=child, stderr=child, env=env)
    os.close(child)
    seen = b""
    deadline = time.monotonic() + 30
    try:
        while seen.count(b"throttled quota-ids") < 3 and time.monotonic() < deadline:
            try:
                seen += os.read(main, 65536)
            except OSError:
                break
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    text = seen.decode(errors="replace")
    assert text.count("throttled quota-ids") >= 3  # the first draw and two refreshes
    assert "client-id 'a \"b\"'" in text and "2.44 KiB/s" in text and "1.95 KiB/s (2000)" in text
    assert "7 clients/'a \"b\"'" in text  # the level names the entity as plan does


def test_a_throttle_time_alone_is_not_a_throttle_now() -> None:
    """throttle-time averages over a minute: a produce throttle with its usage well under the limit is history;
    a fetch's throttled bytes are un-recorded, so its usage cannot tell (recent)."""

    def row(samples: list[Sample]) -> dict:
        [r] = top_rows(samples, INDEX)
        return r.to_json()

    past = row([Sample("byte_rate", "b", 500.0, "Produce", user="alice%40corp"), _throttle("Produce", 4000.0)])
    assert (past["throttled"], past["throttle"], past["throttle_ms"]) == (False, "past", 0.0)
    assert past["quotas"][0]["brokers"]["b"] == {"usage": 500.0, "throttle_ms": 4000.0, "throttle": "past"}
    now = row([Sample("byte_rate", "b", 950.0, "Produce", user="alice%40corp"), _throttle("Produce", 4000.0)])
    assert (now["throttled"], now["throttle"], now["throttle_ms"]) == (True, "now", 4000.0)
    ranged = Sample("byte_rate", "b", 500.0, "Produce", user="alice%40corp", peak=1200.0)  # --lookback: the peak
    assert row([ranged, _throttle("Produce", 4000.0)])["throttle"] == "now"
    fetch = row([Sample("byte_rate", "b", 0.0, "Fetch", user="alice%40corp"), _throttle("Fetch", 300.0)])
    assert (fetch["throttled"], fetch["throttle"]) == (True, "recent")


def _throttle(qtype: str, ms: float, broker: str = "b") -> Sample:
    return Sample("throttle_time", broker, ms, qtype, user="alice%40corp")


def test_ip_rows_read_quoted_addresses_and_name_ip_levels() -> None:
    index = QuotaIndex(
        {Entity(ip="::1"): {"connection_creation_rate": 9}, Entity(ip=DEFAULT): {"connection_creation_rate": 5}}
    )
    samples = [
        Sample("connection_accept_rate", "b", 3.0, ip='"0:0:0:0:0:0:0:1"'),  # JmxReporter quotes an IPv6 address
        Sample("connection_accept_rate", "b", 2.0, ip="10.0.0.2"),
        Sample("ip_connection_accept_throttle_time", "b", 250.0, listener="PLAINTEXT"),
    ]
    rows = {r.quota_id.words(): r for r in top_rows(samples, index)}
    assert list(rows) == ["ip connections on listener PLAINTEXT", "ip 0:0:0:0:0:0:0:1", "ip 10.0.0.2"]
    one, two = rows["ip 0:0:0:0:0:0:0:1"].uses[0].to_json(), rows["ip 10.0.0.2"].uses[0].to_json()
    assert (one["limit"], one["level"], one["level_pattern"]) == (9, 1, "ips/<ip>")
    assert (two["limit"], two["level"], two["level_pattern"]) == (5, 2, "ips/<default>")
    listener = rows["ip connections on listener PLAINTEXT"]
    assert listener.throttled and listener.to_json()["quota_id"] == {"listener": "PLAINTEXT"}
    [use] = listener.to_json()["quotas"]
    assert (use["key"], use["throttle_ms"], use["throttle"]) == ("connection_creation_rate", 250.0, "recent")
    assert use["applies"].startswith("the ip's own limit") and "back out" in use["note"]


def test_a_stage_is_not_blamed_for_a_throttle_time_that_is_history() -> None:
    """A stage that raises a limit: the throttle-time average still holds the throttle from before it."""
    low = QuotaIndex({Entity(user="alice@corp"): {"producer_byte_rate": 1000, "consumer_byte_rate": 1000}})
    high = QuotaIndex({Entity(user="alice@corp"): {"producer_byte_rate": 5000, "consumer_byte_rate": 5000}})
    usage = [Sample("byte_rate", "b", 1000.0, "Produce", user="alice%40corp")]
    fetch = [Sample("byte_rate", "b", 0.0, "Fetch", user="alice%40corp")]
    before = top_rows([*usage, _throttle("Produce", 3000.0), *fetch, _throttle("Fetch", 3000.0)], low)
    after = top_rows([*usage, _throttle("Produce", 3000.0), *fetch, _throttle("Fetch", 3000.0)], high)
    assert stage_regressions(before, after) == []  # both averages are the old throttle
    moved = top_rows([*usage, _throttle("Produce", 3000.0), *fetch, _throttle("Fetch", 3500.0)], high)
    [worse] = stage_regressions(before, moved)  # a new fetch throttle, where none is predicted at 5000
    assert worse.startswith("user alice@corp: consumer_byte_rate throttled 3500 ms on broker b")


def test_the_traffic_table_holds_an_ipv6_address_unquoted() -> None:
    from kquotactl.observe.throttled import traffic_columns

    cols = traffic_columns([Sample("connection_accept_rate", "b", 2.0, ip='"0:0:0:0:0:0:0:1"', ts=10.0)], 1.0, 1)
    assert cols["ip"] == ["0:0:0:0:0:0:0:1"] and cols["ts"] == [9.0]
