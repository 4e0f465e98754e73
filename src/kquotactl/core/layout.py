"""Plain-text tables that fit the reader's screen (pure: lines in, lines out).

One layout rule for the commands whose rows carry names (top, impact, explain's notes, config get-contexts), as
plan and describe already lay theirs out: an aligned table when it fits the terminal whole, else one block per
row (its identifying cells on a line, the other cells as ``header: value`` below it), so that a name is never cut
and no column is squeezed to nothing. Off a terminal (``width`` None: a pipe, a file, a CI log) the table is
written at its natural width: never padded, never cut. Widths count terminal cells (a wide character takes
two, a combining mark none).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

GAP = "  "  # between columns
INDENT = "    "  # a block's detail lines


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes: 2 for a wide (East Asian) character, 0 for a combining mark."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def column_widths(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's widest cell, header included."""
    return [max([cell_width(h)] + [cell_width(r[i]) for r in rows]) for i, h in enumerate(header)]


def table_width(header: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    """The width of :func:`table_lines`' longest possible line."""
    widths = column_widths(header, rows)
    return sum(widths) + len(GAP) * (len(widths) - 1)


def fits(header: Sequence[str], rows: Sequence[Sequence[str]], width: int | None) -> bool:
    """Does the whole table fit ``width`` columns (None: any width)?"""
    return width is None or table_width(header, rows) <= width


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - cell_width(text))
    return fill + text if right else text + fill


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    """An aligned table, header first: columns two spaces apart, each as wide as its widest cell, the columns
    whose index is in ``right`` right-aligned; no line ends in spaces."""
    widths = column_widths(header, rows)
    return [
        GAP.join(_pad(c, w, i in right) for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        for row in [header, *rows]
    ]


def pack(items: Sequence[str], width: int | None, indent: str = INDENT, sep: str = "; ") -> list[str]:
    """``items`` joined by ``sep`` on lines of at most ``width`` cells, each line starting with ``indent``; an item
    is never split (one longer than the line gets a line of its own)."""
    lines: list[str] = []
    line = ""
    for item in items:
        candidate = f"{line}{sep}{item}" if line else item
        if line and width is not None and cell_width(indent + candidate) > width:
            lines.append(indent + line)
            line = item
        else:
            line = candidate
    if line:
        lines.append(indent + line)
    return lines


def wrap(text: str, width: int | None, indent: str = "", first: str = "") -> list[str]:
    """Prose on lines of at most ``width`` cells (None: one line), broken at spaces only: a name with no space
    in it is never cut. ``first`` starts the first line, ``indent`` the others (a hanging indent)."""
    words = text.split(" ")
    if width is None:
        return [first + text]
    lines: list[str] = []
    line = first
    lead = first
    for word in words:
        candidate = f"{line} {word}" if line != lead else line + word
        if line != lead and cell_width(candidate) > width:
            lines.append(line)
            line = lead = indent
            line += word
        else:
            line = candidate
    lines.append(line)
    return lines


def blocks(
    header: Sequence[str], rows: Sequence[Sequence[str]], ident: int, width: int | None, *, group: bool = False
) -> list[str]:
    """One block per row: its first ``ident`` cells on one line (each on a line of its own when together they do
    not fit), then its other non-empty cells as ``header: value``, packed on indented lines (a value longer than
    the line wraps at its spaces). ``group``: consecutive rows with the same first cell share it as a heading,
    each row's other identifying cells indented below it."""
    out: list[str] = []
    previous: str | None = None
    for row in rows:
        if group:
            if row[0] != previous:
                out.append(row[0])
            previous = row[0]
            head = ["  " + GAP.join(c for c in row[1:ident] if c)]
        else:
            head = [c for c in row[:ident] if c]
        if width is None or cell_width(GAP.join(head)) <= width:
            out.append(GAP.join(head))
        else:
            out.extend(head)
        details = [f"{h}: {c}" for h, c in zip(header[ident:], row[ident:], strict=True) if c]
        for line in pack(details, width):
            too_long = width is not None and cell_width(line) > width
            out.extend(wrap(line.lstrip(), width, INDENT + "  ", INDENT) if too_long else [line])
    return [line.rstrip() for line in out]  # as table_lines: a line never ends in spaces


def table_or_blocks(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int | None,
    *,
    ident: int = 1,
    right: Sequence[int] = (),
) -> list[str]:
    """:func:`table_lines` when the table fits ``width`` (always, off a terminal), else :func:`blocks`."""
    if fits(header, rows, width):
        return table_lines(header, rows, right)
    return blocks(header, rows, ident, width)
