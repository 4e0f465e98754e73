"""Render an impact report: JSON, a rich table, Parquet + CSV files and a picture (matplotlib, Agg backend)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from kquotactl.sanitizer import sanitize

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
    """``user=alice,client-id=app1`` / ``ip=10.0.0.1``, the broker's metric-tag spelling."""
    return ",".join(f"{k}={v}" for k, v in qid.items())


def dump_json(report: Mapping[str, Any], out: IO[str]) -> None:
    json.dump(report, out, indent=2, sort_keys=False)
    out.write("\n")


def _console(out: IO[str], color: bool) -> Any:
    """The reports' console: colour only when asked, fixed width off a terminal. Cells that carry names are
    ``escape``d, as the summary lines use markup."""
    from rich.console import Console

    return Console(file=out, no_color=not color, highlight=False, width=160 if not color else None)


def render_table(report: Mapping[str, Any], out: IO[str], top: int, color: bool = False) -> None:
    """A summary line block and the top-N quota-ids by total throttle."""
    from rich.markup import escape
    from rich.table import Table

    console = _console(out, color)
    s = report["summary"]
    console.print(
        f"{s['rows']:,} rows over {s['seconds']:,} s; {s['quota_ids']:,} quota-ids, "
        f"[bold]{s['throttled_quota_ids']:,} throttled[/bold]; "
        f"{s['share_of_traffic_throttled']:.1%} of produce+fetch bytes fell in throttled seconds "
        f"(open loop: the replay does not slow traffic down)."
    )
    t = Table(title=f"Top {top} quota-ids by total throttle", title_justify="left")
    for name, just in (
        ("key", "left"),
        ("quota-id", "left"),
        ("level", "right"),
        ("entity", "left"),
        ("limit", "right"),
        ("throttled s", "right"),
        ("max rate", "right"),
        ("total ms", "right"),
        ("max ms", "right"),
    ):
        t.add_column(name, justify=just)  # type: ignore[arg-type]
    for r in [r for r in report["quota_ids"] if r["seconds_throttled"] > 0][:top]:
        t.add_row(
            r["key"],
            escape(qid_label(r["quota_id"])),
            str(r["level"]),
            escape(r["entity_path"]),
            f"{r['limit']:,}",
            f"{r['seconds_throttled']:,}",
            f"{r['max_rate']:,.1f}",
            f"{r['total_throttle_ms']:,}",
            f"{r['max_throttle_ms']:,}",
        )
    if t.row_count:
        console.print(t)
    else:
        console.print("No quota-id would be throttled.")
    traffic = Table(title="Traffic per quota type", title_justify="left")
    for name in ("key", "rows", "unlimited rows", "usage", "in throttled seconds"):
        traffic.add_column(name, justify="left" if name == "key" else "right")
    for key, v in s["traffic"].items():
        traffic.add_row(
            key, f"{v['rows']:,}", f"{v['rows_unlimited']:,}", f"{v['usage']:,.0f}", f"{v['share_throttled']:.1%}"
        )
    console.print(traffic)


