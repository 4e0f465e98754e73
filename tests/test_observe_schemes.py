"""The exporter schemes as pure code: series names to samples, which scheme wins where two name one sensor, the
refusal of a broker whose names cannot be read back, and the PromQL selector. What each scheme exports is held
to the real JMX exporter agent in tests/test_oracle_schemes.py; here, the reading of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from kquotactl.core.precedence import QuotaIndex
from kquotactl.observe import schemes
from kquotactl.observe.prometheus import TRAFFIC_SELECTOR
from kquotactl.observe.schemes import SELECTOR, Reading, SensorName, UnreadableScheme, jmx_sanitize, to_samples
from kquotactl.observe.throttled import QuotaIdKey, top_rows

B1, B2 = "b1:7071", "b2:7071"


def _rows(readings: list[Reading]) -> dict[tuple[QuotaIdKey, str], tuple[float, float]]:
    return {
        (r.quota_id, u.quota_type): (u.usage, u.throttle_ms)
        for r in top_rows(to_samples(readings), QuotaIndex({}))
        for u in r.uses
    }


def test_each_scheme_reads_as_the_same_quota_ids() -> None:
    """The same sensors under each scheme's names and labels give the same rows."""
    ours = [
        Reading(
            "kafka_quota_byte_rate", {"quota_type": "Produce", "user": "alice%40corp", "client_id": "app"}, 50.0, B1
        ),
        Reading(
            "kafka_quota_throttle_time", {"quota_type": "Produce", "user": "alice%40corp", "client_id": "app"}, 9.0, B1
        ),
        Reading("kafka_quota_request_time", {"quota_type": "Request", "client_id": '"a,b"'}, 7.0, B1),
    ]
    example = [
        Reading(
            "kafka_server_quota_byte_rate", {"resource": "Produce", "user": "alice%40corp", "clientId": "app"}, 50.0, B1
        ),
        Reading(
            "kafka_server_quota_throttle_time",
            {"resource": "Produce", "user": "alice%40corp", "clientId": "app"},
            9.0,
            B1,
        ),
        Reading("kafka_server_quota_request_time", {"resource": "Request", "clientid": '"a,b"'}, 7.0, B1),
    ]
    confluent = [
        Reading("kafka_server_produce_byte_rate", {"user": "alice%40corp", "client_id": "app"}, 50.0, B1),
        Reading("kafka_server_produce_throttle_time", {"user": "alice%40corp", "client_id": "app"}, 9.0, B1),
        Reading("kafka_server_request_request_time", {"client_id": '"a,b"'}, 7.0, B1),
    ]
    expected = {
        (QuotaIdKey("alice@corp", "app"), "Produce"): (50.0, 9.0),
        (QuotaIdKey("", "a,b"), "Request"): (7.0, 0.0),
    }
    assert _rows(ours) == _rows(example) == _rows(confluent) == expected


def test_where_two_schemes_name_one_sensor_the_more_complete_is_kept() -> None:
    """A broker whose configuration holds kquotactl's rules and Confluent's (or brokers of both kinds behind one
    Prometheus): one sample per sensor and broker, kquotactl's where both give it, each broker on its own."""
    labels = {"user": "u", "client_id": "c"}
    readings = [
        Reading("kafka_server_produce_byte_rate", labels, 1.0, B1),
        Reading("kafka_quota_byte_rate", {**labels, "quota_type": "Produce"}, 2.0, B1),
        Reading("kafka_server_produce_byte_rate", labels, 3.0, B2),  # B2 runs Confluent's only
        Reading("kafka_server_fetch_byte_rate", labels, 4.0, B1),  # only Confluent's rule matched this one
        Reading("jvm_memory_bytes_used", {"area": "heap"}, 5.0, B1),  # not a quota sensor
    ]
    got = sorted((s.broker, s.quota_type, s.value) for s in to_samples(readings))
    assert got == [(B1, "Fetch", 4.0), (B1, "Produce", 2.0), (B2, "Produce", 3.0)]


