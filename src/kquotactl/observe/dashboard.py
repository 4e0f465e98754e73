"""The Grafana dashboard for ``kquotactl exporter``'s metrics, built with grafana-foundation-sdk.

``make docs`` writes it to ``docs/examples/grafana-dashboard.json`` (:mod:`kquotactl.cli.docsgen`), the file
operators import (docs/alerting.md). The SDK is a development dependency imported only here, and nothing the
command line loads imports this module. One panel per quota key with a broker sensor (from the key registry:
a new key gets its panel), each drawing the busiest broker's rate against the per-broker limit and its level;
a throttle heatmap; the top utilization; the exporter's health. Every query reads the exporter's series
directly, so the dashboard works without the recording rules.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kquotactl.core.keys import KEYS, KeyScope

if TYPE_CHECKING:
    from grafana_foundation_sdk.builders.prometheus import Dataquery
    from grafana_foundation_sdk.cog.builder import Builder
    from grafana_foundation_sdk.models.common import VizLegendOptions, VizTooltipOptions
    from grafana_foundation_sdk.models.dashboard import Dashboard, DataSourceRef, Panel

UID = "kquotactl-quotas"
#: every query is limited to the exporter targets the ``job`` variable selects
JOB = 'job=~"$job"'
#: how many quota-ids the heatmap and the table show
TOP = 20
#: the age of a source's last success that KquotactlExporterStale alerts at (kquotactl-rules.yaml)
STALE_SECONDS = 300

#: a key's unit (core/keys.py) -> Grafana's unit id; any other is shown as a suffix
GRAFANA_UNITS = {"bytes/s": "binBps", "%": "percent"}


def grafana_unit(unit: str) -> str:
    return GRAFANA_UNITS.get(unit, f"suffix: {unit}")


def _datasource() -> DataSourceRef:
    from grafana_foundation_sdk.models.dashboard import DataSourceRef

    return DataSourceRef(type_val="prometheus", uid="${datasource}")


def _query(ref: str, expr: str, legend: str, *, instant: bool = False, table: bool = False) -> Dataquery:
    from grafana_foundation_sdk.builders.prometheus import Dataquery
    from grafana_foundation_sdk.models.prometheus import PromQueryFormat

    q = Dataquery().ref_id(ref).expr(expr).legend_format(legend)
    q = q.instant() if instant else q.range()
    return q.format(PromQueryFormat.TABLE if table else PromQueryFormat.TIME_SERIES)


def quota_id_legend(kind: KeyScope) -> str:
    """A quota-id as Kafka's metric tags spell it (an absent part empty)."""
    return "ip={{ip}}" if kind is KeyScope.IP else "user={{user}},client-id={{client_id}}"


def _legend() -> Builder[VizLegendOptions]:
    """A table beside the graph with each series' last and largest value: the names stay readable."""
    from grafana_foundation_sdk.builders.common import VizLegendOptions
    from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement

    return (
        VizLegendOptions()
        .show_legend(True)
        .display_mode(LegendDisplayMode.TABLE)
        .placement(LegendPlacement.BOTTOM)
        .calcs(["lastNotNull", "max"])
    )


def _tooltip() -> Builder[VizTooltipOptions]:
    from grafana_foundation_sdk.builders.common import VizTooltipOptions
    from grafana_foundation_sdk.models.common import SortOrder, TooltipDisplayMode

    return VizTooltipOptions().mode(TooltipDisplayMode.MULTI).sort(SortOrder.DESCENDING)


