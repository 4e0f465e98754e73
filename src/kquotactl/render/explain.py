"""Render ``explain`` answers: rich tables for people, JSON (lines) for programs. Writes only to the given stream."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any

from kquotactl.core.explain import (
    Connection,
    ThrottleModel,
    chain_for,
    compact,
    connection_notes,
    level_pattern,
    level_words,
    limit_words,
    resolutions,
    sharing_words,
    shown_path,
    step_words,
)
from kquotactl.core.keys import KEYS, PRODUCE_KEY, Number, QuotaKey, limit_text
from kquotactl.core.precedence import QuotaIndex
from kquotactl.core.rate import ReplayStep
from kquotactl.core.throttlemath import json_double
from kquotactl.core.wording import counted, shown_name

if TYPE_CHECKING:  # rich loads with the first table
    from rich.console import Console
    from rich.table import Table


#: the console width off a terminal: wide enough that nothing wraps (a pipe or a file has no width to fit); no
#: line is padded to it (tables are as wide as their cells, text lines as long as their words)
PIPE_WIDTH = 100_000


def _console(out: IO[str], color: bool) -> Console:
    """A terminal's own width (colour or not), else :data:`PIPE_WIDTH`."""
    from rich.console import Console

    width = None if out.isatty() else PIPE_WIDTH
    return Console(file=out, no_color=not color, highlight=False, soft_wrap=False, width=width)


def connection_title(conn: Connection) -> str:
    parts = []
    if conn.user is not None:
        parts.append(f"user {shown_name(conn.user)}")
        parts.append(f"client-id {shown_name(conn.client_id or '')}")
    if conn.ip is not None:
        parts.append(f"ip {shown_name(conn.ip)}")
    return ", ".join(parts)


