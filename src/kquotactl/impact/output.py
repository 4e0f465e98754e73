"""Render an impact report: JSON, a rich table, Parquet + CSV files and a picture (matplotlib, Agg backend)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from kquotactl.core.keys import KEYS, PRODUCE_KEY, human, iec_rate, limit_text, significant
from kquotactl.core.layout import table_or_blocks
from kquotactl.core.layout import wrap as wrap_lines
from kquotactl.core.sanitizer import desanitize
from kquotactl.core.wording import shown_name
from kquotactl.impact.replay import USAGE

if TYPE_CHECKING:
    from kquotactl.impact.replay import Sid

COLUMNS = (
    "key",
    "quota_id",
    "level",
    "entity_path",
    "limit",
    "seconds_throttled",
    "max_rate",
    "total_throttle_ms",
    "max_throttle_ms",
)


def qid_label(qid: Mapping[str, str]) -> str:
    """``user=alice,client-id=app1`` / ``ip=10.0.0.1``, the broker's metric-tag spelling (an empty tag: not part of
    the quota-id; a name that holds spaces or control characters quoted and escaped)."""
    return ",".join(f"{k}={shown_name(v) if v else ''}" for k, v in qid.items())


def row_label(row: Mapping[str, Any]) -> str:
    """A report row's quota-id, and the broker it was replayed for when the traffic was per broker."""
    label = qid_label(row["quota_id"])
    return f"{label} @ {row['broker']}" if row.get("broker") else label


def dump_json(report: Mapping[str, Any], out: IO[str]) -> None:
    """The report as JSON; a rate a 0 ms window makes infinite (``--kafka-version`` before 3.3 with one sample) is
    Java's spelling as a string, as ``explain --replay`` writes it."""
    from kquotactl.core.throttlemath import json_double

    rows = report.get("quota_ids")
    if isinstance(rows, list):  # a report (a summary alone has the count there)
        report = {**report, "quota_ids": [{**r, "max_rate": json_double(r["max_rate"])} for r in rows]}
    json.dump(report, out, indent=2, sort_keys=False)
    out.write("\n")


def _write(out: IO[str], lines: Sequence[str]) -> None:
    out.write("".join(line + "\n" for line in lines))


def render_table(report: Mapping[str, Any], out: IO[str], top: int, width: int | None = None) -> None:
    """A summary line block and the top-N quota-ids by total throttle, then the traffic per quota type: tables
    that fit ``width`` (a terminal's columns; None: a pipe, any width), else one block per row
    (:mod:`kquotactl.core.layout`)."""
    s = report["summary"]
    ids = s["quota_ids"]
    summary = (
        f"{s['rows']:,} rows over {s['seconds']:,} s; {ids:,} quota-id{'' if ids == 1 else 's'}, "
        f"{s['throttled_quota_ids']:,} throttled; "
        f"{s['share_of_traffic_throttled']:.1%} of produce+fetch bytes in throttled requests "
        f"(open loop: the replay does not slow traffic down)."
    )
    _write(out, wrap_lines(summary, width))
    header = ["key", "quota-id", "level", "entity", "limit", "throttled s", "max rate", "total ms", "max ms"]
    at_least = _lower_bounds(s)
    rows = [
        [
            r["key"],
            row_label(r),
            str(r["level"]),
            r["entity_path"],
            limit_cell(r["key"], r["limit"]),
            f"{r['seconds_throttled']:,}",
            at_least.get(r["key"], "") + rate_text(r["key"], r["max_rate"]),
            f"{r['total_throttle_ms']:,}",
            f"{r['max_throttle_ms']:,}",
        ]
        for r in [r for r in report["quota_ids"] if r["seconds_throttled"] > 0][:top]
    ]
    if rows:
        _write(out, [f"Top {top} quota-ids by total throttle"])
        _write(out, table_or_blocks(header, rows, width, ident=2, right=(2, 4, 5, 6, 7, 8)))
    else:
        _write(out, ["No quota-id would be throttled."])
    traffic = [
        [
            key,
            f"{v['rows']:,}",
            f"{v['rows_unlimited']:,}",
            at_least.get(key, "") + usage_text(key, v["usage"]),
            f"{v['share_throttled']:.1%}",
        ]
        for key, v in s["traffic"].items()
    ]
    _write(out, ["Traffic per quota type"])
    _write(out, table_or_blocks(["key", "rows", "unlimited", "usage", "throttled"], traffic, width, right=(1, 2, 3, 4)))
    if at_least:
        _write(out, wrap_lines(f"≥: {s['request_log']['connections_note']}.", width))