def flat_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The quota-id rows with the quota-id spread over ``qid_user``/``qid_client_id``/``qid_ip`` columns."""
    out = []
    for r in report["quota_ids"]:
        q = r["quota_id"]
        out.append(
            {
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
    timeline: Mapping[tuple, Sequence[tuple[int, int, int]]],
    out_dir: str | Path,
    top: int,
    size_s: int,
    first_sample: int | None,
) -> list[Path]:
    """``quota_ids.parquet``, ``quota_ids.csv``, ``summary.json`` and ``impact.png`` in ``out_dir``."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    d = Path(out_dir)
    d.mkdir(exist_ok=True)  # its parent must exist (checked by the command): a typo is not a new tree
    schema = pa.schema(
        [
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
    table = pa.Table.from_pylist(flat_rows(report), schema=schema)
    paths = [d / "quota_ids.parquet", d / "quota_ids.csv", d / "summary.json", d / "impact.png"]
    pq.write_table(table, paths[0])
    pcsv.write_csv(table, paths[1])
    with open(paths[2], "w") as f:
        dump_json(report["summary"], f)
    plot(report, timeline, paths[3], top, size_s, first_sample)
    return paths


def timeline_label(sid: tuple) -> tuple[str, str]:
    key, _level, qu, qc, qip = sid
    if qip is not None:
        return key, f"ip={qip}"
    return key, f"user={sanitize(qu or '')},client-id={qc or ''}"


def plot(
    report: Mapping[str, Any],
    timeline: Mapping[tuple, Sequence[tuple[int, int, int]]],
    path: Path,
    top: int,
    size_s: int,
    first_sample: int | None,
) -> None:
    """Throttle over time for the top-N quota-ids (step lines) above a bar chart of throttled seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["quota_ids"] if r["seconds_throttled"] > 0][:top]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 8.5), gridspec_kw={"height_ratios": [3, 2]})
    base = first_sample or 0
    ranked = sorted(timeline.items(), key=lambda kv: -sum((e - s) * ms for s, e, ms in kv[1]))[:top]
    for sid, intervals in ranked:
        xs: list[float] = []
        ys: list[float] = []
        for s, e, ms in intervals:
            x0, x1 = (s - base) * size_s, (e - base) * size_s
            if xs and xs[-1] < x0:
                xs += [xs[-1], x0]
                ys += [0, 0]
            xs += [x0, x1]
            ys += [ms, ms]
        key, label = timeline_label(sid)
        ax1.plot(xs, ys, drawstyle="default", linewidth=1.2, label=f"{key} {label}")
    ax1.set_title(f"Throttle over time, top {len(ranked)} quota-ids by total throttle")
    ax1.set_xlabel("seconds since the first sample")
    ax1.set_ylabel("throttle (ms per second)")
    if ranked:
        ax1.legend(fontsize=7, loc="upper right")
    else:
        ax1.text(0.5, 0.5, "nothing throttled", ha="center", va="center", transform=ax1.transAxes)
    labels = [
        f"{r['key'].replace('_rate', '').replace('request_percentage', 'req%')}\n{qid_label(r['quota_id'])}"
        for r in rows
    ]
    ax2.barh(range(len(rows)), [r["seconds_throttled"] for r in rows], color="#c0504d")
    ax2.set_yticks(range(len(rows)), labels, fontsize=6)
    ax2.invert_yaxis()
    ax2.set_xlabel(f"throttled seconds (of {report['summary']['seconds']:,})")
    ax2.set_title("Throttled seconds per quota-id")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def render_compare(cmp: Mapping[str, Any], out: IO[str], top: int, color: bool = False) -> None:
    """Quota-ids that start/stop being throttled and (user, client-id) pairs whose limit changes."""
    from rich.markup import escape
    from rich.table import Table

    console = _console(out, color)
    s = cmp["summary"]
    console.print(
        f"Compared with the base quota set: throttled quota-ids {s['throttled_quota_ids'][0]:,} → "
        f"{s['throttled_quota_ids'][1]:,}; {s['started']:,} start, {s['stopped']:,} stop, {s['changed']:,} change; "
        f"{s['limit_changes']:,} effective limits change on this traffic."
    )
    for title, rows in (
        ("Start being throttled", cmp["started_throttling"]),
        ("Stop being throttled", cmp["stopped_throttling"]),
    ):
        if not rows:
            continue
        t = Table(title=title, title_justify="left")
        for c in ("key", "quota-id", "entity", "limit", "throttled s", "total ms"):
            t.add_column(c)
        for r in rows[:top]:
            t.add_row(
                r["key"],
                escape(qid_label(r["quota_id"])),
                escape(r["entity_path"]),
                f"{r['limit']:,}",
                f"{r['seconds_throttled']:,}",
                f"{r['total_throttle_ms']:,}",
            )
        console.print(t)
    if cmp["limit_changes"]:
        t = Table(title=f"Effective limit changes (first {top})", title_justify="left")
        for c in ("who", "key", "before", "after"):
            t.add_column(c)

        def side(x: Mapping[str, Any]) -> str:
            return "unlimited" if x["limit"] is None else f"{x['limit']:,} ({x['entity_path']})"

        for r in cmp["limit_changes"][:top]:
            who = f"ip={r['ip']}" if "ip" in r else f"user={r['user']},client-id={r['client-id']}"
            t.add_row(escape(who), r["key"], escape(side(r["before"])), escape(side(r["after"])))
        console.print(t)


def render_topics(t: Mapping[str, Any], out: IO[str], top: int, color: bool = False) -> None:
    """Bytes the topic-threshold model would drop per topic, next to what client quotas would throttle."""
    from rich.markup import escape
    from rich.table import Table

    console = _console(out, color)
    console.print(
        f"Topic thresholds (total {t['total_threshold']:,.0f} B/s): {t['bytes_dropped']:,} of {t['bytes_in']:,} "
        f"produce bytes dropped ({t['share_dropped']:.1%}); client quotas would throttle "
        f"{t['client_quota_throttled_bytes']:,} bytes."
    )
    table = Table(title=f"Top {top} topics by bytes dropped", title_justify="left")
    for c in ("topic", "threshold B/s", "explicit", "bytes in", "dropped", "seconds dropping", "client-quota bytes"):
        table.add_column(c, justify="left" if c == "topic" else "right")
    for r in t["topics"][:top]:
        table.add_row(
            escape(r["topic"]),
            f"{r['threshold']:,.0f}",
            "yes" if r["explicit"] else "share",
            f"{r['bytes_in']:,}",
            f"{r['bytes_dropped']:,}",
            f"{r['seconds_dropping']:,}",
            f"{r['client_quota_throttled_bytes']:,}",
        )
    console.print(table)