def rate_panels() -> list[Builder[Panel]]:
    """One panel per key a broker meters: the busiest broker's rate, and the limit with its level and entity."""
    from grafana_foundation_sdk.builders import timeseries
    from grafana_foundation_sdk.models.common import LineStyle
    from grafana_foundation_sdk.models.dashboard import DynamicConfigValue

    panels: list[Builder[Panel]] = []
    for name, key in KEYS.items():
        if key.sensor is None:
            continue
        qid = quota_id_legend(key.kind)
        sel = f'{JOB},key="{name}"'
        panel = (
            timeseries.Panel()
            .title(f"{name}: rate against limit ({key.unit}, busiest broker)")
            .description(
                f"Per quota-id: the rate on the busiest broker (solid) and the per-broker limit (dashed) with the "
                f"precedence level 1-9 and the entity it comes from, as kquotactl explain resolves it. {key.doc}"
            )
            .datasource(_datasource())
            .unit(grafana_unit(key.unit))
            .min(0)
            .line_width(1)
            .fill_opacity(0)
            .legend(_legend())
            .tooltip(_tooltip())
            .height(9)
            .span(12)
            .with_target(_query("A", f"max without (broker) (kquotactl_quota_usage{{{sel}}})", qid))
            .with_target(
                _query("B", f"kquotactl_quota_limit{{{sel}}}", f"limit {qid} (level {{{{level}}}}: {{{{entity}}}})")
            )
            .override_by_query(
                "B",
                [DynamicConfigValue(id_val="custom.lineStyle", value=LineStyle(fill="dash", dash=[10, 10]))],
            )
        )
        panels.append(panel)
    return panels


def throttle_heatmap() -> Builder[Panel]:
    from grafana_foundation_sdk.builders import heatmap
    from grafana_foundation_sdk.builders.common import HideSeriesConfig

    return (
        heatmap.Panel()
        .title(f"Throttle time per quota-id (top {TOP}, most throttled broker)")
        .description(
            "Each row a quota-id, its colour the throttle the most throttled broker applies per request, in "
            "seconds: the broker's average over its metrics window (2 x 30 s by default), so a throttle shows "
            "up to a minute after it ended. Empty: no quota-id throttled."
        )
        .datasource(_datasource())
        .unit("s")
        .height(9)
        .span(24)
        .calculate(False)
        .hide_from(HideSeriesConfig().legend(False).tooltip(False).viz(False))
        .with_target(
            _query(
                "A",
                f"topk({TOP}, max without (broker) (kquotactl_quota_throttle_time_seconds{{{JOB}}}) > 0)",
                "{{quota_type}} user={{user}},client-id={{client_id}},ip={{ip}}",
            )
        )
    )


def utilization_table() -> Builder[Panel]:
    from grafana_foundation_sdk.builders import table
    from grafana_foundation_sdk.builders.common import TableSortByFieldState
    from grafana_foundation_sdk.models.dashboard import DataTransformerConfig

    expr = (
        f"topk({TOP}, max without (broker) (kquotactl_quota_utilization_ratio{{{JOB}}})"
        f" * ignoring (level, entity) group_left (level, entity) group without () (kquotactl_quota_limit{{{JOB}}}))"
    )
    hidden = {"Time": True, "job": True, "instance": True, "__name__": True}
    return (
        table.Panel()
        .title(f"Top {TOP} utilization (busiest broker's rate / per-broker limit)")
        .description("Usage over the effective limit on the busiest broker, now; 100 % is at the limit.")
        .datasource(_datasource())
        .unit("percentunit")
        .height(9)
        .span(24)
        .with_target(_query("A", expr, "", instant=True, table=True))
        .show_header(True)
        .sort_by([TableSortByFieldState().display_name("utilization").desc(True)])
        .with_transformation(
            DataTransformerConfig(
                id_val="organize",
                options={"excludeByName": hidden, "renameByName": {"Value": "utilization"}},
            )
        )
    )


