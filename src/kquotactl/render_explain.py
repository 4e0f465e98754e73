"""Render ``explain`` answers: rich tables for people, JSON (lines) for programs. Writes only to the given stream."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import IO, Any

from kquotactl.explanation import (
    Connection,
    ThrottleModel,
    chain_for,
    connection_notes,
    level_pattern,
    level_words,
    limit_words,
    resolutions,
    sharing_words,
    step_words,
)
from kquotactl.rate import ReplayStep
from kquotactl.render import counted
from kquotactl.resolve import QuotaIndex


def _console(out: IO[str], color: bool):
    from rich.console import Console

    return Console(file=out, no_color=not color, highlight=False, soft_wrap=False, width=None if color else 200)


def connection_title(conn: Connection) -> str:
    parts = []
    if conn.user is not None:
        parts.append(f"user {conn.user}")
        parts.append(f"client-id {conn.client_id!r}" if conn.client_id == "" else f"client-id {conn.client_id}")
    if conn.ip is not None:
        parts.append(f"ip {conn.ip}")
    return ", ".join(parts)


def explain_table(
    index: QuotaIndex, conn: Connection, out: IO[str], color: bool, throttle: ThrottleModel | None = None
) -> None:
    """One connection: the answer per key, then the whole chain with each level's part in it."""
    from rich.table import Table

    console = _console(out, color)
    res_list = resolutions(index, conn)
    from rich.markup import escape

    console.print(f"[bold]Quotas for {escape(connection_title(conn))}[/bold]")
    show_throttle = throttle is not None and any(r.key in throttle.observed for r in res_list)
    table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None)
    for col in ("KEY", "LIMIT", "LEVEL", "FROM", "SHARED BY"):
        table.add_column(col)
    if show_throttle:
        table.add_column("THROTTLE", justify="right")
    for r in res_list:
        row = [r.key, limit_words(r.key, r.limit), "-" if r.level is None else str(r.level), level_words(r)]
        row.append(sharing_words(r, conn))
        if show_throttle:
            assert throttle is not None
            row.append(_throttle_cell(r.key, r.limit, throttle))
        table.add_row(*(escape(c) for c in row))
    console.print(table)
    ignored = False
    for kind_keys in (
        [r for r in res_list if r.quota_id is not None],
        [r for r in res_list if r.quota_id is None],
    ):
        if not kind_keys:
            continue
        chains = {r.key: chain_for(index, conn, r) for r in kind_keys}
        chain = Table(title=None, show_edge=False, header_style="bold", pad_edge=False, box=None)
        chain.add_column("#", justify="right")
        chain.add_column("PRECEDENCE LEVEL")
        for r in kind_keys:
            chain.add_column(r.key)
        steps = chains[kind_keys[0].key]
        for i, step in enumerate(steps):
            label = step.entity_path or (
                level_pattern(step.level) + " (n/a: empty name)" if step.level < 9 else level_pattern(step.level)
            )
            cells = [step_words(chains[r.key][i], r.key) for r in kind_keys]
            ignored = ignored or any(c.startswith("ignored") for c in cells)
            cells = [_colored(c) if color else escape(c) for c in cells]
            chain.add_row(str(step.level), escape(label), *cells)
        console.print()
        console.print("[bold]Precedence chain[/bold] (first level that sets a key wins; later ones are shadowed)")
        console.print(chain)
    for note in connection_notes(index, conn):
        console.print(f"note: {note}", markup=False)
    if ignored:
        console.print(
            "ignored: set, but brokers never consult that level for this connection (an empty client-id can only "
            "get users/<user> or users/<default>; an empty user only clients/<client-id> or clients/<default>)",
            markup=False,
        )


def _throttle_cell(key: str, limit: float | None, throttle: ThrottleModel) -> str:
    if key not in throttle.observed:
        return ""
    ms = throttle.throttle_ms(key, limit)
    return f"{ms} ms"