def test_a_broker_with_only_unreadable_names_is_refused_naming_it() -> None:
    folded = Reading("kafka_server_produce_user_alice_40corp_client_id_app_byte_rate", {}, 1.0, B2)
    with pytest.raises(UnreadableScheme) as refused:
        to_samples([Reading("kafka_quota_byte_rate", {"quota_type": "Fetch", "user": "u"}, 1.0, B1), folded])
    message = str(refused.value)
    assert message.startswith(f"{B2}: the exporter names the quota sensors as the Prometheus JMX exporter's KRaft")
    assert "e.g. kafka_server_produce_user_alice_40corp_client_id_app_byte_rate" in message
    assert "put kquotactl's rules (jmx-exporter-kafka-quotas.yaml, shipped with kquotactl) first" in message
    # kquotactl's rules first in that configuration: its names are read, the folded ones left aside
    ours = Reading(
        "kafka_quota_byte_rate", {"quota_type": "Produce", "user": "alice%40corp", "client_id": "app"}, 1.0, B2
    )
    assert [s.user for s in to_samples([folded, ours])] == ["alice%40corp"]


def _promql_regex(selector: str) -> re.Pattern[str]:
    body = re.fullmatch(r'\{__name__=~"(.*)"\}', selector)
    assert body is not None
    return re.compile(body.group(1).replace("\\\\", "\\"))


def test_the_selectors_hold_every_scheme_and_nothing_else() -> None:
    everything = _promql_regex(SELECTOR)
    for scheme in schemes.SCHEMES:
        assert all(everything.fullmatch(name) for name in scheme.series), scheme.name
    assert everything.fullmatch("kafka_server_socket_server_metrics_ip_0:0:0:0:0:0:0:1_connection_accept_rate")
    for other in ("kafka_server_request_exempt_request_time", "kafka_server_fetch_queue_size", "kafka_quota_x"):
        assert not everything.fullmatch(other) and schemes.scheme_of(other) is None
    traffic = _promql_regex(TRAFFIC_SELECTOR)
    assert traffic.fullmatch("kafka_server_produce_byte_rate") and traffic.fullmatch("kafka_server_quota_mutation_rate")
    assert not traffic.fullmatch("kafka_server_produce_throttle_time")


def test_jmx_sanitize_quotes_as_object_name_does() -> None:
    """Held to Kafka's JmxReporter over random names in tests/test_oracle_schemes.py; the cases it names here."""
    assert jmx_sanitize("app-1.x%40y \t") == "app-1.x%40y \t"
    assert jmx_sanitize('odd,id="1"') == '"odd,id=\\"1\\""'
    assert jmx_sanitize("a\nb*?\\é") == '"a\\nb\\*\\?\\\\é"'
    assert (
        SensorName("Produce", user="u", client_id="c:1").mbean() == 'kafka.server:type=Produce,user=u,client-id="c:1"'
    )


def test_every_loss_is_stated_and_none_on_our_own_rules() -> None:
    assert not schemes.KQUOTACTL.cannot_show
    for scheme in (schemes.JMX_EXPORTER_EXAMPLE, schemes.CONFLUENT):
        assert scheme.cannot_show and all(
            loss.kind in (schemes.DROPPED, schemes.MISREAD) for loss in scheme.cannot_show
        )
    mutation = SensorName("ControllerMutation", client_id="m")
    assert schemes.CONFLUENT.loss(mutation) and schemes.JMX_EXPORTER_EXAMPLE.loss(mutation) is None


DOCS = Path(__file__).resolve().parent.parent / "docs" / "observe.md"


def test_the_rules_docs_tell_operators_to_paste_are_the_shipped_ones() -> None:
    from kquotactl.testing.observe import exporter_rules

    text = DOCS.read_text(encoding="utf-8")
    block = text.split("The rules to paste", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block)["rules"] == yaml.safe_load(exporter_rules().read_text())["rules"]


def test_the_refusal_docs_show_is_the_one_top_prints() -> None:
    example = "kafka_server_produce_user_alice_40corp_client_id_app_byte_rate"
    refused = UnreadableScheme("broker1:7071", schemes.JMX_EXPORTER_KRAFT, example)
    assert f"kquotactl: error: {refused}\n" in DOCS.read_text(encoding="utf-8")


def test_no_series_name_belongs_to_two_schemes() -> None:
    """Why detection needs no option: a name tells its scheme, and only one."""
    names = [name for scheme in schemes.SCHEMES for name in scheme.series]
    assert len(names) == len(set(names))
    unreadable = [re.compile(s.unreadable) for s in schemes.SCHEMES if s.unreadable]
    assert not [n for n in names for pattern in unreadable if pattern.fullmatch(n)]