def _natural_widths(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    from rich.cells import cell_len

    return [max([cell_len(h)] + [cell_len(r[i]) for r in rows]) for i, h in enumerate(header)]


def _fits(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[int] | None:
    """The columns' natural widths when the table fits ``width`` unwrapped and untruncated, else ``None``."""
    widths = _natural_widths(header, rows)
    return widths if sum(widths) + 2 * (len(widths) - 1) <= width else None


def _table(
    header: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int], right: Sequence[str] = ()
) -> Table:
    from rich.table import Table

    table = Table(show_edge=False, header_style="bold", pad_edge=False, box=None)
    for h, w in zip(header, widths, strict=True):
        table.add_column(h, width=w, no_wrap=True, justify="right" if h in right else "left")
    return table


def _plain_table(console: Any, header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> None:
    """A table without colour: aligned plain lines (:func:`kquotactl.core.layout.table_lines`), none padded."""
    from kquotactl.core.layout import table_lines

    for line in table_lines(header, rows, right):
        console.print(line, markup=False, emoji=False, highlight=False, soft_wrap=True)


def _line(console: Any, text: str, indent: int = 0) -> None:
    """Plain text (no markup), wrapped to a terminal's width at spaces (never inside a name) with every line at
    ``indent``; off a terminal one line, never padded."""
    from kquotactl.core.layout import wrap

    pad = " " * indent
    width = None if console.width >= PIPE_WIDTH else console.width
    for line in wrap(text, width, pad, pad):
        console.print(line, markup=False, emoji=False, highlight=False, soft_wrap=True)


def throttle_words(ms: int, throttle: ThrottleModel, key: str = PRODUCE_KEY) -> str:
    """``5.5 s delay per 11 s window``: the steady-state throttle and the window ``key`` is measured over."""
    num, size = throttle.window(key)
    window = num * size
    if ms <= 0:
        return f"no delay ({window:g} s window)"
    delay = f"{ms} ms" if ms < 1000 else f"{ms / 1000:g} s"
    return f"{delay} delay per {window:g} s window"


def _aside(limit: str) -> str:
    """A limit inside brackets: ``6.84 KiB/s, 7000 B/s`` rather than brackets within brackets."""
    if limit.endswith(")") and " (" in limit:
        shown, exact = limit[:-1].split(" (", 1)
        return f"{shown}, {exact} B/s"
    return limit


def shadow_sentences(index: QuotaIndex, conn: Connection) -> list[str]:
    """One plain sentence per shadowed quota: whose limit it is, what hides it, and what to do."""
    out = []
    for r in resolutions(index, conn):
        if r.limit is None:
            continue
        winner = level_words(r)
        for step in chain_for(index, conn, r):
            if step.status.value != "shadowed" or step.value is None:
                continue
            out.append(
                f"{shown_path(step.entity_path or '')}'s {r.key} {compact(r.key, step.value)} is shadowed by {winner} "
                f"({_aside(compact(r.key, r.limit))}); raise or remove it"
            )
    return out


def explain_table(
    index: QuotaIndex, conn: Connection, out: IO[str], color: bool, throttle: ThrottleModel | None = None
) -> None:
    """One connection: the answer per key, then the whole chain with each level's part in it.

    Laid out for the console's width: tables when they fit whole, else one block per key and per level, so entity
    paths are never cut (a terminal of 80 columns is enough)."""
    from rich.markup import escape

    console = _console(out, color)
    width = console.width
    res_list = resolutions(index, conn)
    console.print(f"[bold]Quotas for {escape(connection_title(conn))}[/bold]")
    show_throttle = throttle is not None and any(r.key in throttle.observed for r in res_list)
    header = ["KEY", "LIMIT", "LEVEL", "FROM", "SHARED BY"] + (["THROTTLE"] if show_throttle else [])
    rows = []
    for r in res_list:
        row = [r.key, limit_words(r.key, r.limit), "-" if r.level is None else str(r.level), level_words(r)]
        row.append(sharing_words(r, conn))
        if show_throttle:
            assert throttle is not None
            row.append(_throttle_cell(r.key, r.limit, throttle))
        rows.append(row)
    widths = _fits(header, rows, width)
    if widths is not None and not color:
        _plain_table(console, header, rows)
    elif widths is not None:
        table = _table(header, rows, widths)
        for row in rows:
            table.add_row(*(escape(c) for c in row))
        console.print(table)
    else:
        unlimited = [r.key for r in res_list if r.limit is None]
        for r, row in zip(res_list, rows, strict=True):
            if r.limit is None:
                continue
            console.print(f"[bold]{escape(r.key)}[/bold]: {escape(row[1])}, level {row[2]}")
            _line(console, f"from {row[3]}", 2)
            _line(console, row[4], 2)
            if show_throttle and row[5]:
                _line(console, f"throttle: {row[5]}", 2)
        if unlimited:
            _line(console, f"unlimited (no level sets them): {', '.join(unlimited)}")
    ignored = False
    for kind_keys in (
        [r for r in res_list if r.quota_id_tags is not None],
        [r for r in res_list if r.quota_id_tags is None],
    ):
        if not kind_keys:
            continue
        chains = {r.key: chain_for(index, conn, r) for r in kind_keys}
        steps = chains[kind_keys[0].key]
        chain_rows = []
        for i, step in enumerate(steps):
            label = (shown_path(step.entity_path) if step.entity_path else None) or (
                level_pattern(step.level) + " (n/a: empty name)" if step.level < 9 else level_pattern(step.level)
            )
            cells = [step_words(chains[r.key][i], r.key) for r in kind_keys]
            ignored = ignored or any(c.startswith("ignored") for c in cells)
            chain_rows.append((str(step.level), label, cells))
        console.print()
        console.print("[bold]Precedence chain[/bold] (first level that sets a key wins; later ones are shadowed)")
        header = ["#", "PRECEDENCE LEVEL", *(r.key for r in kind_keys)]
        flat = [[n, label, *cells] for n, label, cells in chain_rows]
        widths = _fits(header, flat, width)
        if widths is not None and not color:
            _plain_table(console, header, flat, right=(0,))
            continue
        if widths is not None:
            chain = _table(header, flat, widths, right=("#",))
            for n, label, cells in chain_rows:
                shown = [_colored(c) if color else escape(c) for c in cells]
                chain.add_row(n, escape(label), *shown)
            console.print(chain)
            continue
        from rich.table import Table

        grid = Table.grid(padding=(0, 1))  # narrow: one block per level, only the keys it sets; wraps hang
        grid.add_column(justify="right")
        grid.add_column()
        for n, label, cells in chain_rows:
            set_here = [(r.key, c) for r, c in zip(kind_keys, cells, strict=True) if c != "not set"]
            grid.add_row(n, escape(label) + ("" if set_here else " [dim](nothing set)[/dim]"))
            for key, c in set_here:
                grid.add_row("", f"    {escape(key)}: {_colored(c) if color else escape(c)}")
        console.print(grid)
    for sentence in shadow_sentences(index, conn):
        _line(console, f"shadowed: {sentence}")
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
    return throttle_words(throttle.throttle_ms(key, limit), throttle, key)


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
    """Many connections: one table when it fits the console whole, else one block per connection."""
    from rich.markup import escape

    console = _console(out, color)
    header = ["CONNECTION", "KEY", "LIMIT", "LEVEL", "FROM", "SHARED BY"]
    show_throttle = throttle is not None and bool(throttle.observed)
    if show_throttle:
        header.append("THROTTLE")
    blocks: list[tuple[str, list[list[str]]]] = []
    for conn in conns:
        rows = []
        for r in resolutions(index, conn):
            row = [r.key, limit_words(r.key, r.limit), "-" if r.level is None else str(r.level)]
            row += [level_words(r), sharing_words(r, conn)]
            if show_throttle:
                assert throttle is not None
                row.append(_throttle_cell(r.key, r.limit, throttle))
            rows.append(row)
        blocks.append((connection_title(conn), rows))
    flat = [[title if i == 0 else "", *row] for title, rows in blocks for i, row in enumerate(rows)]
    widths = _fits(header, flat, console.width)
    if widths is not None and not color:
        _plain_table(console, header, flat)
        return
    if widths is not None:
        table = _table(header, flat, widths)
        for row in flat:
            table.add_row(*(escape(c) for c in row))
        console.print(table)
        return
    for title, rows in blocks:
        console.print(f"[bold]{escape(title)}[/bold]")
        for row in rows:
            if row[1] == "unlimited":
                continue
            _line(console, f"{row[0]}: {row[1]}, level {row[2]}", 2)
            _line(console, f"from {row[3]}", 4)
            _line(console, row[4], 4)
            if show_throttle and row[5]:
                _line(console, f"throttle: {row[5]}", 4)
        unlimited = [row[0] for row in rows if row[1] == "unlimited"]
        if unlimited:
            _line(console, f"unlimited: {', '.join(unlimited)}", 2)


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

    bucket = KEYS[key].token_bucket
    console = _console(out, color)
    how = "a token bucket (KIP-599)" if bucket else "Kafka's sampled Rate"
    quota = limit_text(KEYS[key], limit)
    console.print(f"[bold]Replay of {counted(len(steps), 'recording')} of {key} through {how}, quota {quota}[/bold]")
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


def replay_json(step: ReplayStep, key: str = "") -> dict[str, Any]:
    """One recording: ``rate`` and ``window_ms`` for the sampled Rate, ``tokens`` (and, strict mode, ``rejected``)
    for the token bucket. A rate a zero-length window or a zero limit makes infinite or NaN is a string."""
    if key and KEYS[key].token_bucket:
        return {
            "time_ms": step.time_ms,
            "value": step.value,
            "tokens": json_double(step.rate),
            "throttle_ms": step.throttle_ms,
            "rejected": step.rejected,
        }
    return {
        "time_ms": step.time_ms,
        "value": step.value,
        "rate": json_double(step.rate),
        "window_ms": step.window_ms,
        "throttle_ms": step.throttle_ms,
    }


def cluster_wide_lines(limits: Sequence[tuple[QuotaKey, Number]], brokers: int, out: IO[str]) -> None:
    """Under explain's table: each per-broker limit times the broker count (nothing when no key is limited)."""
    from kquotactl.core.budget import cluster_view_words

    if not limits:
        return
    out.write(f"Cluster-wide ({counted(brokers, 'broker')}; traffic assumed spread evenly):\n")
    out.writelines(f"  {cluster_view_words(qk, limit, brokers)}\n" for qk, limit in limits)
    out.flush()
