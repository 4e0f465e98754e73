"""The impact picture's structure, read from its matplotlib objects (not pixels): one panel per top quota-id with
the rate against its limit and the throttle below, units on every axis, colours shared with the bars, legend and
title outside the panels, labels never cut."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kquotactl.core.keys import KEYS
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact import generate
from kquotactl.impact.engine import Analysis, Runner
from kquotactl.impact.output import MAX_PANELS, figure, rate_scale, rate_text, usage_text, who, wrap
from kquotactl.impact.replay import Window

TOP = 6
REPLAYED = {"input": "traffic.parquet", "quotas": "quotas.yaml"}


@pytest.fixture(scope="module")
def analysis(tmp_path_factory) -> Analysis:
    d: Path = tmp_path_factory.mktemp("figure")
    generate.write(generate.generate(20000, users=100, clients=400, rate=4000), d / "t.parquet")
    index = QuotaIndex(generate.quotas(100, 400))
    return Runner(str(d / "t.parquet"), "local", Window()).analyze(index, top=TOP)


@pytest.fixture(scope="module")
def fig(analysis):
    f = figure(analysis.report, analysis.timeline, TOP, 1, analysis.first_sample, analysis.rates, REPLAYED)
    f.canvas.draw()  # lays the figure out, so extents are final
    return f


def _axes(fig, prefix: str) -> list:
    found = [ax for ax in fig.get_axes() if (ax.get_gid() or "").startswith(prefix)]
    return sorted(found, key=lambda ax: int(ax.get_gid().split("-")[1]))


def _throttled(analysis) -> list[dict]:
    return [r for r in analysis.report["quota_ids"] if r["seconds_throttled"] > 0][:TOP]


def test_one_rate_panel_and_one_throttle_strip_per_top_quota_id(fig, analysis):
    rows = _throttled(analysis)
    assert len(rows) == TOP  # the generated traffic throttles more than TOP quota-ids
    assert len(_axes(fig, "rate-")) == len(_axes(fig, "throttle-")) == TOP
    assert len([ax for ax in fig.get_axes() if ax.get_gid() == "bars"]) == 1
    for ax, r in zip(_axes(fig, "rate-"), rows, strict=True):
        title = ax.get_title(loc="left").replace("\n", " ")
        assert r["key"] in title and who(r["quota_id"], r["level"]) in title and r["entity_path"] in title


def test_axis_labels_carry_units(fig, analysis):
    for ax, r in zip(_axes(fig, "rate-"), _throttled(analysis), strict=True):
        label = ax.get_ylabel()
        if KEYS[r["key"]].byte_rate:
            assert re.fullmatch(r"rate \((B|KiB|MiB|GiB)/s\)", label), label
        else:
            assert label == f"rate ({KEYS[r['key']].unit})"
    for ax in _axes(fig, "throttle-"):
        assert ax.get_ylabel() in ("throttle (ms)", "throttle (s)")
    assert _axes(fig, "throttle-")[-1].get_xlabel() == "seconds since the first sample"
    assert "throttled seconds" in next(ax for ax in fig.get_axes() if ax.get_gid() == "bars").get_xlabel()


def test_each_rate_panel_draws_its_limit_and_the_observed_rate_in_the_panel_units(fig, analysis):
    for ax, r in zip(_axes(fig, "rate-"), _throttled(analysis), strict=True):
        div, _ = rate_scale(r["key"], max(r["limit"], r["max_rate"]))
        limits = [ln for ln in ax.get_lines() if ln.get_gid() == "limit"]
        assert len(limits) == 1
        assert list(limits[0].get_ydata()) == pytest.approx([r["limit"] / div] * 2)
        (rate,) = [ln for ln in ax.get_lines() if ln.get_gid() == "rate"]
        assert max(rate.get_ydata()) == pytest.approx(r["max_rate"] / div)  # the report's peak is on the line
        assert max(rate.get_ydata()) > r["limit"] / div  # throttled: the line crosses the limit
        assert ax.get_ylim()[1] >= max(r["max_rate"], r["limit"]) / div  # nothing clipped


def test_throttle_strips_show_each_quota_ids_throttle(fig, analysis):
    for ax, r in zip(_axes(fig, "throttle-"), _throttled(analysis), strict=True):
        div = 1000.0 if ax.get_ylabel() == "throttle (s)" else 1.0
        ys = [y for line in ax.get_lines() for y in line.get_ydata()]
        assert max(ys) == pytest.approx(r["max_throttle_ms"] / div)
        assert ax.get_ylim()[1] > max(ys)  # the capped 1000 ms of request quotas stays visible


def test_colours_are_one_per_quota_id_and_shared_with_the_bars(fig):
    bars = next(ax for ax in fig.get_axes() if ax.get_gid() == "bars")
    colours = [(ln.get_color()) for ax in _axes(fig, "rate-") for ln in ax.get_lines() if ln.get_gid() == "rate"]
    assert len(set(colours)) == TOP
    from matplotlib.colors import to_rgba

    assert [p.get_facecolor() for p in bars.patches] == [to_rgba(c) for c in colours]


def test_legend_and_title_sit_outside_every_axes(fig):
    renderer = fig.canvas.get_renderer()
    legends = fig.legends + [sf_legend for sf in fig.subfigs for sf_legend in sf.legends]
    assert len(legends) == 1
    legend, title = legends[0].get_window_extent(renderer), fig._suptitle.get_window_extent(renderer)
    assert not legend.overlaps(title)
    for ax in fig.get_axes():
        extent = ax.get_tightbbox(renderer)  # the axes with its title, labels and tick labels
        for box in (legend, title):
            assert not box.overlaps(extent), ax.get_gid()
        assert ax.get_legend() is None
    assert [t.get_text() for t in legends[0].get_texts()][:2] == [
        "measured rate (what the limit is compared with)",
        "limit",
    ]


def test_title_says_what_was_replayed(fig):
    title = fig._suptitle.get_text()
    assert "traffic.parquet" in title and "quotas.yaml" in title
    assert "quota window 11 × 1 s" in title and "20,000 rows" in title


def test_labels_are_whole_and_inside_the_picture(fig, analysis):
    renderer = fig.canvas.get_renderer()
    bars = next(ax for ax in fig.get_axes() if ax.get_gid() == "bars")
    labels = [t.get_text().replace("\n", " ") for t in bars.get_yticklabels()]
    assert labels == [
        f"{i + 1}. {r['key']}: {who(r['quota_id'], r['level'])}" for i, r in enumerate(_throttled(analysis))
    ]
    page = fig.bbox
    texts = [
        t for ax in fig.get_axes() for t in (*ax.get_yticklabels(), *ax.get_xticklabels(), ax.title, ax._left_title)
    ]
    texts += [fig._suptitle, *(t for sf in fig.subfigs for lg in sf.legends for t in lg.get_texts())]
    for t in texts:
        if t.get_text() and t.get_visible():
            box = t.get_window_extent(renderer)
            assert page.x0 - 0.5 <= box.x0 and box.x1 <= page.x1 + 0.5, t.get_text()
            assert page.y0 - 0.5 <= box.y0 and box.y1 <= page.y1 + 0.5, t.get_text()


def test_panels_stop_at_max_panels_and_nothing_throttled_says_so(analysis):
    many = figure(analysis.report, analysis.timeline, 1000, 1, analysis.first_sample, analysis.rates)
    throttled = sum(1 for r in analysis.report["quota_ids"] if r["seconds_throttled"] > 0)
    assert len(_axes(many, "rate-")) == min(MAX_PANELS, throttled)
    calm = {"summary": analysis.report["summary"], "quota_ids": []}
    empty = figure(calm, {}, TOP, 1, analysis.first_sample)
    assert [t.get_text() for ax in empty.get_axes() for t in ax.texts] == ["nothing throttled"]


def test_units_and_words():
    assert rate_text("producer_byte_rate", 2 * 1024**2) == "2 MiB/s"
    assert rate_text("producer_byte_rate", 3368246.3) == "3.21 MiB/s"
    assert rate_text("consumer_byte_rate", 13_389_984.3) == "12.8 MiB/s"
    assert rate_text("consumer_byte_rate", 512) == "512 B/s"
    assert rate_text("request_percentage", 150.0) == "150 %"
    assert rate_text("request_percentage", 1993.8) == "1,994 %"
    assert rate_text("request_rate", 2000) == "2,000 requests/s"
    assert rate_text("connection_creation_rate", 12.5) == "12.5 connections/s"
    assert rate_text("controller_mutation_rate", 5) == "5 mutations/s"
    assert usage_text("producer_byte_rate", 1.5 * 1024**3) == "1.5 GiB"
    assert usage_text("request_percentage", 2_757_000.0) == "2,757 s of thread time"
    assert who({"user": "svc-0", "client-id": ""}, 3) == "user svc-0 (all its client-ids)"
    assert who({"user": "", "client-id": "app-1"}, 8) == "client-id app-1 (all users)"
    assert who({"user": "a", "client-id": ""}, 1) == 'user a, client-id ""'
    assert who({"ip": "10.0.0.1"}, 1) == "ip 10.0.0.1"
    long = "request_percentage: client-id a-very-long-client-id-that-does-not-fit-anywhere (all users)"
    assert wrap(long, 20).split() == long.split()  # broken at spaces only


def _synthetic() -> tuple[dict, dict, dict, int]:
    """Three throttled quota-ids with long names, an IPv6 quota and a GiB/s limit, as an engine would hand them."""
    from kquotactl.core.sanitizer import sanitize

    first = 1_767_225_600
    cases = [
        (("consumer_byte_rate", 1, "CN=analytics,OU=data,O=Example Corp", LONG_CLIENT, None), 3 * 1024**3),
        (("connection_creation_rate", 1, None, None, "2001:db8:85a3::8a2e:370:7334"), 20),
        (("request_percentage", 5, "bob", "", None), 250.0),
    ]
    rows, throttle, rates = [], {}, {}
    for i, (sid, limit) in enumerate(cases):
        key, level, user, client, ip = sid
        rates[sid] = [(first + t, first + t + 1, limit * (0.5 + t / 20)) for t in range(40)]
        throttle[sid] = [(first + t, first + t + 1, 100 * t) for t in range(10, 40)]
        qid = {"ip": ip} if ip else {"user": sanitize(user), "client-id": client}
        rows.append(
            {
                "key": key,
                "quota_id": qid,
                "level": level,
                "entity_path": f"entity/{i}",
                "limit": limit,
                "seconds_throttled": 30,
                "max_rate": limit * 2.45,
                "total_throttle_ms": 99_000 - i,
                "max_throttle_ms": 3_900,
            }
        )
    summary = {"rows": 1000, "seconds": 40, "window": {"num": 11, "size_seconds": 1}, "throttled_quota_ids": 3}
    return {"summary": summary, "quota_ids": rows}, throttle, rates, first


LONG_CLIENT = "payments-settlement-batch-exporter-7f9c8d6b5-x2x9q.eu-west-1.prod"


def test_long_names_wrap_whole_and_stay_in_the_picture():
    report, throttle, rates, first = _synthetic()
    f = figure(report, throttle, TOP, 1, first, rates, {"input": "s3a://bucket/traffic/2026-11-22/", "quotas": "q"})
    f.canvas.draw()
    renderer = f.canvas.get_renderer()
    rate_axes = _axes(f, "rate-")
    assert [ax.get_ylabel() for ax in rate_axes] == ["rate (GiB/s)", "rate (connections/s)", "rate (%)"]
    titles = [ax.get_title(loc="left") for ax in rate_axes]
    assert "CN=analytics,OU=data,O=Example Corp" in titles[0].replace("\n", " ")  # the principal, not its tag
    assert LONG_CLIENT in titles[0].split()  # on one line, whole
    assert "ip 2001:db8:85a3::8a2e:370:7334" in titles[1]
    assert 'user bob, client-id ""' in titles[2]
    bars = next(ax for ax in f.get_axes() if ax.get_gid() == "bars")
    assert LONG_CLIENT in bars.get_yticklabels()[0].get_text().split()
    for t in [*bars.get_yticklabels(), *(ax._left_title for ax in rate_axes), f._suptitle]:
        box = t.get_window_extent(renderer)
        assert f.bbox.x0 - 0.5 <= box.x0 and box.x1 <= f.bbox.x1 + 0.5, t.get_text()
