"""The exporter's rows (observe/exposition.py) for hand-built quota sets and sensors, and its exposition as
prometheus_client serves and parses it: no server, no cluster."""

from __future__ import annotations

import pytest

from kquotactl.backends.zookeeper.codec import encode_notification
from kquotactl.backends.zookeeper.watch import notified_entity
from kquotactl.core.budget import per_broker
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.keys import KEYS
from kquotactl.core.manifest import Manifest, ManifestEntry, Source
from kquotactl.core.precedence import QuotaIndex
from kquotactl.observe.exposition import PREFIX, build, manifest_drift
from kquotactl.observe.throttled import Sample

PRODUCE, FETCH, CONNS = "producer_byte_rate", "consumer_byte_rate", "connection_creation_rate"

RECORDS = [
    QuotaRecord(Entity(user="alice@corp", client_id="app"), {PRODUCE: 1000}),  # level 1
    QuotaRecord(Entity(user=DEFAULT), {PRODUCE: 500, FETCH: 2000}),  # level 6 (users/<default>)
    QuotaRecord(Entity(client_id="billing"), {FETCH: 300}),  # level 7
    QuotaRecord(Entity(ip=DEFAULT), {CONNS: 10}),  # ips/<default>: level 2
    QuotaRecord(Entity(ip="10.0.0.1"), {CONNS: 4}),  # level 1
]

SAMPLES = [
    # alice@corp/app: the broker's tags are the sanitized user and the raw client-id
    Sample("byte_rate", "b1:7071", 1500.0, "Produce", user="alice%40corp", client_id="app"),
    Sample("throttle_time", "b1:7071", 250.0, "Produce", user="alice%40corp", client_id="app"),
    Sample("byte_rate", "b2:7071", 500.0, "Produce", user="alice%40corp", client_id="app"),
    Sample("throttle_time", "b2:7071", 0.0, "Produce", user="alice%40corp", client_id="app"),
    # bob: users/<default> (level 5)
    Sample("byte_rate", "b1:7071", 100.0, "Fetch", user="bob", client_id="x"),
    Sample("throttle_time", "b1:7071", 0.0, "Fetch", user="bob", client_id="x"),
    # a client-id quota-id, JMX-quoted by the broker
    Sample("byte_rate", "b1:7071", 150.0, "Fetch", client_id='"a,b"'),
    # the ips: 10.0.0.1 own level, 10.0.0.2 the default
    Sample("connection_accept_rate", "b1:7071", 2.0, ip="10.0.0.1"),
    Sample("connection_accept_rate", "b1:7071", 5.0, ip="10.0.0.2"),
    # a listener's ip throttle names no quota-id: not served
    Sample("ip_connection_accept_throttle_time", "b1:7071", 3.0, listener="PLAINTEXT"),
]


def _rows(exp, name: str, labels: tuple[str, ...]) -> dict[tuple[str, ...], float]:
    from kquotactl.observe.exposition import FAMILIES

    names = FAMILIES[PREFIX + name][1]
    return {tuple(dict(zip(names, v, strict=True))[k] for k in labels): x for v, x in exp.families[PREFIX + name]}


def test_limits_levels_and_entities_as_explain_resolves_them() -> None:
    index = QuotaIndex(RECORDS)
    exp = build(RECORDS, index, SAMPLES)
    limits = _rows(exp, "limit", ("quota_type", "user", "client_id", "ip", "key", "level", "entity"))
    assert limits == {
        ("Produce", "alice@corp", "app", "", PRODUCE, "1", "users/alice@corp/clients/app"): 1000.0,
        ("Fetch", "bob", "x", "", FETCH, "6", "users/<default>"): 2000.0,
        ("", "", "", "10.0.0.1", CONNS, "1", "ips/10.0.0.1"): 4.0,
        ("", "", "", "10.0.0.2", CONNS, "2", "ips/<default>"): 10.0,
    }  # the client-id "a,b" is unlimited for fetch (only client-id billing has a limit): no limit series
    for (_, user, client, ip, key, level, _), value in limits.items():  # explain's resolution, each
        res = index.resolve_ip(ip, key) if ip else index.resolve(key, user, client)
        assert (str(res.level), res.limit) == (level, value)
    assert exp.quota_ids == 5 and exp.entities == len(RECORDS)


def test_usage_utilization_and_throttle_per_broker() -> None:
    exp = build(RECORDS, QuotaIndex(RECORDS), SAMPLES)
    usage = _rows(exp, "usage", ("broker", "user", "client_id", "ip"))
    ratio = _rows(exp, "utilization_ratio", ("broker", "user", "client_id", "ip"))
    throttle = _rows(exp, "throttle_time_seconds", ("broker", "quota_type", "user", "client_id"))
    assert usage[("b1:7071", "alice@corp", "app", "")] == 1500.0 and usage[("b2:7071", "alice@corp", "app", "")] == 500
    assert ratio[("b1:7071", "alice@corp", "app", "")] == pytest.approx(1.5)  # per broker, not summed
    assert ratio[("b2:7071", "alice@corp", "app", "")] == pytest.approx(0.5)
    assert ratio[("b1:7071", "bob", "x", "")] == pytest.approx(100 / 2000)
    assert ratio[("b1:7071", "", "", "10.0.0.2")] == pytest.approx(0.5)
    assert usage[("b1:7071", "", "a,b", "")] == 150.0  # JMX-unquoted
    assert ("b1:7071", "", "a,b", "") not in ratio  # unlimited: no ratio
    assert throttle[("b1:7071", "Produce", "alice@corp", "app")] == pytest.approx(0.25)  # ms -> s
    assert all(qtype for _, qtype, _, _ in throttle)  # no per-ip throttle time: only its listener has one
    assert not [v for v, _ in exp.families[PREFIX + "usage"] if "PLAINTEXT" in v]