def _colored(cell: str) -> str:
    from rich.markup import escape

    cell = escape(cell)
    if cell.startswith("applied"):
        return f"[green]{cell}[/green]"
    if cell.startswith(("shadowed", "ignored")):
        return f"[yellow]{cell}[/yellow]"
    return f"[dim]{cell}[/dim]"


def connections_table(
    index: QuotaIndex, conns: Iterable[Connection], out: IO[str], color: bool, throttle: ThrottleModel | None
) -> None:
    from rich.markup import escape
    from rich.table import Table

    console = _console(out, color)
    table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None)
    cols = ["CONNECTION", "KEY", "LIMIT", "LEVEL", "FROM", "SHARED BY"]
    show_throttle = throttle is not None and bool(throttle.observed)
    if show_throttle:
        cols.append("THROTTLE")
    for c in cols:
        table.add_column(c)
    for conn in conns:
        title = connection_title(conn)
        for r in resolutions(index, conn):
            row = [title, r.key, limit_words(r.key, r.limit), "-" if r.level is None else str(r.level)]
            row += [level_words(r), sharing_words(r, conn)]
            if show_throttle:
                assert throttle is not None
                row.append(_throttle_cell(r.key, r.limit, throttle))
            table.add_row(*(escape(c) for c in row))
            title = ""
    console.print(table)


def json_lines(objs: Iterable[dict[str, Any] | str], out: IO[str], batch: int = 512) -> int:
    """One compact JSON object per line (dicts, or lines already encoded), in order, in batches; returns the count."""
    buf: list[str] = []
    n = 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for obj in objs:
        buf.append(obj if isinstance(obj, str) else dumps(obj))
        n += 1
        if len(buf) >= batch:
            out.write("\n".join(buf) + "\n")
            buf.clear()
    if buf:
        out.write("\n".join(buf) + "\n")
    out.flush()
    return n


def replay_table(steps: Sequence[ReplayStep], key: str, limit: float, out: IO[str], color: bool) -> None:
    from rich.table import Table

    bucket = key == "controller_mutation_rate"
    console = _console(out, color)
    how = "a token bucket (KIP-599)" if bucket else "Kafka's sampled Rate"
    console.print(f"[bold]Replay of {counted(len(steps), 'recording')} of {key} through {how}, quota {limit:g}[/bold]")
    table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None)
    cols = (
        ("TIME MS", "VALUE", "TOKENS LEFT", "THROTTLE MS")
        if bucket
        else ("TIME MS", "VALUE", "RATE", "WINDOW MS", "THROTTLE MS")
    )
    for c in cols:
        table.add_column(c, justify="right")
    for s in steps:
        if bucket:
            table.add_row(str(s.time_ms), f"{s.value:g}", f"{s.rate:.6g}", str(s.throttle_ms))
        else:
            table.add_row(str(s.time_ms), f"{s.value:g}", f"{s.rate:.6g}", str(s.window_ms), str(s.throttle_ms))
    console.print(table)


def _json_double(x: float) -> float | str:
    """A double for JSON: a number, or Java's spelling as a string when not finite (JSON has no Infinity/NaN)."""
    if math.isfinite(x):
        return x
    return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")


def replay_json(step: ReplayStep, key: str = "") -> dict[str, Any]:
    """One recording: ``rate`` and ``window_ms`` for the sampled Rate, ``tokens`` (and, strict mode, ``rejected``)
    for the token bucket. A rate a zero-length window or a zero limit makes infinite or NaN is a string."""
    if key == "controller_mutation_rate":
        return {
            "time_ms": step.time_ms,
            "value": step.value,
            "tokens": _json_double(step.rate),
            "throttle_ms": step.throttle_ms,
            "rejected": step.rejected,
        }
    return {
        "time_ms": step.time_ms,
        "value": step.value,
        "rate": _json_double(step.rate),
        "window_ms": step.window_ms,
        "throttle_ms": step.throttle_ms,
    }
