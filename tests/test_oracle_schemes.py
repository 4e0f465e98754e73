"""Differential: the exporter configurations operators already run, read by ``top``, against the names Kafka gave.

Each vendored configuration (tests/data/exporter-configs/: the JMX exporter's Kafka examples, Confluent's
jmx-monitoring-stacks, Strimzi's kafka-metrics.yaml) runs in the real JMX exporter agent over Kafka's own
``JmxReporter`` naming (``JmxNamingOracle``, the newest Kafka); random quota-ids' sensors are registered and the
scrape is read by ``top``'s parser and model. Each quota-id must come back with its names and values, unless its
scheme declares the loss (``kquotactl.observe.schemes``: not exported, or read as another quota-id), and every
loss the scheme declares must be seen: the documented losses are exactly the losses.
"""

from __future__ import annotations

import ipaddress
import random
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from fixtures_oracle import NEWEST_VERSION, random_cases, replay_hint
from kquotactl.core.precedence import QuotaIndex
from kquotactl.core.sanitizer import sanitize
from kquotactl.observe import schemes
from kquotactl.observe.prometheus import scrape
from kquotactl.observe.schemes import DROPPED, MISREAD, Scheme, SensorName, UnreadableScheme
from kquotactl.observe.throttled import IP_TYPE, LISTENER_THROTTLE, QuotaIdKey, top_rows
from kquotactl.testing.observe import ExporterOracle, exporter_rules
from test_oracle_exporter import _case, _name

pytestmark = pytest.mark.jvm

CONFIGS = Path(__file__).parent / "data" / "exporter-configs"
FIXED = [  # one of each loss, whatever the seed draws
    {"group": "Produce", "user": "alice@corp", "client_id": "app"},
    {"group": "Fetch", "user": "bob", "client_id": ""},
    {"group": "Request", "user": "", "client_id": 'odd,id="1"'},
    {"group": "ControllerMutation", "user": "", "client_id": "mut"},
    {"group": "Produce", "user": "u2", "client_id": "x, client-id=y"},
    {"group": "Produce", "user": "", "client_id": "p, client-id=q"},
    {"group": "Fetch", "user": "", "client_id": "p, user=q, client-id=r"},
    {"group": "Fetch", "user": "u3", "client_id": "p, user=, client-id=r"},  # seed 2151248114: misread
    {"group": "Produce", "user": "", "client_id": "cr\rlf"},
]
_USAGE = {
    "Produce": "byte-rate",
    "Fetch": "byte-rate",
    "Request": "request-time",
    "ControllerMutation": "mutation-rate",
}


def _config(name: str, tmp: Path) -> Path:
    """A vendored configuration as the agent gets it. Confluent's waits startDelaySeconds (120) before its first
    answer: 0 here, the one change. ``merged``: Confluent's with kquotactl's rules pasted first, as
    docs/observe.md tells operators to."""
    if name in ("ours-first", "ours-after"):
        theirs = yaml.safe_load((CONFIGS / "confluent-kafka_broker.yml").read_text())
        ours = yaml.safe_load(exporter_rules().read_text())["rules"]
        rules = [*ours, *theirs["rules"]] if name == "ours-first" else [*theirs["rules"], *ours]
        text = yaml.safe_dump({**theirs, "rules": rules}, sort_keys=False)
    else:
        text = (CONFIGS / name).read_text()
    out = tmp / name
    out.write_text(text.replace("startDelaySeconds: 120", "startDelaySeconds: 0"))
    return out


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("exporter-configs")


def _oracle(name: str, tmp: Path) -> ExporterOracle:
    return ExporterOracle(NEWEST_VERSION, _config(name, tmp))


