"""Reading ``explain``'s input files, lazily and line by line: connections (CSV or JSON lines) and replay events.

Errors name the file and line and say what is expected; nothing is read ahead, so a huge file streams. The
streams may be binary (the command line opens the files so): a line that is not UTF-8 is refused with its byte.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

from kquotactl.core.errors import QuotaError, UsageError
from kquotactl.core.explain import Connection
from kquotactl.core.textinput import NUMBER, csv_problem, decode_line, json_problem, shown, utf8_message
from kquotactl.core.wording import counted, shown_name

MAX_TIME_MS = 2**53  # a replay's times: whole milliseconds from 0, exact in a double

USER_COLUMNS = ("user", "user-principal", "principal")
CLIENT_COLUMNS = ("client-id", "client_id", "clientid", "client")
IP_COLUMNS = ("ip", "address", "host")


class InputFileError(QuotaError):
    """A line of an input file cannot be used (names the file and line)."""


def _first_line(lines: Iterator[str]) -> tuple[str | None, Iterator[str]]:
    for line in lines:
        if line.strip():
            return line, lines
    return None, lines


def _pick(row: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for n in names:
        if n in row:
            v = row[n]
            if v is None:
                return None
            if not isinstance(v, str):
                raise ValueError(f"{n} must be text, not {json.dumps(v)}")
            return v
    return None


def _connection(row: dict[str, Any]) -> Connection:
    return Connection.of(user=_pick(row, USER_COLUMNS), client_id=_pick(row, CLIENT_COLUMNS), ip=_pick(row, IP_COLUMNS))


def _text(stream: Iterable[str | bytes], name: str) -> Iterator[str]:
    """A stream's lines as text; a binary line that is not UTF-8 is refused with its byte and line."""
    for n, raw in enumerate(stream, start=1):
        if isinstance(raw, str):
            yield raw
            continue
        text = decode_line(raw)
        if isinstance(text, int):
            raise InputFileError(f"{name}: line {n}: {utf8_message(raw, text - 1, text)}")
        yield text


def read_connections(stream: IO[str] | IO[bytes], name: str = "connections") -> Iterator[Connection]:
    """Connections from CSV (a header naming ``user``, ``client-id``, ``ip`` columns) or JSON lines."""
    lines = _text(stream, name)
    first, lines = _first_line(lines)
    if first is None:
        return
    if first.lstrip().startswith("{"):
        yield from _json_lines(first, lines, name)
    else:
        yield from _csv_rows(first, lines, name)


def _json_lines(first: str, lines: Iterable[str], name: str) -> Iterator[Connection]:
    lineno = 0
    for raw in _chain_one(first, lines):
        lineno += 1
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError as e:
            raise InputFileError(f"{name}: line {lineno}: {json_problem(e)}") from None
        try:
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
            yield _connection({k.lower(): v for k, v in row.items()})
        except (ValueError, QuotaError) as e:
            raise InputFileError(
                f'{name}: line {lineno}: {e} (expected e.g. {{"user": "alice", "client-id": "app1"}})'
            ) from None


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    for n in names:
        if n in header:
            return header.index(n)
    return None


def _records(reader: Any, name: str) -> Iterator[list[str]]:
    """CSV records; a quoting error names the line its record starts on."""
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputFileError(f"{name}: line {start}: {csv_problem(e)}") from None
        yield row


