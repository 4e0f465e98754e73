"""explain, top and connection-rate called from Python, without click: each service gives what its command prints
(the command only parses, calls it and renders), on the inputs the CLI tests use."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import run_cli, write_manifest
from kquotactl.cli.errorwords import worded
from kquotactl.core.errors import MissingInput, QuotaError
from kquotactl.core.explain import Connection, ThrottleModel
from kquotactl.inputs import read_connections
from kquotactl.services.explain import example_quota_set, explain, explain_many
from kquotactl.services.quotas import load_quota_set
from kquotactl.services.top import top

MANIFEST = """
quotas:
  - entity: {user: userA}
    config: {producer_byte_rate: 4000, controller_mutation_rate: 7.5}
  - entity: {user: userA, client-id: client1}
    config: {producer_byte_rate: 5000}
  - entity: {client-id: <default>}
    config: {producer_byte_rate: 2000, consumer_byte_rate: 500}
  - entity: {client-id: slow}
    config: {producer_byte_rate: 20000}
  - entity: {ip: <default>}
    config: {connection_creation_rate: 20}
"""
CONNECTIONS = [Connection.of("userA", "client1"), Connection.of("userA", "x"), Connection.of(ip="10.0.0.1")]


def test_explain_one_connection_is_what_the_command_prints(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = write_manifest(tmp_path, MANIFEST)
    loads: list[int] = []

    def quotas():  # type: ignore[no-untyped-def]
        loads.append(1)
        return load_quota_set([path]).index

    throttle = ThrottleModel({"producer_byte_rate": 12000.0})
    done = explain(quotas, Connection.of("userA", "client1"), throttle, cluster_wide=True, brokers=3)
    assert loads == [1] and done.brokers == 3
    assert [(qk.name, limit) for qk, limit in done.cluster_limits] == [
        ("producer_byte_rate", 5000),
        ("consumer_byte_rate", 500),
        ("controller_mutation_rate", 7.5),
    ]
    argv = ["explain", "-f", path, "--user", "userA", "--client-id", "client1", "-o", "json", "--chain"]
    printed = run_cli(*argv, "--observed", "producer_byte_rate=12000", "--cluster-wide", "--brokers", "3")
    assert printed.exit_code == 0, printed.stderr
    assert done.to_json(chain=True) == json.loads(printed.stdout)
    assert "cluster_wide" not in explain(quotas, Connection.of("userA", "client1")).to_json()


def test_a_cluster_wide_view_offline_needs_the_broker_count_as_data(tmp_path) -> None:  # type: ignore[no-untyped-def]
    index = load_quota_set([write_manifest(tmp_path, MANIFEST)]).index
    with pytest.raises(MissingInput) as e:
        explain(index, Connection.of("userA"), cluster_wide=True)  # no brokers, no backend: offline
    assert e.value.kind == "broker-count" and "--" not in str(e.value)
    assert worded(e.value) == "--cluster-wide offline (-f, --example) needs the broker count: add --brokers N"


@pytest.mark.zookeeper
def test_a_live_cluster_wide_view_counts_the_backends_brokers(chroot) -> None:  # type: ignore[no-untyped-def]
    from kquotactl.backends.factory import open_backend
    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.core.changes import build_change
    from kquotactl.core.entities import Entity
    from kquotactl.services.quotas import alter

    for broker in ("1", "2"):
        chroot.zk.create(f"{chroot.root}/brokers/ids/{broker}", b"{}")
    with open_backend(ConnectionOptions(zookeeper=chroot.connect)) as backend:
        alter(backend, build_change(Entity(user="svc"), {"producer_byte_rate": "1MiB"}))
        done = explain(load_quota_set(backend).index, Connection.of("svc"), cluster_wide=True, backend=backend)
    assert done.brokers == 2 and done.to_json()["cluster_wide"][0]["cluster_wide"] == 2 * 1024 * 1024


def test_explain_many_streams_the_commands_json_lines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = write_manifest(tmp_path, MANIFEST)
    conns = tmp_path / "conns.jsonl"
    conns.write_text("".join(json.dumps(c.to_json()) + "\n" for c in CONNECTIONS))
    with conns.open("rb") as f:
        many = explain_many(load_quota_set([path]).index, read_connections(f, "conns.jsonl"))
        lines = [x if isinstance(x, str) else json.dumps(x) for x in many.lines()]
    printed = run_cli("explain", "-f", path, "--connections", str(conns), "-o", "json")
    assert printed.exit_code == 0, printed.stderr
    assert [json.loads(x) for x in lines] == [json.loads(x) for x in printed.stdout.splitlines()]
    documents = list(explain_many(load_quota_set([path]).index, CONNECTIONS).documents(chain=True))
    assert [d["connection"] for d in documents] == [c.to_json() for c in CONNECTIONS]


def test_the_example_quota_set_is_the_one_explain_example_uses() -> None:
    done = explain(example_quota_set().index, Connection.of("alice", "ingest"))
    printed = run_cli("explain", "--example", "--user", "alice", "--client-id", "ingest", "-o", "json")
    assert done.to_json() == json.loads(printed.stdout)
    first = done.to_json()["quotas"][0]
    assert (first["level"], first["limit"], first["entity_path"]) == (2, 2097152, "users/alice/clients/<default>")


EXPOSITION = """\
kafka_quota_byte_rate{quota_type="Produce",user="",client_id="slow"} 50000.0
kafka_quota_throttle_time{quota_type="Produce",user="",client_id="slow"} 900.0
kafka_quota_byte_rate{quota_type="Produce",user="userA",client_id="client1"} 100.0
kafka_quota_throttle_time{quota_type="Produce",user="userA",client_id="client1"} 0.0
"""


@pytest.fixture
def exporter() -> Iterator[str]:
    """An HTTP endpoint serving a JMX exporter's quota sensors (the text format ``top --scrape`` reads)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = EXPOSITION.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_top_joins_the_sensors_with_the_limits_as_the_command_shows(exporter: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = write_manifest(tmp_path, MANIFEST)
    index = load_quota_set([path]).index
    throttled = top(index, scrape=[exporter])
    assert [(r.quota_id.client_id, r.throttled) for r in throttled] == [("slow", True)]
    every = top(index, scrape=[exporter], show_all=True)
    assert {r.quota_id.client_id for r in every} == {"slow", "client1"}
    printed = run_cli("top", "--scrape", exporter, "-f", path, "--all", "-o", "json")
    assert printed.exit_code == 0, printed.stderr
    assert [r.to_json() for r in every] == json.loads(printed.stdout)


