"""The Grafana dashboard and the rules, against the SDK's types and a real Prometheus holding real data.

No Grafana server here: the dashboard JSON (docs/examples/grafana-dashboard.json, written by ``make docs``) is
decoded by grafana-foundation-sdk's own model and must encode back to the same JSON, every query as the SDK's
Prometheus query type and every panel's options as its panel type's. Then a real Prometheus
(``/usr/bin/prometheus``) scrapes the exporter's series (tests/fixtures_exporter_contract.py) with the shipped
rules loaded: every panel's PromQL must return the series the panel draws, every recording rule the value the
data gives, and ``/api/v1/alerts`` must show each alert for the quota-ids (or sources) it is about and no other.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from fixtures_exporter_contract import (
    CONFIGURED,
    DRIFTED,
    QUOTA_IDS,
    SOURCES,
    THROTTLED,
    UNUSED,
    ContractExporter,
    QuotaId,
    rules_without_for,
)
from kquotactl.cli.docsgen import DASHBOARD_FILE
from kquotactl.core.keys import KEYS
from kquotactl.observe.dashboard import dashboard_json

ROOT = Path(__file__).resolve().parent.parent
JOB = "kquotactl"


def _board() -> dict[str, Any]:
    return json.loads((ROOT / DASHBOARD_FILE).read_text(encoding="utf-8"))


def _targets(board: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(panel title, target) for every query of every panel."""
    return [(p["title"], t) for p in board["panels"] for t in p.get("targets", [])]


# -- the JSON against the SDK ---------------------------------------------------------------------------------


def test_the_checked_in_dashboard_is_the_generated_one() -> None:
    assert (ROOT / DASHBOARD_FILE).read_text(encoding="utf-8") == dashboard_json(), "run `make docs`"


def test_the_sdk_decodes_the_dashboard_into_its_types_and_back() -> None:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models import heatmap, prometheus, stat, table, timeseries
    from grafana_foundation_sdk.models.dashboard import Dashboard, Panel, RowPanel

    register_default_plugins()
    raw = _board()
    model = Dashboard.from_json(raw)
    assert json.loads(json.dumps(model, cls=JSONEncoder)) == raw
    options = {
        "timeseries": timeseries.Options,
        "heatmap": heatmap.Options,
        "table": table.Options,
        "stat": stat.Options,
    }
    panels = model.panels or []
    assert {type(p) for p in panels} == {Panel, RowPanel}
    for panel in panels:
        if isinstance(panel, RowPanel):
            continue
        assert isinstance(panel.options, options[panel.type_val]), panel.title
        assert panel.targets and all(isinstance(t, prometheus.Dataquery) for t in panel.targets), panel.title
    assert len({p.id_val for p in panels}) == len(panels)


def test_one_rate_panel_per_metered_key_with_its_unit() -> None:
    rate = [p for p in _board()["panels"] if p["type"] == "timeseries" and "rate against limit" in p["title"]]
    metered = [k for k in KEYS.values() if k.sensor is not None]
    assert [p["title"].split(":")[0] for p in rate] == [k.name for k in metered]
    for panel, key in zip(rate, metered, strict=True):
        assert f"({key.unit}," in panel["title"] and panel["fieldConfig"]["defaults"]["unit"]
        assert {t["refId"] for t in panel["targets"]} == {"A", "B"}
        assert "{{level}}" in panel["targets"][1]["legendFormat"]


