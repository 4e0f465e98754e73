"""The series ``kquotactl exporter`` serves (its metric contract, docs/alerting.md), from a prometheus_client
registry on 127.0.0.1: what the shipped rules and dashboard read, until the exporter itself runs in these tests.

``contract_exporter`` serves :data:`QUOTA_IDS` (one quota-id per key a broker meters, over two brokers), the
configured entities, drift and the exporter's own health, as prometheus_client exposes them. A test that runs
the real exporter can swap this fixture for it: the test of the rules and the dashboard reads only ``url`` and
the expectations below.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from kquotactl.core.keys import KEYS, KeyScope

#: the key a broker meters per quota type (its sensor), from the registry
BY_TYPE = {k.sensor.quota_type: name for name, k in KEYS.items() if k.sensor is not None}
#: the ip key's sensor has no quota type in its tags: the contract's ``quota_type`` is "" for it
IP_TYPE = next(k.sensor.quota_type for k in KEYS.values() if k.sensor is not None and k.kind is KeyScope.IP)


def key_of(quota_type: str) -> str:
    return BY_TYPE[quota_type]


@dataclass(frozen=True)
class QuotaId:
    """One active quota-id and key: its effective limit (level, entity) and each broker's rate and throttle."""

    quota_type: str  # the sensor's quota type ("" for an ip)
    user: str
    client_id: str
    ip: str
    level: str
    entity: str
    limit: float
    usage: dict[str, float]  # broker -> rate, in the key's unit
    throttle: dict[str, float] = field(default_factory=dict)  # broker -> seconds

    @property
    def key(self) -> str:
        return key_of(IP_TYPE if self.ip else self.quota_type)

    @property
    def labels(self) -> dict[str, str]:
        return {"quota_type": self.quota_type, "user": self.user, "client_id": self.client_id, "ip": self.ip}

    @property
    def utilization(self) -> float:
        return max(self.usage.values()) / self.limit


MiB = 1024 * 1024
#: alice is throttled (broker 1 over its limit); billing, bob, ops and the ip are near their limits; quiet is not
QUOTA_IDS = [
    QuotaId("Produce", "alice", "", "", "3", "users/alice", MiB, {"1": 1.1 * MiB, "2": 0.2 * MiB}, {"1": 0.5, "2": 0}),
    QuotaId("Fetch", "", "billing", "", "7", "clients/billing", 2 * MiB, {"1": 0.5 * MiB, "2": 1.7 * MiB}),
    QuotaId("Request", "bob", "app", "", "1", "users/bob/clients/app", 50, {"1": 45, "2": 10}),
    QuotaId("ControllerMutation", "ops", "", "", "6", "users/<default>", 10, {"1": 9.5}),
    QuotaId("", "", "", "192.0.2.10", "2", "ips/<default>", 20, {"1": 17, "2": 1}),
    QuotaId("Produce", "quiet", "", "", "6", "users/<default>", 512 * 1024, {"1": 1000, "2": 0}),
]
THROTTLED = [q for q in QUOTA_IDS if any(q.throttle.values())]
#: (entity, user, client_id, ip, key, value): every limit above, and users/carol's, which no quota-id uses
CONFIGURED = [
    ("users/alice", "alice", "", "", key_of("Produce"), MiB),
    ("clients/billing", "", "billing", "", key_of("Fetch"), 2 * MiB),
    ("users/bob/clients/app", "bob", "app", "", key_of("Request"), 50),
    ("users/<default>", "<default>", "", "", key_of("ControllerMutation"), 10),
    ("users/<default>", "<default>", "", "", key_of("Produce"), 512 * 1024),
    ("ips/<default>", "", "", "<default>", key_of(IP_TYPE), 20),
    ("users/carol", "carol", "", "", key_of("Produce"), 5 * MiB),
]
UNUSED = ["users/carol"]
DRIFTED = ("users/alice", key_of("Produce"))
#: source -> (refresh succeeded, seconds since its last success)
SOURCES = {"quotas": (True, 0.0), "sensors": (True, 0.0), "manifest": (False, 3600.0)}


@dataclass
class ContractExporter:
    url: str  # host:port serving /metrics
    server: object


def contract_registry() -> object:
    """A registry holding every series of the contract, filled with the data above."""
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

    reg = CollectorRegistry()
    qid = ["quota_type", "user", "client_id", "ip"]
    ent = ["entity", "user", "client_id", "ip", "key"]
    limit = Gauge("kquotactl_quota_limit", "effective limit", [*qid, "key", "level", "entity"], registry=reg)
    usage = Gauge("kquotactl_quota_usage", "sensor rate", ["broker", *qid, "key"], registry=reg)
    ratio = Gauge("kquotactl_quota_utilization_ratio", "usage / limit", ["broker", *qid, "key"], registry=reg)
    throttle = Gauge("kquotactl_quota_throttle_time_seconds", "throttle time", ["broker", *qid], registry=reg)
    configured = Gauge("kquotactl_quota_configured", "configured value", ent, registry=reg)
    Gauge("kquotactl_quota_configured_per_broker", "per-broker value of a budget", ent, registry=reg)
    drift = Gauge("kquotactl_quota_drift", "differs from the manifest", ent, registry=reg)
    for q in QUOTA_IDS:
        limit.labels(**q.labels, key=q.key, level=q.level, entity=q.entity).set(q.limit)
        for broker, rate in q.usage.items():
            usage.labels(broker=broker, **q.labels, key=q.key).set(rate)
            ratio.labels(broker=broker, **q.labels, key=q.key).set(rate / q.limit)
            throttle.labels(broker=broker, **q.labels).set(q.throttle.get(broker, 0.0))
    for entity, user, client_id, ip, key, value in CONFIGURED:
        configured.labels(entity, user, client_id, ip, key).set(value)
        drift.labels(entity, user, client_id, ip, key).set(1 if (entity, key) == DRIFTED else 0)
    up = Gauge("kquotactl_exporter_up", "last refresh succeeded", ["source"], registry=reg)
    last = Gauge("kquotactl_exporter_last_success_timestamp_seconds", "last success", ["source"], registry=reg)
    errors = Counter("kquotactl_exporter_refresh_errors_total", "refresh errors", ["source"], registry=reg)
    took = Histogram("kquotactl_exporter_refresh_duration_seconds", "refresh time", ["source"], registry=reg)
    for source, (ok, age) in SOURCES.items():
        up.labels(source).set(1 if ok else 0)
        last.labels(source).set(time.time() - age)
        errors.labels(source).inc(0 if ok else 3)
        took.labels(source).observe(0.05)
    Gauge("kquotactl_exporter_quota_ids", "active quota-ids", registry=reg).set(len(QUOTA_IDS))
    Gauge("kquotactl_exporter_entities", "entities", registry=reg).set(len({c[0] for c in CONFIGURED}))
    return reg


@pytest.fixture(scope="module")
def contract_exporter() -> Iterator[ContractExporter]:
    from prometheus_client import start_http_server

    from kquotactl.testing.servers import free_port

    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=contract_registry())  # type: ignore[arg-type]
    yield ContractExporter(f"127.0.0.1:{port}", server)
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def rules_without_for(tmp: Path) -> Path:
    """The shipped rules with every ``for:`` left out, so the alerts fire at the first evaluation (their
    ``for:`` edges are promtool's part, tests/test_alert_rules.py); expressions and words unchanged."""
    from importlib.resources import files

    doc = yaml.safe_load(files("kquotactl.observe").joinpath("rules/kquotactl-rules.yaml").read_text("utf-8"))
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule.pop("for", None)
    path = tmp / "kquotactl-rules.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path