def health_panels() -> list[Builder[Panel]]:
    """The exporter's own health: scraped, each source fresh, refresh errors and time, what it serves."""
    from grafana_foundation_sdk.builders import stat, timeseries
    from grafana_foundation_sdk.builders.common import ReduceDataOptions
    from grafana_foundation_sdk.models.common import BigValueColorMode, BigValueGraphMode
    from grafana_foundation_sdk.models.dashboard import ValueMap, ValueMappingResult

    up_map = ValueMap(
        options={"0": ValueMappingResult(text="down", color="red"), "1": ValueMappingResult(text="up", color="green")}
    )
    src = "{{instance}} {{source}}"
    last = ReduceDataOptions().calcs(["lastNotNull"])
    return [
        stat.Panel()
        .title("Exporter scraped, sources refreshed")
        .description("up: Prometheus scrapes the exporter; per source: its last refresh succeeded.")
        .datasource(_datasource())
        .mappings([up_map])
        .color_mode(BigValueColorMode.BACKGROUND)
        .reduce_options(last)
        .graph_mode(BigValueGraphMode.NONE)
        .height(6)
        .span(8)
        .with_target(_query("A", f"up{{{JOB}}}", "scrape {{instance}}"))
        .with_target(_query("B", f"kquotactl_exporter_up{{{JOB}}}", src)),
        stat.Panel()
        .title("Since each source's last successful refresh")
        .description(f"Seconds since the last success; KquotactlExporterStale alerts above {STALE_SECONDS} s.")
        .datasource(_datasource())
        .unit("s")
        .reduce_options(last)
        .graph_mode(BigValueGraphMode.AREA)
        .height(6)
        .span(8)
        .with_target(_query("A", f"time() - kquotactl_exporter_last_success_timestamp_seconds{{{JOB}}}", src)),
        stat.Panel()
        .title("Served")
        .description("Active quota-ids (a sensor on some broker) and configured entities the exporter serves.")
        .datasource(_datasource())
        .unit("short")
        .reduce_options(last)
        .graph_mode(BigValueGraphMode.AREA)
        .height(6)
        .span(8)
        .with_target(_query("A", f"kquotactl_exporter_quota_ids{{{JOB}}}", "quota-ids {{instance}}"))
        .with_target(_query("B", f"kquotactl_exporter_entities{{{JOB}}}", "entities {{instance}}")),
        timeseries.Panel()
        .title("Refresh errors (errors/s)")
        .datasource(_datasource())
        .unit("suffix: errors/s")
        .min(0)
        .line_width(1)
        .legend(_legend())
        .height(7)
        .span(12)
        .with_target(_query("A", f"rate(kquotactl_exporter_refresh_errors_total{{{JOB}}}[5m])", src)),
        timeseries.Panel()
        .title("Refresh duration, 90th percentile (s)")
        .datasource(_datasource())
        .unit("s")
        .min(0)
        .line_width(1)
        .legend(_legend())
        .height(7)
        .span(12)
        .with_target(
            _query(
                "A",
                f"histogram_quantile(0.9, rate(kquotactl_exporter_refresh_duration_seconds_bucket{{{JOB}}}[5m]))",
                src,
            )
        ),
    ]


def build() -> Dashboard:
    """The dashboard as the SDK's model."""
    from grafana_foundation_sdk.builders.dashboard import Dashboard as DashboardBuilder
    from grafana_foundation_sdk.builders.dashboard import DatasourceVariable, QueryVariable, Row
    from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

    job = (
        QueryVariable("job")
        .label("exporter job")
        .datasource(DataSourceRef(type_val="prometheus", uid="${datasource}"))
        .query("label_values(kquotactl_exporter_up, job)")
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
    )
    board = (
        DashboardBuilder("Kafka client quotas (kquotactl)")
        .uid(UID)
        .description("Each quota-id's rate against its limit, throttling and the kquotactl exporter's health.")
        .tags(["kafka", "quotas", "kquotactl"])
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .with_variable(DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        .with_variable(job)
        .with_row(Row("Rate against limit, per quota-id"))
    )
    for panel in rate_panels():
        board = board.with_panel(panel)
    board = board.with_row(Row("Throttling and utilization"))
    board = board.with_panel(throttle_heatmap()).with_panel(utilization_table())
    board = board.with_row(Row("kquotactl exporter"))
    for panel in health_panels():
        board = board.with_panel(panel)
    model = board.build()
    for number, built in enumerate(model.panels or [], start=1):
        built.id_val = number  # unique within the dashboard, stable across `make docs`
    return model


def dashboard_json() -> str:
    """The dashboard as Grafana imports it: the SDK's JSON, keys sorted, so ``make docs`` output is stable."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    return json.dumps(build(), cls=JSONEncoder, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