def test_the_command_line_never_loads_the_sdk() -> None:
    """Every command loaded, as completion and the docs generator load them: the SDK stays out."""
    code = (
        "import sys\n"
        "from kquotactl.cli import commands\n"
        "from kquotactl.cli.app import cli\n"
        "for load in commands.LOADERS.values(): load()\n"
        "print(sorted(m for m in sys.modules if m.startswith('grafana')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# -- a real Prometheus ------------------------------------------------------------------------------------------


class Prom:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, **params: Any) -> Any:
        r = requests.get(f"{self.url}{path}", params=params, timeout=10)
        r.raise_for_status()
        body = r.json()
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/query", query=expr)["result"])

    def query_range(self, expr: str, seconds: int = 20) -> list[dict[str, Any]]:
        end = time.time()
        return list(self.get("/api/v1/query_range", query=expr, start=end - seconds, end=end, step=1)["result"])

    def wait(self, what: str, check: Any, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            got = check()
            if got:
                return got
            assert time.monotonic() < deadline, f"Prometheus never showed {what}"
            time.sleep(0.5)


@pytest.fixture(scope="module")
def rules_prometheus(contract_exporter: ContractExporter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prom]:
    from kquotactl.testing.observe import PrometheusServer
    from kquotactl.testing.servers import free_port

    dead = f"127.0.0.1:{free_port()}"  # a target nothing listens on: KquotactlExporterDown's
    rules = rules_without_for(tmp_path_factory.mktemp("rules"))
    with PrometheusServer(targets=[contract_exporter.url, dead], job=JOB, rule_files=[rules]) as server:
        p = Prom(server.url)
        # two scrapes at least (rate() needs two samples) and the rules evaluated on them
        p.wait("the recording rules", lambda: p.query("kquotactl_entity:kquotactl_quota_usage:sum"))
        p.wait("two scrapes", lambda: p.query(f"rate(kquotactl_exporter_refresh_errors_total{{job='{JOB}'}}[5m])"))
        yield p


def _qid(labels: dict[str, str]) -> tuple[str, str, str, str]:
    return tuple(labels.get(n, "") for n in ("quota_type", "user", "client_id", "ip"))  # type: ignore[return-value]


def _as_qid(q: QuotaId) -> tuple[str, str, str, str]:
    return (q.quota_type, q.user, q.client_id, q.ip)


def _expr(target: dict[str, Any]) -> str:
    expr = str(target["expr"]).replace("$job", JOB)
    assert "$" not in expr, f"a variable the test does not know: {expr}"
    return expr


@pytest.mark.prometheus
def test_every_panel_query_returns_the_series_it_draws(rules_prometheus: Prom) -> None:
    prom = rules_prometheus
    board = _board()
    seen = set()
    for title, target in _targets(board):
        expr = _expr(target)
        result = prom.query(expr) if target.get("instant") else prom.query_range(expr)
        by_labels = {json.dumps(r["metric"], sort_keys=True): r for r in result}
        assert len(by_labels) == len(result), f"{title}: duplicate series"
        if "rate against limit" in title:
            key = title.split(":")[0]
            want = {_as_qid(q): q for q in QUOTA_IDS if q.key == key}
            assert {_qid(r["metric"]) for r in result} == set(want), title
            for r in result:
                q = want[_qid(r["metric"])]
                value = float(r["values"][-1][1])
                if target["refId"] == "A":  # the busiest broker's rate
                    assert value == pytest.approx(max(q.usage.values()))
                else:  # the limit, with where it comes from
                    assert value == q.limit
                    assert (r["metric"]["level"], r["metric"]["entity"]) == (q.level, q.entity)
        elif title.startswith("Throttle time"):
            assert {_qid(r["metric"]): float(r["values"][-1][1]) for r in result} == {
                _as_qid(q): max(q.throttle.values()) for q in THROTTLED
            }
        elif title.startswith("Top "):
            rows = {_qid(r["metric"]): r for r in result}
            assert set(rows) == {_as_qid(q) for q in QUOTA_IDS}
            for q in QUOTA_IDS:
                row = rows[_as_qid(q)]
                assert float(row["value"][1]) == pytest.approx(q.utilization)
                assert (row["metric"]["key"], row["metric"]["level"], row["metric"]["entity"]) == (
                    q.key,
                    q.level,
                    q.entity,
                )
        elif "kquotactl_exporter_up" in expr or "last_success" in expr or "refresh_" in expr:
            assert {r["metric"]["source"] for r in result} == set(SOURCES), title
            if "last_success" in expr:
                ages = {r["metric"]["source"]: float(r["values"][-1][1]) for r in result}
                assert ages["manifest"] > 3600 and ages["quotas"] < 300
        elif expr.startswith("up{"):
            assert sorted(float(r["values"][-1][1]) for r in result) == [0.0, 1.0]
        else:
            assert len(result) == 1, f"{title}: {expr}"
        seen.add(title)
    assert len(seen) == sum(1 for p in board["panels"] if p.get("targets"))


@pytest.mark.prometheus
def test_the_job_variable_lists_the_exporter_job(rules_prometheus: Prom) -> None:
    prom = rules_prometheus
    (variable,) = [v for v in _board()["templating"]["list"] if v["name"] == "job"]
    assert variable["query"] == "label_values(kquotactl_exporter_up, job)"
    assert prom.get("/api/v1/label/job/values", **{"match[]": "kquotactl_exporter_up"}) == [JOB]


@pytest.mark.prometheus
def test_the_recording_rules_give_what_the_data_gives(rules_prometheus: Prom) -> None:
    prom = rules_prometheus

    def values(expr: str) -> dict[tuple[str, ...], float]:
        return {(*_qid(r["metric"]), r["metric"].get("key", "")): float(r["value"][1]) for r in prom.query(expr)}

    def want(f: Any) -> dict[tuple[str, ...], float]:
        return {(*_as_qid(q), q.key): pytest.approx(f(q)) for q in QUOTA_IDS}

    assert values("kquotactl_quota_id:kquotactl_quota_utilization_ratio:max") == want(lambda q: q.utilization)
    assert values("kquotactl_quota_id:kquotactl_quota_usage:max") == want(lambda q: max(q.usage.values()))
    assert values("kquotactl_quota_id:kquotactl_quota_usage:sum") == want(lambda q: sum(q.usage.values()))
    throttle = {k[:4]: v for k, v in values("kquotactl_quota_id:kquotactl_quota_throttle_time_seconds:max").items()}
    assert throttle == {_as_qid(q): max(q.throttle.values(), default=0.0) for q in QUOTA_IDS}
    per_entity = {
        (r["metric"]["entity"], r["metric"]["key"]): float(r["value"][1])
        for r in prom.query("kquotactl_entity:kquotactl_quota_usage:sum")
    }
    expected: dict[tuple[str, str], float] = {}
    for q in QUOTA_IDS:
        expected[(q.entity, q.key)] = expected.get((q.entity, q.key), 0.0) + sum(q.usage.values())
    assert per_entity == pytest.approx(expected)


def _firing(prom: Prom, name: str) -> list[dict[str, Any]]:
    alerts = prom.wait(
        f"{name} firing",
        lambda: [a for a in prom.get("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == name],
    )
    assert all(a["state"] == "firing" for a in alerts)
    return list(alerts)


@pytest.mark.prometheus
def test_the_throttled_alert_fires_for_the_throttled_quota_id_only(rules_prometheus: Prom) -> None:
    prom = rules_prometheus
    alerts = _firing(prom, "KquotactlQuotaThrottled")
    assert [_qid(a["labels"]) for a in alerts] == [_as_qid(q) for q in THROTTLED]
    (alice,) = THROTTLED
    text = alerts[0]["annotations"]["description"]
    assert f"user {alice.user}" in text and "500ms" in text
    assert f"Limit: {alice.key} 1MiB/s (1048576 bytes/s) per broker, level 3 from users/alice." in text


@pytest.mark.prometheus
def test_the_near_limit_alert_names_each_limit_in_its_keys_unit(rules_prometheus: Prom) -> None:
    prom = rules_prometheus
    alerts = {_qid(a["labels"]): a for a in _firing(prom, "KquotactlQuotaNearLimit")}
    near = [q for q in QUOTA_IDS if q.utilization > 0.8]
    assert set(alerts) == {_as_qid(q) for q in near} and len(near) < len(QUOTA_IDS)
    for q in near:
        text = alerts[_as_qid(q)]["annotations"]["description"]
        assert KEYS[q.key].unit in text, text  # the registry's unit: bytes/s, %, mutations/s, connections/s
        assert f"level {q.level} from {q.entity}." in text


@pytest.mark.prometheus
def test_the_unused_drift_and_exporter_alerts_name_what_they_are_about(rules_prometheus: Prom) -> None:
    prom = rules_prometheus
    unused = _firing(prom, "KquotactlQuotaUnused")
    assert sorted(a["labels"]["entity"] for a in unused) == UNUSED
    drift = _firing(prom, "KquotactlQuotaDrift")
    assert [(a["labels"]["entity"], a["labels"]["key"]) for a in drift] == [DRIFTED]
    assert "the cluster has 1MiB/s (1048576 bytes/s)" in drift[0]["annotations"]["description"]
    stale = _firing(prom, "KquotactlExporterStale")
    assert [a["labels"]["source"] for a in stale] == [s for s, (ok, _) in SOURCES.items() if not ok]
    down = _firing(prom, "KquotactlExporterDown")
    up = {r["metric"]["instance"]: r["value"][1] for r in prom.query(f'up{{job="{JOB}"}}')}
    assert [a["labels"]["instance"] for a in down] == [i for i, v in up.items() if v == "0"]
    assert len(CONFIGURED) > len(UNUSED)