def _cases(seed: int) -> list[dict[str, Any]]:
    def make(rng: random.Random) -> dict[str, Any]:
        if rng.random() < 0.05:
            return {"kind": "listener", "group": "socket-server-metrics", "listener": _name(rng)}
        return _case(rng)

    drawn = [*({"kind": "client", **c} for c in FIXED), *random_cases(seed, make, n=400)]
    unique: dict[tuple[str, ...], dict[str, Any]] = {}
    for c in drawn:  # one sensor a quota-id and quota type (a second would be the same MBean)
        ip = str(ipaddress.ip_address(c["ip"])) if "ip" in c else ""
        unique.setdefault(
            (c["kind"], c["group"], c.get("user", ""), c.get("client_id", ""), ip, c.get("listener", "")), c
        )
    return list(unique.values())


def _register(oracle: ExporterOracle, cases: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each case's sensors: the usage (value i+1) and, for a client quota-id, its throttle time (i+0.5); a
    listener's only sensor is its ip connection throttle."""
    metrics = []
    for i, c in enumerate(cases):
        if c["kind"] == "client":
            metrics.append({**c, "name": _USAGE[c["group"]], "value": float(i + 1)})
            metrics.append({**c, "name": "throttle-time", "value": i + 0.5})
        elif c["kind"] == "ip":
            metrics.append({**c, "name": "connection-accept-rate", "value": float(i + 1)})
        else:
            metrics.append({**c, "name": "ip-connection-accept-throttle-time", "value": float(i + 1)})
    oracle.ask({"op": "clear"})
    answer = oracle.ask({"op": "register", "metrics": metrics})
    assert "error" not in answer, answer
    return metrics, answer


def _sensor(c: dict[str, Any], ip: str) -> SensorName:
    if c["kind"] == "ip":
        return SensorName(c["group"], ip=ip)
    if c["kind"] == "listener":
        return SensorName(c["group"], listener=c["listener"])
    return SensorName(c["group"], user=sanitize(c["user"]), client_id=c["client_id"])


def _expected(c: dict[str, Any], ip: str) -> tuple[QuotaIdKey, str]:
    if c["kind"] == "ip":
        return QuotaIdKey(ip=ip), IP_TYPE
    if c["kind"] == "listener":
        return QuotaIdKey(listener=c["listener"]), LISTENER_THROTTLE
    return QuotaIdKey(c["user"], c["client_id"]), c["group"]


READABLE = [  # configuration, its scheme's losses, kquotactl's rules after its own, the schemes served
    ("jmx-exporter-kafka-2_0_0.yml", schemes.JMX_EXPORTER_EXAMPLE, False, {"jmx-exporter-example"}),
    ("confluent-kafka_broker.yml", schemes.CONFLUENT, False, {"confluent"}),
    ("ours-first", schemes.KQUOTACTL, False, {"kquotactl"}),
    ("ours-after", schemes.CONFLUENT, True, {"kquotactl", "confluent"}),
]


@pytest.mark.parametrize(("config", "scheme", "ours_after", "served"), READABLE, ids=[c[0] for c in READABLE])
def test_top_reads_what_each_scheme_can_show_and_loses_what_it_declares(
    config: str, scheme: Scheme, ours_after: bool, served: set[str], configs: Path, oracle_seed: int
) -> None:
    cases = _cases(oracle_seed)
    with _oracle(config, configs) as oracle:
        metrics, answer = _register(oracle, cases)
        samples = scrape([oracle.url])
        text = requests.get(f"http://{oracle.url}/metrics", timeout=10).text
    hint = f"{replay_hint(oracle_seed, NEWEST_VERSION)}, {config}"
    ips = iter(answer["ips"])
    mbeans = iter(answer["mbeans"])
    # what each value was read as: (quota-id, quota type), from the usage, and from the throttle time
    usage_as: dict[float, tuple[QuotaIdKey, str]] = {}
    throttle_as: dict[float, tuple[QuotaIdKey, str]] = {}
    for row in top_rows(samples, QuotaIndex({})):
        for use in row.uses:
            for fig in use.brokers.values():
                if use.quota_type == LISTENER_THROTTLE:
                    usage_as[fig.throttle_ms] = (row.quota_id, use.quota_type)
                    continue
                if fig.usage:
                    usage_as[fig.usage] = (row.quota_id, use.quota_type)
                if fig.throttle_ms:
                    throttle_as[fig.throttle_ms] = (row.quota_id, use.quota_type)
    wrong: list[tuple[Any, ...]] = []
    seen_losses: set[str] = set()
    for i, c in enumerate(cases):
        ip = next(ips) if c["kind"] == "ip" else ""
        sensor = _sensor(c, ip)
        mbean = next(mbeans)
        if c["kind"] == "client":
            assert next(mbeans) == mbean  # its throttle time: the same MBean
        assert sensor.mbean() == mbean, f"{hint}: JmxReporter named {mbean!r}, schemes.SensorName {sensor.mbean()!r}"
        loss = scheme.loss(sensor, ours_after=ours_after)
        predicted = loss.kind if loss else "read"
        if loss:
            seen_losses.add(loss.what)
        expected = _expected(c, ip)
        readings = [(usage_as, float(i + 1))] + ([(throttle_as, i + 0.5)] if c["kind"] == "client" else [])
        for read_as, value in readings:
            got = read_as.get(value)
            actual = "read" if got == expected else MISREAD if got else DROPPED
            if actual != predicted:
                wrong.append((mbean, value, predicted, actual, got))
    assert not wrong, (
        f"{hint}: {len(wrong)} sensors not as the scheme declares (MBean, value, declared, seen): {wrong[:5]}"
    )
    declared = {loss.what for loss in scheme.cannot_show if not (ours_after and loss.unmatched)}
    assert seen_losses == declared, f"{hint}: declared losses never seen: {declared - seen_losses}"
    invented = set(usage_as) | set(throttle_as)
    invented -= {float(m["value"]) for m in metrics}
    assert not invented, f"{hint}: values read that no sensor had: {sorted(invented)[:5]}"
    assert _schemes_served(text) == served, f"{hint}: quota series of other schemes served"


def _schemes_served(text: str) -> set[str]:
    """The schemes of the quota sensor series an exposition holds."""
    names = {s.name for family in text_string_to_metric_families(text) for s in family.samples}
    return {found.name for n in names if (found := schemes.scheme_of(n)) is not None}


def test_the_kraft_example_is_refused_in_one_line(configs: Path, oracle_seed: int) -> None:
    """Its catch-all kafka.server rule comes before its quota rules: the quota-ids are folded into metric names,
    which top refuses (naming the broker and the fix) rather than showing a broker without quota-ids."""
    with _oracle("jmx-exporter-kafka-kraft-3_0_0.yml", configs) as oracle:
        _register(oracle, _cases(oracle_seed)[:50])
        text = requests.get(f"http://{oracle.url}/metrics", timeout=10).text
        with pytest.raises(UnreadableScheme) as refused:
            scrape([oracle.url])
    assert _schemes_served(text) == {schemes.JMX_EXPORTER_KRAFT.name}
    assert "\nkafka_server_produce_user_alice_40corp_client_id_app_byte_rate 1.0\n" in text  # FIXED[0]
    message = str(refused.value)
    assert message.startswith(f"{oracle.url}: the exporter names the quota sensors as the Prometheus JMX exporter")
    assert (
        "put kquotactl's rules (jmx-exporter-kafka-quotas.yaml, shipped with kquotactl) first" in message
        and "\n" not in message
    )


def test_strimzi_exports_no_quota_sensor(configs: Path, oracle_seed: int) -> None:
    """Strimzi's kafka-metrics.yaml has no rule for the quota MBeans: nothing to read, in any scheme."""
    with _oracle("strimzi-kafka-metrics.yml", configs) as oracle:
        _register(oracle, _cases(oracle_seed)[:50])
        text = requests.get(f"http://{oracle.url}/metrics", timeout=10).text
        assert scrape([oracle.url]) == []
    assert "jvm_" in text and not _schemes_served(text)
    assert not [line for line in text.splitlines() if "alice" in line or "odd" in line]