def test_configured_defaults_budgets_and_drift() -> None:
    exp = build(RECORDS, QuotaIndex(RECORDS))
    configured = _rows(exp, "configured", ("entity", "user", "client_id", "ip", "key"))
    assert configured[("users/<default>", "<default>", "", "", FETCH)] == 2000.0
    assert configured[("users/alice@corp/clients/app", "alice@corp", "app", "", PRODUCE)] == 1000.0
    assert configured[("ips/<default>", "", "", "<default>", CONNS)] == 10.0
    assert len(configured) == 6 and not exp.families[PREFIX + "limit"]  # no sensor: no active quota-id

    team = Entity(user="team-a")
    shares = {team: [per_broker(KEYS[PRODUCE], 1000, 3)]}
    manifest = Manifest()
    manifest.add(ManifestEntry(team, {PRODUCE: 333}, Source("q.yaml", 1)))
    manifest.add(ManifestEntry(Entity(client_id="billing"), {FETCH: 300}, Source("q.yaml", 2)))
    manifest.add(ManifestEntry(Entity(user="alice@corp", client_id="app"), {PRODUCE: 2000}, Source("q.yaml", 3)))
    exp = build(RECORDS, QuotaIndex(RECORDS), budgets=shares, drift=manifest_drift(manifest, RECORDS))
    assert _rows(exp, "configured_per_broker", ("entity", "key")) == {("users/team-a", PRODUCE): 333.0}
    assert _rows(exp, "drift", ("entity", "key")) == {
        ("users/team-a", PRODUCE): 1.0,  # not in the cluster
        ("clients/billing", FETCH): 0.0,  # as declared
        ("users/alice@corp/clients/app", PRODUCE): 1.0,  # another value
    }


def test_the_collector_serves_what_the_parser_reads() -> None:
    """The families as prometheus_client writes them, read back by its parser: every row, typed gauges."""
    from prometheus_client import generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    from kquotactl.services.exporter import Exporter

    class Fixed:
        def __call__(self):  # the exporter opens nothing here: the state is set by hand
            raise AssertionError

    ex = Exporter(Fixed(), listen=("127.0.0.1", 0))
    ex._state.records = {r.entity: r for r in RECORDS}
    ex._state.samples = {"b": SAMPLES}
    ex.rebuild()
    got = {f.name: f for f in text_string_to_metric_families(generate_latest(ex.registry).decode())}
    limit = got[PREFIX + "limit"]
    assert limit.type == "gauge" and len(limit.samples) == 4
    assert {s.labels["level"] for s in limit.samples} == {"1", "2", "6"}
    assert got["kquotactl_exporter_entities"].samples[0].value == len(RECORDS)
    assert got["kquotactl_exporter_up"].samples[0].labels == {"source": "quotas"}
    assert "process_cpu_seconds" in got and "python_info" in got
    assert got["kquotactl_exporter_scrape_duration_seconds"].samples[0].value == 0  # none before this one
    again = {f.name: f for f in text_string_to_metric_families(generate_latest(ex.registry).decode())}
    assert again["kquotactl_exporter_scrape_duration_seconds"].samples[0].value > 0


@pytest.mark.parametrize(
    ("data", "entity"),
    [
        (encode_notification("users/alice%40corp/clients/app"), Entity(user="alice@corp", client_id="app")),
        (b'{"version":1,"entity_type":"clients","entity_name":"billing"}', Entity(client_id="billing")),
        (encode_notification("ips/<default>"), Entity(ip=DEFAULT)),
        (encode_notification("topics/t1"), None),  # not a quota entity
        (b"not json", None),
    ],
)
def test_change_notifications_name_their_entity(data: bytes, entity: Entity | None) -> None:
    assert notified_entity(data) == entity


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--scrape", "b1:7071", "--prometheus", "http://p:9090"], "either --prometheus URL or --scrape URL"),
        (["--listen", "9798"], "--listen '9798' is not HOST:PORT"),
        (["--refresh", "500ms"], "--refresh '500ms'"),
        (["--refresh", "2d"], "--refresh '2d': give between 1s and 24h"),
        (["--sensor-interval", "soon"], "--sensor-interval 'soon' is not a duration"),
    ],
)
def test_operator_mistakes_are_one_line_before_anything_starts(args: list[str], words: str) -> None:
    from conftest import run_cli

    r = run_cli("--bootstrap-server", "127.0.0.1:1", "exporter", *args)
    assert r.exit_code == 1 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_listen_address_in_use_is_one_line() -> None:
    import socket

    from conftest import run_cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_cli("--bootstrap-server", "127.0.0.1:1", "exporter", "--listen", f"127.0.0.1:{port}")
    assert r.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