def _csv_rows(first: str, lines: Iterable[str], name: str) -> Iterator[Connection]:
    reader = csv.reader(_chain_one(first, lines), strict=True)
    records = _records(reader, name)
    header = [h.strip().lower() for h in next(records)]
    ui, ci, ii = (_column(header, names) for names in (USER_COLUMNS, CLIENT_COLUMNS, IP_COLUMNS))
    if ui is None and ci is None and ii is None:
        raise InputFileError(
            f"{name}: line 1: the CSV header must name at least one of the columns user, client-id, ip "
            f"(got {', '.join(map(shown_name, header)) or 'nothing'})"  # a cell may hold a quoted line break
        )
    width = len(header)
    of = Connection.of
    for row in records:
        n = len(row)
        if n > width:
            raise InputFileError(f"{name}: line {reader.line_num}: {counted(n, 'field')} but the header has {width}")
        # An empty cell is a missing value, except that a client-id cell may be empty on purpose.
        user = row[ui] or None if ui is not None and ui < n else None
        client = row[ci] if ci is not None and ci < n else None
        ip = row[ii] or None if ii is not None and ii < n else None
        if user is None and ip is None and not client:
            if not any(c.strip() for c in row):
                continue
            client = client if client else None
        elif client == "" and user is None:
            client = None
        try:
            yield of(user=user, client_id=client, ip=ip)
        except QuotaError as e:
            raise InputFileError(f"{name}: line {reader.line_num}: {e}") from None


def _chain_one(first: str, rest: Iterable[str]) -> Iterator[str]:
    yield first
    yield from rest


def read_events(stream: IO[str] | IO[bytes], name: str = "events") -> list[tuple[int, float]]:
    """Replay events: ``TIME_MS VALUE`` (blank or comma separated; a header and ``#`` comments are
    skipped) or JSON lines ``{"time_ms": 0, "value": 400}``."""
    out: list[tuple[int, float]] = []
    example = "(expected 'TIME_MS VALUE', e.g. '10500 2300')"
    for lineno, raw in enumerate(_text(stream, name), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            if line.startswith("{"):
                try:
                    obj = json.loads(line)
                except ValueError as e:
                    raise ValueError(json_problem(e)) from None
                missing = [k for k in ("time_ms", "value") if not isinstance(obj, dict) or k not in obj]
                if missing:
                    raise ValueError(f"no {' and no '.join(missing)}")
                t, v = obj["time_ms"], obj["value"]
            else:
                parts = line.replace(",", " ").split()
                if len(parts) != 2:
                    raise ValueError(f"{counted(len(parts), 'field')}")
                if not out and _number(parts[0]) is None and _number(parts[1]) is None:
                    continue  # a header line
                t, v = parts
            t_ms, value = _time_ms(t), _value(v)
        except ValueError as e:
            raise InputFileError(f"{name}: line {lineno}: {e} {example}") from None
        if out and t_ms < out[-1][0]:
            raise InputFileError(
                f"{name}: line {lineno}: time {t_ms} ms is before the previous event ({out[-1][0]} ms)"
            )
        out.append((t_ms, value))
    if not out:
        raise UsageError(f"{name}: no events (expected lines 'TIME_MS VALUE', e.g. '0 400')")
    return out


def _number(v: Any) -> float | None:
    """A number given as a JSON number or as text (:data:`~kquotactl.core.textinput.NUMBER`, a minus allowed);
    None for anything else, NaN and infinity included."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        try:
            x = float(v)
        except OverflowError:
            return math.inf
        return None if math.isnan(x) else x
    if isinstance(v, str) and re.fullmatch(f"-?{NUMBER}", v):
        return float(v)
    return None


def _time_ms(t: Any) -> int:
    x = _number(t)
    if x is None:
        raise ValueError(f"time {shown(t)} is not a number of milliseconds")
    if not 0 <= x <= MAX_TIME_MS:
        raise ValueError(f"time {shown(t)} ms is out of range (0 to {MAX_TIME_MS:,} ms)")
    if x != int(x):
        raise ValueError(f"time {shown(t)} is not a whole number of milliseconds")
    return int(x)


def _value(v: Any) -> float:
    x = _number(v)
    if x is None:
        raise ValueError(f"value {shown(v)} is not a number")
    if x < 0:
        raise ValueError(f"value {shown(v)} is negative; a recording is 0 or more")
    if math.isinf(x):
        raise ValueError(f"value {shown(v)} is too large")
    return x