def test_top_loads_the_quotas_only_after_reading_the_sensors() -> None:
    loads: list[int] = []

    def quotas():  # type: ignore[no-untyped-def]
        loads.append(1)
        return example_quota_set().index

    with pytest.raises(QuotaError, match="cannot reach it"):
        top(quotas, scrape=["127.0.0.1:1"])
    assert loads == []


@pytest.mark.kafka
def test_connection_rate_set_list_remove(kraft) -> None:  # type: ignore[no-untyped-def]
    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.core.errors import InvalidValue
    from kquotactl.services.connection_rate import change_connection_rate, connection_rates

    conn = ConnectionOptions(bootstrap_server=kraft.bootstrap, timeout=15)
    try:
        changed = change_connection_rate(conn, broker="1", listener="PLAINTEXT", value="20")
        assert (changed.name, changed.value, changed.visible) == (
            "listener.name.plaintext.max.connection.creation.rate",
            20,
            True,
        )
        dry = change_connection_rate(conn, broker=None, value=70, dry_run=True)
        assert dry.dry_run and dry.visible and dry.broker is None
        found = connection_rates(conn, broker="1", listener="PLAINTEXT")
        assert [(s.broker, s.listener, s.value) for s in found] == [("1", "plaintext", 20)]
        assert not any(s.broker is None for s in connection_rates(conn))  # the dry run wrote nothing
        with pytest.raises(InvalidValue):
            change_connection_rate(conn, broker="1", value="0")  # refused before connecting
        removed = change_connection_rate(conn, broker="1", listener="PLAINTEXT")
        assert removed.value is None and removed.visible
        assert connection_rates(conn, broker="1") == []
    finally:
        change_connection_rate(conn, broker="1", listener="PLAINTEXT")