def _lower_bounds(summary: Mapping[str, Any]) -> dict[str, str]:
    """``{key: "≥ "}`` for the keys whose usage the input only bounds from below (connections from a request log)."""
    log = summary.get("request_log") or {}
    return {k: "≥ " for k, usage in USAGE.items() if log.get(usage.column) == "lower bound"}


def flat_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The quota-id rows with the quota-id spread over ``qid_user``/``qid_client_id``/``qid_ip`` columns."""
    out = []
    for r in report["quota_ids"]:
        q = r["quota_id"]
        out.append(
            {
                **({"broker": r["broker"]} if "broker" in r else {}),
                "key": r["key"],
                "qid_user": q.get("user"),
                "qid_client_id": q.get("client-id"),
                "qid_ip": q.get("ip"),
                "level": r["level"],
                "entity_path": r["entity_path"],
                "limit": float(r["limit"]),
                "seconds_throttled": r["seconds_throttled"],
                "max_rate": r["max_rate"],
                "total_throttle_ms": r["total_throttle_ms"],
                "max_throttle_ms": r["max_throttle_ms"],
            }
        )
    return out


def write_files(
    report: Mapping[str, Any],
    timeline: Mapping[Sid, Sequence[tuple[int, int, int]]],
    out_dir: str | Path,
    top: int,
    size_s: int,
    first_sample: int | None,
    rates: Mapping[Sid, Sequence[tuple[int, int, float]]] | None = None,
    replayed: Mapping[str, str] | None = None,
) -> list[Path]:
    """``quota_ids.parquet``, ``quota_ids.csv``, ``summary.json`` and ``impact.png`` in ``out_dir``."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    d = Path(out_dir)
    d.mkdir(exist_ok=True)  # its parent must exist (checked by the command): a typo is not a new tree
    rows = flat_rows(report)
    per_broker = [("broker", pa.string())] if any("broker" in r for r in rows) else []
    schema = pa.schema(
        [
            *per_broker,
            ("key", pa.string()),
            ("qid_user", pa.string()),
            ("qid_client_id", pa.string()),
            ("qid_ip", pa.string()),
            ("level", pa.int32()),
            ("entity_path", pa.string()),
            ("limit", pa.float64()),
            ("seconds_throttled", pa.int64()),
            ("max_rate", pa.float64()),
            ("total_throttle_ms", pa.int64()),
            ("max_throttle_ms", pa.int64()),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    paths = [d / "quota_ids.parquet", d / "quota_ids.csv", d / "summary.json", d / "impact.png"]
    pq.write_table(table, paths[0])
    pcsv.write_csv(table, paths[1])
    with open(paths[2], "w") as f:
        dump_json(report["summary"], f)
    plot(report, timeline, paths[3], top, size_s, first_sample, rates, replayed)
    return paths


# Units: one home for the table's cells and the picture's axes.
def rate_scale(key: str, magnitude: float) -> tuple[float, str]:
    """``(divisor, unit)`` to show rates of ``key`` around ``magnitude`` (the figure's axes): IEC units for byte
    rates (:func:`kquotactl.core.keys.iec_rate`), ``%`` for request_percentage, the key's own unit otherwise."""
    k = KEYS[key]
    return iec_rate(magnitude) if k.byte_rate else (1.0, k.unit)


def rate_text(key: str, value: float | None) -> str:
    """A measured rate: ``3.21 MiB/s``, ``479 %``, ``2,000 requests/s``; ``unlimited`` for None."""
    return human(KEYS[key], value)


def limit_cell(key: str, value: float | None) -> str:
    """A limit, as every command shows one (:func:`kquotactl.core.keys.limit_text`): never rounded."""
    return limit_text(KEYS[key], value)


def usage_text(key: str, usage: float) -> str:
    """A quota type's total usage over the replay: bytes, requests, request-thread time, connections."""
    if KEYS[key].byte_rate:
        return human(KEYS[key], usage).removesuffix("/s")
    if USAGE[key].column.endswith("_ms"):  # thread time in ms: request_percentage's usage (request_time_ms)
        return f"{significant(usage / 1000)} s of thread time"
    return f"{usage:,.0f} {KEYS[key].unit.removesuffix('/s')}"


def throttle_scale(max_ms: float) -> tuple[float, str]:
    """Throttle in ms, or in s once it reaches 10 s."""
    return (1000.0, "s") if max_ms >= 10_000 else (1.0, "ms")


def who(quota_id: Mapping[str, str], level: int) -> str:
    """The quota-id in words, saying who shares the quota: levels 3 and 6 all of a user's client-ids, 7 and 8 one
    client-id across users, the others one (user, client-id) pair. The user is the principal's own name (metric
    tags hold it sanitized)."""

    def name(v: str) -> str:
        return v if v else '""'

    if "ip" in quota_id:
        return f"ip {name(quota_id['ip'])}"
    user, client = desanitize(quota_id.get("user", "")), quota_id.get("client-id", "")
    if level in (3, 6):
        return f"user {name(user)} (all its client-ids)"
    if level in (7, 8):
        return f"client-id {name(client)} (all users)"
    return f"user {name(user)}, client-id {name(client)}"


def wrap(text: str, width: int) -> str:
    """Lines of at most ``width`` characters, broken at spaces only: a name is never cut."""
    return "\n".join(wrap_lines(text, width)) or text


MAX_PANELS = 12  # the picture's small multiples; the table and the files keep --top
COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#393b79",
    "#637939",
)  # one per quota-id, the same on its panel and its bar (matplotlib's tab10, then two darker ones)


def _steps(
    intervals: Sequence[tuple[int, int, float]], base: int, size_s: int, div: float
) -> tuple[list[float], list[float]]:
    """Step-line points for ``(start_sample, end_sample, value)`` intervals, 0 in the gaps between them."""
    xs: list[float] = []
    ys: list[float] = []
    for s, e, v in intervals:
        x0, x1 = (s - base) * size_s, (e - base) * size_s
        if xs and xs[-1] < x0:
            xs += [xs[-1], x0]
            ys += [0.0, 0.0]
        xs += [x0, x1]
        ys += [v / div, v / div]
    return xs, ys


def _title(
    report: Mapping[str, Any], shown: int, first_sample: int | None, size_s: int, replayed: Mapping[str, str]
) -> tuple[str, str]:
    import datetime as dt

    s = report["summary"]
    w = s.get("window", {"num": 11, "size_seconds": size_s})
    what = replayed.get("input", "traffic")
    quotas = replayed.get("quotas", "")
    line1 = f"Impact replay of {what}" + (f" against {quotas}" if quotas else "")
    when = ""
    if first_sample is not None:
        start = dt.datetime.fromtimestamp(first_sample * size_s, dt.UTC)
        when = f" from {start:%Y-%m-%d %H:%M:%S} UTC"
    line2 = (
        f"{s['rows']:,} rows over {s['seconds']:,} s{when}; quota window {w['num']} × {w['size_seconds']} s; "
        f"top {shown} of {s['throttled_quota_ids']:,} throttled quota-ids by total throttle (open loop)"
    )
    return line1, line2


def figure(
    report: Mapping[str, Any],
    timeline: Mapping[Sid, Sequence[tuple[int, int, int]]],
    top: int,
    size_s: int,
    first_sample: int | None,
    rates: Mapping[Sid, Sequence[tuple[int, int, float]]] | None = None,
    replayed: Mapping[str, str] | None = None,
) -> Any:
    """The impact picture as a matplotlib Figure: one panel per top quota-id (its window rate against its limit,
    its throttle on a right axis), then throttled seconds per quota-id in the same colours; legend and title
    outside the panels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    from kquotactl.impact.replay import quota_id

    rates = rates or {}
    rows = [r for r in report["quota_ids"] if r["seconds_throttled"] > 0][: min(top, MAX_PANELS)]
    by_id: dict[tuple[str, int, str], Sid] = {}  # (key, level, label) -> the engine's quota-id
    for sid in (*timeline, *rates):
        key, level, qu, qc, qip = sid
        by_id[(key, level, qid_label(quota_id(key, qu, qc, qip)))] = sid
    seconds = report["summary"]["seconds"]
    base = first_sample or 0
    ncols = 1 if len(rows) <= 3 else 2 if len(rows) <= 8 else 3
    nrows = max(1, -(-len(rows) // ncols))
    panels_h, bar_h = 3.3 * nrows + 0.5, (1.0 + 0.42 * len(rows) if rows else 0.0)
    fig = Figure(figsize=(6.4 * ncols if ncols > 1 else 11, 0.6 + panels_h + bar_h), layout="constrained")
    FigureCanvasAgg(fig)  # draws without a display (and without pyplot's global state)
    cast(ConstrainedLayoutEngine, fig.get_layout_engine()).set(h_pad=0.03, hspace=0.01)  # layout="constrained"
    line1, line2 = _title(report, len(rows), first_sample, size_s, replayed or {})
    chars = int(fig.get_figwidth() * 13)  # what fits at 11 pt
    fig.suptitle(f"{wrap(line1, chars)}\n{wrap(line2, chars)}", fontsize=11, x=0.01, ha="left")
    if not rows:
        ax = fig.add_subplot()
        ax.text(0.5, 0.5, "nothing throttled", ha="center", va="center", transform=ax.transAxes, fontsize=14)
        ax.set_axis_off()
        return fig
    top_fig, bottom_fig = cast("Sequence[SubFigure]", fig.subfigures(2, 1, height_ratios=[panels_h, bar_h]))
    cells = top_fig.add_gridspec(2 * nrows, ncols, height_ratios=[3, 1.15] * nrows)
    first_ax = None
    for i, r in enumerate(rows):
        color = COLORS[i % len(COLORS)]
        ax = top_fig.add_subplot(cells[2 * (i // ncols), i % ncols], sharex=first_ax)
        thr = top_fig.add_subplot(cells[2 * (i // ncols) + 1, i % ncols], sharex=ax)
        first_ax = first_ax or ax
        ax.set_gid(f"rate-{i}")
        thr.set_gid(f"throttle-{i}")
        key = r["key"]
        panel = by_id.get((key, r["level"], qid_label(r["quota_id"])))
        limit = float(r["limit"])
        div, unit = rate_scale(key, max(limit, r["max_rate"]))
        xs, ys = _steps(rates.get(panel, ()), base, size_s, div) if panel else ([], [])
        ax.plot(xs, ys, color=color, linewidth=1.8, label="observed rate", gid="rate")
        ax.axhline(limit / div, color="black", linestyle="--", linewidth=1.2, label="limit", gid="limit")
        ax.set_ylim(0, max(limit, r["max_rate"]) / div * 1.12)
        ax.set_xlim(0, seconds)
        ax.set_ylabel(f"rate ({unit})")
        ax.tick_params(labelbottom=False)
        ax.grid(axis="y", color="0.9")
        tdiv, tunit = throttle_scale(r["max_throttle_ms"])
        tx, ty = _steps(timeline.get(panel, ()), base, size_s, tdiv) if panel else ([], [])
        thr.fill_between(tx, ty, color=color, alpha=0.45, linewidth=0, label="throttle")
        thr.plot(tx, ty, color=color, linewidth=1.0)
        thr.set_ylim(0, max(r["max_throttle_ms"] / tdiv, 1e-9) * 1.2)
        thr.yaxis.set_major_locator(MaxNLocator(3))
        thr.xaxis.set_major_locator(MaxNLocator(integer=True))
        thr.set_ylabel(f"throttle ({tunit})")
        capped = KEYS[key].throttle_capped and r["max_throttle_ms"] == size_s * 1000
        head = wrap(f"{i + 1}. {key}: {who(r['quota_id'], r['level'])}", 66 if ncols > 1 else 110)
        width = 80 if ncols > 1 else 130
        parts = [
            f"limit {limit_cell(key, limit)} ({r['entity_path']}, level {r['level']})",
            f"throttled {r['seconds_throttled']:,} of {seconds:,} s, max {r['max_throttle_ms']:,} ms"
            + (" (capped)" if capped else ""),
        ]
        sub = "; ".join(parts) if len("; ".join(parts)) <= width else "\n".join(wrap(p, width) for p in parts)
        ax.set_title(f"{head}\n{sub}", loc="left", fontsize=9.5)
        if i // ncols == nrows - 1 or i + ncols >= len(rows):
            thr.set_xlabel("seconds since the first sample")
    handles = [
        Line2D([], [], color="0.3", linewidth=1.8, label="measured rate (what the limit is compared with)"),
        Line2D([], [], color="black", linestyle="--", linewidth=1.2, label="limit"),
        Patch(color="0.3", alpha=0.45, label="throttle (delay per second)"),
    ]
    top_fig.legend(handles=handles, loc="outside upper center", ncols=3, frameon=False)
    bars = bottom_fig.add_subplot()
    bars.set_gid("bars")
    ypos = range(len(rows))
    bars.barh(ypos, [r["seconds_throttled"] for r in rows], color=[COLORS[i % len(COLORS)] for i in ypos])
    labels = [wrap(f"{i + 1}. {r['key']}: {who(r['quota_id'], r['level'])}", 56) for i, r in enumerate(rows)]
    bars.set_yticks(list(ypos), labels)
    bars.invert_yaxis()
    for i, r in enumerate(rows):
        bars.annotate(
            f" {r['seconds_throttled']:,} s; max rate {rate_text(r['key'], r['max_rate'])}",
            (r["seconds_throttled"], i),
            va="center",
            fontsize=8.5,
        )
    bars.set_xlim(0, seconds * 1.35)
    bars.set_xticks([t for t in MaxNLocator(integer=True).tick_values(0, seconds) if 0 <= t <= seconds])
    bars.set_xlabel(f"throttled seconds (of {seconds:,} s replayed)")
    bars.set_title("Throttled seconds per quota-id", loc="left", fontsize=10)
    return fig


def plot(
    report: Mapping[str, Any],
    timeline: Mapping[Sid, Sequence[tuple[int, int, int]]],
    path: Path,
    top: int,
    size_s: int,
    first_sample: int | None,
    rates: Mapping[Sid, Sequence[tuple[int, int, float]]] | None = None,
    replayed: Mapping[str, str] | None = None,
) -> None:
    """Write :func:`figure` as a PNG (Agg, no display needed)."""
    fig = figure(report, timeline, top, size_s, first_sample, rates, replayed)
    fig.savefig(path, dpi=100)


def render_compare(cmp: Mapping[str, Any], out: IO[str], top: int, width: int | None = None) -> None:
    """Quota-ids that start/stop being throttled and (user, client-id) pairs whose limit changes."""
    s = cmp["summary"]
    summary = (
        f"Compared with the base quota set: throttled quota-ids {s['throttled_quota_ids'][0]:,} → "
        f"{s['throttled_quota_ids'][1]:,}; {s['started']:,} start, {s['stopped']:,} stop, {s['changed']:,} change; "
        f"{s['limit_changes']:,} effective limits change on this traffic."
    )
    _write(out, wrap_lines(summary, width))
    for title, found in (
        ("Start being throttled", cmp["started_throttling"]),
        ("Stop being throttled", cmp["stopped_throttling"]),
    ):
        if not found:
            continue
        rows = [
            [
                r["key"],
                row_label(r),
                r["entity_path"],
                limit_cell(r["key"], r["limit"]),
                f"{r['seconds_throttled']:,}",
                f"{r['total_throttle_ms']:,}",
            ]
            for r in found[:top]
        ]
        header = ["key", "quota-id", "entity", "limit", "throttled s", "total ms"]
        _write(out, [title, *table_or_blocks(header, rows, width, ident=2, right=(3, 4, 5))])
    if cmp["limit_changes"]:

        def side(key: str, x: Mapping[str, Any]) -> str:
            return "unlimited" if x["limit"] is None else f"{limit_cell(key, x['limit'])} ({x['entity_path']})"

        rows = [
            [
                f"ip={r['ip']}" if "ip" in r else f"user={r['user']},client-id={r['client-id']}",
                r["key"],
                side(r["key"], r["before"]),
                side(r["key"], r["after"]),
            ]
            for r in cmp["limit_changes"][:top]
        ]
        _write(out, [f"Effective limit changes (first {top})"])
        _write(out, table_or_blocks(["who", "key", "before", "after"], rows, width, ident=2))


def render_topics(t: Mapping[str, Any], out: IO[str], top: int, width: int | None = None) -> None:
    """Bytes the topic-threshold model would drop per topic, next to what client quotas would throttle."""
    rate = {"one-minute-rate": "Meter one-minute rates", "quota-window": "quota-window rates"}.get(t["topic_rate"], "")
    total = limit_cell(PRODUCE_KEY, round(t["total_threshold"]))
    summary = (
        f"Topic thresholds (total {total}, {rate}): {t['bytes_dropped']:,} of {t['bytes_in']:,} "
        f"produce bytes dropped ({t['share_dropped']:.1%}); client quotas would throttle "
        f"{t['client_quota_throttled_bytes']:,} bytes."
    )
    _write(out, wrap_lines(summary, width))
    header = ["topic", "threshold", "explicit", "bytes in", "dropped", "seconds dropping", "client-quota bytes"]
    rows = [
        [
            r["topic"],
            limit_cell(PRODUCE_KEY, round(r["threshold"])),
            "yes" if r["explicit"] else "share",
            f"{r['bytes_in']:,}",
            f"{r['bytes_dropped']:,}",
            f"{r['seconds_dropping']:,.1f}",
            f"{r['client_quota_throttled_bytes']:,}",
        ]
        for r in t["topics"][:top]
    ]
    _write(out, [f"Top {top} topics by bytes dropped", *table_or_blocks(header, rows, width, right=(1, 3, 4, 5, 6))])
