"""What a valid traffic table is, and the one line that says where a file is not one.

Both engines read local traffic files through here (the local engine takes the table :func:`read_file` returns; the
Spark engine runs :func:`check_input` before Spark reads the files), so a bad cell is refused with the same line
whichever engine runs, and a file that passes is one both engines read alike. CSV and JSON lines are parsed here
line by line, so a problem is placed on its physical line (the CSV header is line 1); Parquet rows are numbered
from 1. The first problem in the file is the one reported.

The rules (docs/impact.md, "Input validation"):

- ``ts``: epoch seconds (a number) or an ISO 8601 time with a zone (``2026-11-25T10:00:00Z``), one form per file,
  from 1970 to the year 9999; in JSON lines and Parquet a time is text and epoch seconds a number;
- the usage columns (:data:`~kquotactl.impact.replay.USAGE`): numbers, 0 or more, at most :data:`MAX_UNITS` units
  (2^53: exact in a double, and sums stay inside 64 bits); no empty cell. A column missing from the file counts
  as 0, and so does a key missing from one JSON line; JSON ``null`` is an empty cell;
- the names (``user``, ``client_id``, ``ip``, ``topic``): text; an empty cell is the empty name;
- CSV: UTF-8 without a byte-order mark, one row per line (a quoted field may not run past its line), as many
  fields as the header, no column named twice; JSON lines: one object per line, usage as JSON numbers.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kquotactl.core.errors import UsageError
from kquotactl.core.textinput import NUMBER, csv_problem, decode_line, json_problem, shown, utf8_message
from kquotactl.core.wording import counted, shown_name
from kquotactl.impact.replay import BROKER_COLUMN, ID_COLUMNS, USAGE

MAX_UNITS = 2**53
TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})"
TS_MAX = 253_402_300_799  # 9999-12-31T23:59:59Z in epoch seconds
TS_EXPECTED = "epoch seconds or an ISO 8601 time with a zone, e.g. 2026-11-25T10:00:00Z"
NAME_COLUMNS = (*ID_COLUMNS, "topic", BROKER_COLUMN)  # broker: which broker measured a row (recommend)
USAGE_BY_COLUMN = {u.column: u for u in USAGE.values()}
# what a usage column holds, and the unit of its largest value
EXPECTED = {
    "produce_bytes": ("a byte count", "bytes"),
    "fetch_bytes": ("a byte count", "bytes"),
    "requests": ("a count of requests", "requests"),
    "request_time_ms": ("milliseconds", "ms"),
    "connections": ("a count of connections", "connections"),
}
BATCH_ROWS = 1 << 20  # Parquet rows checked at a time


class TrafficError(UsageError):
    """A traffic file cannot be replayed: the message names the file, the line or row, the column and what was
    expected."""


def read_file(path: Path, fmt: str) -> Any:
    """One traffic file as a pyarrow table, checked: ``ts`` as float64 epoch seconds or timestamps, the usage
    columns as float64, the names as text."""
    import pyarrow as pa

    if fmt == "parquet":
        return pa.Table.from_batches(list(_parquet_batches(path)))
    if fmt == "csv":
        texts, lines, problem = _csv(path)
        columns = {c: pa.array(v, pa.string()) for c, v in texts.items()}
    else:
        columns, lines, problem = _json_lines(path)
    if problem is not None and not lines:
        raise TrafficError(f"{path}: {problem}")
    if problem is None:
        _require(path, set(columns), None)
    checked = _checked(path, columns, lambda i: f"line {lines[i]}", text_numbers=fmt == "csv")
    if problem is not None:
        raise TrafficError(f"{path}: {problem}")
    return pa.table(checked)


def check_input(files: list[Path], fmt: str) -> None:
    """Check local traffic files before the Spark engine reads them (Parquet a batch at a time)."""
    read_all(files, fmt, keep=False)


def read_all(files: list[Path], fmt: str, keep: bool = True) -> list[Any]:
    """Every file of an input checked (:func:`read_file`; the tables, with ``keep``), and the files checked against
    each other: one header for the CSV files of a directory (Spark reads them by position, with the first file's
    header), and one form of ``ts`` (epoch seconds or times) in all of them."""
    import pyarrow as pa

    tables: list[Any] = []
    first: tuple[Path, bool | None, list[str] | None] | None = None
    for f in files:
        ts_type = None
        if fmt == "parquet" and not keep:
            for batch in _parquet_batches(f):
                ts_type = batch.schema.field("ts").type
        else:
            table = read_file(f, fmt)
            ts_type = table.schema.field("ts").type if table.num_rows else None
            if keep:
                tables.append(table)
        times = None if ts_type is None else pa.types.is_timestamp(ts_type)
        header = _csv_header(f) if fmt == "csv" else None
        if first is None:
            first = (f, times, header)
            continue
        if header != first[2]:
            raise TrafficError(
                f"{f}: its header ({', '.join(map(shown_name, header or []))}) differs from {first[0]}'s "
                f"({', '.join(map(shown_name, first[2] or []))}); the CSV files of a directory need one header"
            )
        if times is not None and first[1] is None:
            first = (f, times, header)  # the first file with rows sets the form
        elif times is not None and times != first[1]:
            forms = ("times", "epoch seconds") if times else ("epoch seconds", "times")
            raise TrafficError(f"{f}: column ts holds {forms[0]} where {first[0]} holds {forms[1]}; use one form")
    return tables


def _csv_header(path: Path) -> list[str]:
    """The header of a CSV file that passed the check (its first line that is not blank)."""
    with open(path, encoding="utf-8", newline="") as fh:
        for line in fh:
            if line.strip("\r\n"):
                return next(csv.reader([line]))
    return []


def _require(path: Path, names: set[str], header: list[str] | None) -> None:
    if "ts" not in names:
        has = f"; it has {', '.join(map(shown_name, header))}" if header else ""  # (a cell may hold a line break)
        raise TrafficError(f"{path}: no ts column ({TS_EXPECTED}){has}")
    if not names & set(USAGE_BY_COLUMN):
        raise TrafficError(f"{path}: none of the usage columns {', '.join(USAGE_BY_COLUMN)}")


# -- the values: one definition, on Arrow arrays (a whole file's, or one batch's) ----------------------------------


def _checked(path: Path, columns: dict[str, Any], where: Callable[[int], str], text_numbers: bool) -> dict[str, Any]:
    """The columns converted, or the first bad cell refused (row order; at one row, column order)."""
    import pyarrow as pa

    found: list[tuple[int, int, str]] = []  # (row, column position, message)
    out: dict[str, Any] = {}
    for pos, (name, values) in enumerate(columns.items()):
        arr = values
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if name == "ts":
            got, bad = _ts(arr, text_numbers, where)
        elif name in USAGE_BY_COLUMN:
            got, bad = _usage(name, arr, text_numbers)
        else:
            got, bad = _name(name, arr), None
        if isinstance(got, str):  # the whole column is of the wrong kind
            raise TrafficError(f"{path}: column {name} {got}")
        out[name] = got
        if bad is not None:
            found.append((bad[0], pos, f"column {name}: {bad[1]}"))
    if found:
        row, _, what = min(found)
        raise TrafficError(f"{path}: {where(row)}, {what}")
    return out


def _first(masks: list[tuple[Any, str]]) -> tuple[int, str] | None:
    """The earliest row any mask flags, with that mask's words (the first mask wins a tie)."""
    import pyarrow.compute as pc

    best: tuple[int, str] | None = None
    for mask, words in masks:
        i = pc.index(pc.fill_null(mask, False), True).as_py()
        if i >= 0 and (best is None or i < best[0]):
            best = (i, words)
    return best


def _kind(t: Any) -> str:
    """An Arrow type in the user's words."""
    import pyarrow as pa

    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_boolean(t):
        return "true/false values"
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        return "dates or times"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "raw bytes"
    if pa.types.is_null(t):
        return "only empty cells"
    return "lists or records"


def _is_number_type(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _usage(name: str, arr: Any, text_numbers: bool) -> tuple[Any, tuple[int, str] | None]:
    """A usage column as float64; numbers, or in CSV, text that is a number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    what, _ = EXPECTED[name]
    limit = MAX_UNITS // USAGE_BY_COLUMN[name].scale
    expected = f"expected {what}, 0 or more"
    if text_numbers and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        number = pc.match_substring_regex(arr, f"^{NUMBER}$")
        negative = pc.match_substring_regex(arr, f"^-{NUMBER}$")
        empty = pc.equal(arr, "")
        x = pc.cast(pc.if_else(number, arr, "0"), pa.float64())
        masks = [
            (pc.or_(pc.is_null(arr), empty), "empty"),
            (pc.invert(pc.or_(pc.or_(number, negative), empty)), "not a number"),
            (negative, "negative"),
            (pc.greater(x, limit), "too large"),
        ]
    elif _is_number_type(arr.type):
        x = pc.cast(arr, pa.float64(), safe=False)
        masks = [(pc.is_null(arr), "empty"), (pc.is_nan(x), "not a number")]
        masks += [(pc.less(x, 0), "negative"), (pc.greater(x, limit), "too large")]
    else:
        return f"holds {_kind(arr.type)}; {expected}", None
    bad = _first(masks)
    if bad is None:
        return x, None
    i, problem = bad
    value = arr[i].as_py()
    if problem == "empty":
        return x, (i, f"the cell is empty; {expected}")
    if problem == "too large":
        return x, (i, too_large(name, value))
    return x, (i, f"{shown(value)} is {problem}; {expected}")


def too_large(name: str, value: Any) -> str:
    """The words for a usage value above :data:`MAX_UNITS` units."""
    _, unit = EXPECTED[name]
    return f"{shown(value)} is too large; expected at most {MAX_UNITS // USAGE_BY_COLUMN[name].scale:,} {unit}"


def _ts(arr: Any, text_numbers: bool, where: Callable[[int], str]) -> tuple[Any, tuple[int, str] | None]:
    """``ts`` as float64 epoch seconds or UTC timestamps; a string column holds times (and in CSV, where the
    engines read a number as a number, epoch seconds too, but not both)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        empty = pc.or_(pc.is_null(arr), pc.equal(arr, ""))
        number = pc.match_substring_regex(arr, f"^{NUMBER}$")
        negative = pc.match_substring_regex(arr, f"^-{NUMBER}$")
        time = pc.match_substring_regex(arr, f"^{TIME}$")
        if not text_numbers:
            masks = [(empty, "empty"), (pc.invert(pc.or_(time, empty)), "text")]
            bad = _first(masks)
            if bad is not None:
                return None, _ts_words(arr, *bad, where)
            return _times(arr, where)
        masks = [(empty, "empty"), (pc.invert(pc.or_(pc.or_(pc.or_(number, negative), time), empty)), "not ts")]
        masks.append((negative, "before 1970"))
        bad = _first(masks)
        first_number, first_time = (pc.index(pc.fill_null(m, False), True).as_py() for m in (number, time))
        if first_number >= 0 and first_time >= 0:
            later, earlier = max(first_number, first_time), min(first_number, first_time)
            if bad is None or later < bad[0]:
                bad = (later, f"mixed {earlier}")
        if bad is not None:
            return None, _ts_words(arr, *bad, where)
        if first_time >= 0:
            return _times(arr, where)
        return _epoch(pc.cast(arr, pa.float64()), arr)
    if _is_number_type(arr.type):
        x = pc.cast(arr, pa.float64(), safe=False)
        bad = _first([(pc.is_null(arr), "empty"), (pc.is_nan(x), "not a number")])
        if bad is not None:
            return None, _ts_words(arr, *bad, where)
        return _epoch(x, arr)
    if pa.types.is_timestamp(arr.type):
        bad = _first([(pc.is_null(arr), "empty"), (pc.less(pc.cast(arr, pa.int64()), 0), "before 1970")])
        if bad is not None:
            return None, _ts_words(arr, *bad, where)
        # one type for every file of a directory: microseconds (the replay's clock, truncated), UTC (a time
        # without a zone is read as UTC, as Spark's session time zone is)
        return pc.cast(arr, pa.timestamp("us", tz="UTC"), safe=False), None
    return f"holds {_kind(arr.type)}; expected {TS_EXPECTED}", None


def _epoch(x: Any, arr: Any) -> tuple[Any, tuple[int, str] | None]:
    import pyarrow.compute as pc

    bad = _first([(pc.less(x, 0), "before 1970"), (pc.greater(x, TS_MAX), "after 9999")])
    if bad is not None:
        return None, _ts_words(arr, *bad, lambda i: "")
    return x, None


def _times(arr: Any, where: Callable[[int], str]) -> tuple[Any, tuple[int, str] | None]:
    """Text times parsed (a date that does not exist, such as month 13, is found by bisection)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    target = pa.timestamp("us", tz="UTC")
    try:
        t = pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        row = first_failing_cast(arr, target)
        return None, _ts_words(arr, row, "no such time", where)
    bad = _first([(pc.less(pc.cast(t, pa.int64()), 0), "before 1970")])
    if bad is not None:
        return None, _ts_words(arr, *bad, where)
    return t, None


def _ts_words(arr: Any, i: int, problem: str, where: Callable[[int], str]) -> tuple[int, str]:
    value = shown(arr[i].as_py())
    if problem == "empty":
        return i, f"the cell is empty; expected {TS_EXPECTED}"
    if problem.startswith("mixed"):
        earlier = int(problem.split()[1])
        theirs = "epoch seconds" if _looks_like_time(arr[i].as_py()) else "a time"
        return i, f"{value} is not written as {where(earlier)} is ({theirs}); use one form in a file"
    words = {
        "text": f"{value} is text but not a time (epoch seconds are a number here)",
        "not ts": f"{value} is not a time",
        "not a number": f"{value} is not a number",
        "before 1970": f"{value} is before 1970",
        "after 9999": f"{value} is after the year 9999",
        "no such time": f"{value} is not a real date and time",
    }
    return i, f"{words[problem]}; expected {TS_EXPECTED}"


def _looks_like_time(v: Any) -> bool:
    return isinstance(v, str) and re.fullmatch(TIME, v) is not None


def first_failing_cast(column: Any, target: Any) -> int:
    """The 0-based index of the first value of ``column`` that does not cast to ``target`` (bisection)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def fails(lo: int, hi: int) -> bool:
        try:
            pc.cast(column.slice(lo, hi - lo), target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return True
        return False

    lo, hi = 0, len(column)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(lo, mid):
            hi = mid
        else:
            lo = mid
    return lo


def _name(name: str, arr: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or pa.types.is_null(arr.type):
        return pc.cast(arr, pa.string())
    if pa.types.is_integer(arr.type):  # both engines write an integer name as its digits
        return pc.cast(arr, pa.string())
    return f"holds {_kind(arr.type) if not _is_number_type(arr.type) else 'decimal numbers'}; expected text"


# -- the formats ----------------------------------------------------------------------------------------------------


def _parquet_batches(path: Path) -> Iterator[Any]:
    """The checked record batches of one Parquet file (the columns the replay reads)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
    except (pa.ArrowInvalid, OSError) as e:
        raise TrafficError(f"{path}: cannot be read as Parquet: {_arrow_words(e)}") from None
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TrafficError(f"{path}: column {twice[0]!r} appears twice")
    _require(path, set(names), None)
    wanted = [n for n in names if n == "ts" or n in USAGE_BY_COLUMN or n in NAME_COLUMNS]
    offset = 0
    batches = pf.iter_batches(batch_size=BATCH_ROWS, columns=wanted)
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowInvalid, OSError) as e:
            raise TrafficError(f"{path}: cannot be read as Parquet after row {offset}: {_arrow_words(e)}") from None
        if batch is None:
            return
        base = offset
        columns = dict(zip(batch.schema.names, batch.columns, strict=True))
        checked = _checked(path, columns, _rows_from(base), False)
        offset += batch.num_rows
        yield pa.RecordBatch.from_pydict(checked)


def _rows_from(base: int) -> Callable[[int], str]:
    """Parquet rows of a batch starting at row ``base + 1``."""
    return lambda i: f"row {base + i + 1}"


def _arrow_words(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else "unreadable"
    return text.rstrip(".")


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, bytes)`` of each line (split on ``\\n``; a trailing ``\\r`` stays: CSV reads it as the end
    of the line, JSON as whitespace)."""
    start, n = 0, 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        n += 1
        yield n, data[start:end]
        start = end + 1


# CSV here is one row per line, so a quote left open is said about its line
NOT_CLOSED = (
    "a quoted field is not closed on its line (one row per line: a name with a line break needs Parquet or JSON lines)"
)


def _csv(path: Path) -> tuple[dict[str, list[str]], list[int], str | None]:
    """The known columns of a CSV file as text, each data row's line, and the first structural problem (the rows
    before it are returned). One reader over the whole text; a record that takes more than one line is refused."""
    data = _read(path)
    if data.startswith(b"\xef\xbb\xbf"):
        return {}, [], "line 1: starts with a byte-order mark (EF BB BF); save it as UTF-8 without one"
    late: str | None = None  # a bad byte: the lines before it are read, then it is the problem
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        cut = data.rfind(b"\n", 0, e.start) + 1
        line = data.count(b"\n", 0, cut) + 1
        late = f"line {line}: {utf8_message(data, e.start, e.start - cut + 1)}"
        text = data[:cut].decode("utf-8")
    at = [0]  # the line the reader has read up to

    def feed() -> Iterator[str]:
        for line in text.split("\n"):
            at[0] += 1
            yield line

    reader = csv.reader(feed(), strict=True)
    header: list[str] | None = None
    header_line = 0
    rows: list[list[str]] = []
    lines: list[int] = []
    problem: str | None = None
    done = 0  # the last line of the last record
    try:
        for row in reader:
            n = at[0]
            if n - done > 1:
                problem = f"line {done + 1}: {NOT_CLOSED}"
                break
            done = n
            if not row:
                continue
            if header is None:
                header, header_line = row, n
                twice = sorted({c for c in row if row.count(c) > 1})
                if twice:
                    return {}, [], f"line {n}: column {twice[0]!r} appears twice"
                _require(path, set(row), row)
                continue
            if len(row) != len(header):
                problem = (
                    f"line {n}: {counted(len(row), 'field')}, but the header (line {header_line}) has {len(header)}"
                )
                break
            rows.append(row)
            lines.append(n)
    except csv.Error as e:
        words = NOT_CLOSED if str(e) == "unexpected end of data" else csv_problem(e)
        problem = f"line {done + 1}: {words}"
    if header is None and problem is None and late is None:
        problem = "empty; expected a header line naming the columns, then one row per line"
    keep = [(c, i) for i, c in enumerate(header or []) if c == "ts" or c in USAGE_BY_COLUMN or c in NAME_COLUMNS]
    return {c: [r[i] for r in rows] for c, i in keep}, lines, problem or late


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise TrafficError(f"{path}: cannot be read ({e.strerror or 'error'})") from None


class _Duplicate(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_lines(path: Path) -> tuple[dict[str, Any], list[int], str | None]:
    """The known keys of a JSON lines file as columns, each row's line, and the first structural problem."""
    import pyarrow as pa

    data = _read(path)
    usage = [c for c in USAGE_BY_COLUMN]
    values: dict[str, list[Any]] = {c: [] for c in ("ts", *NAME_COLUMNS, *usage)}
    seen: set[str] = set()
    lines: list[int] = []
    ts_kind: tuple[str, int] | None = None
    problem: str | None = None
    for n, raw in _lines(data):
        text = decode_line(raw)
        if isinstance(text, int):
            problem = f"line {n}: {utf8_message(raw, text - 1, text)}"
            break
        if not text.strip():
            continue
        try:
            obj = _parse_json(text)
        except _Duplicate as e:
            problem = f"line {n}: key {e.args[0]!r} appears twice"
            break
        except json.JSONDecodeError as e:
            problem = f"line {n}: {json_problem(e)}"
            break
        except ValueError as e:
            problem = f"line {n}: {e}"
            break
        if not isinstance(obj, dict):
            problem = f"line {n}: not a JSON object; expected one object per line, e.g. {_EXAMPLE}"
            break
        if "ts" not in obj:
            problem = f"line {n}: no ts ({TS_EXPECTED})"
            break
        problem = _json_row(n, obj, values, seen)
        if problem is not None:
            break
        t = obj["ts"]
        kind = "text" if isinstance(t, str) else "number" if t is not None else None
        if kind is not None:
            if ts_kind is None:
                ts_kind = (kind, n)
            elif kind != ts_kind[0]:
                was = "a time (text)" if ts_kind[0] == "text" else "epoch seconds (a number)"
                problem = (
                    f"line {n}, column ts: {shown(t)} is not written as line {ts_kind[1]} is ({was}); use one form"
                )
                break
        lines.append(n)
    if problem is not None:  # the rows before the problem, checked first
        rows = len(lines)
        for c in values:
            del values[c][rows:]
    columns: dict[str, Any] = {}
    for c, v in values.items():
        if c != "ts" and c not in seen:
            continue
        if c in USAGE_BY_COLUMN:  # ints stay ints, so -3 is said as -3
            arr = pa.array(v)
            columns[c] = arr if _is_number_type(arr.type) else pa.array(v, pa.float64())
        elif c == "ts":
            columns[c] = pa.array(v, pa.string() if ts_kind and ts_kind[0] == "text" else pa.float64())
        else:
            columns[c] = pa.array(v, pa.string())
    if not lines and problem is None:
        problem = f"no rows; expected one JSON object per line, e.g. {_EXAMPLE}"
    return columns, lines, problem


_KEY_END = re.compile(r'"\s*:')


def _parse_json(text: str) -> Any:
    """One line's JSON; the hooks that refuse a key given twice and NaN, and keep a huge number's text, run only
    on the lines that may need them (they slow every line down threefold)."""
    obj = json.loads(text)
    if (
        "NaN" in text
        or "Infinity" in text
        or (isinstance(obj, dict) and len(_KEY_END.findall(text)) > len(obj))
        or (isinstance(obj, dict) and any(type(v) is float and math.isinf(v) for v in obj.values()))
    ):
        obj = json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant, parse_float=_JsonFloat)
    return obj


_EXAMPLE = '{"ts": 1764064800, "user": "alice", "produce_bytes": 1024}'


def _json_row(n: int, obj: dict[str, Any], values: dict[str, list[Any]], seen: set[str]) -> str | None:
    """One JSON object's known keys appended to ``values``; a value of the wrong JSON type is the problem."""
    for c, column in values.items():
        v = obj.get(c)
        if c in obj:
            seen.add(c)
        if c in USAGE_BY_COLUMN:
            if c not in obj:
                column.append(0.0)
            elif v is None:
                column.append(None)
            elif isinstance(v, int | float) and not isinstance(v, bool):
                x = _float(v)
                if x > MAX_UNITS // USAGE_BY_COLUMN[c].scale:  # said as written: a double would round it
                    return f"line {n}, column {c}: {too_large(c, v)}"
                column.append(x if isinstance(v, float) or abs(v) > MAX_UNITS else v)
            else:
                what = EXPECTED[c][0]
                return f"line {n}, column {c}: {_json_words(v)}; expected {what} as a JSON number, 0 or more"
        elif c == "ts":
            if v is None or isinstance(v, str) or (isinstance(v, int | float) and not isinstance(v, bool)):
                column.append(v if v is None or isinstance(v, str) else _float(v))
            else:
                return f"line {n}, column ts: {_json_words(v)}; expected {TS_EXPECTED}"
        elif v is None or isinstance(v, str):
            column.append(v)
        elif isinstance(v, int) and not isinstance(v, bool):
            column.append(str(v))
        else:
            return f"line {n}, column {c}: {_json_words(v)}; expected text"
    return None


class _JsonFloat(float):
    """A JSON number with a fraction or exponent, keeping its text (``1e400`` is not said as ``inf``)."""

    text: str

    def __new__(cls, text: str) -> _JsonFloat:
        x = super().__new__(cls, text)
        x.text = text
        return x

    def __str__(self) -> str:
        return self.text


def _float(v: int | float) -> float:
    try:
        return float(v)
    except OverflowError:
        return float("inf")


def _json_words(v: Any) -> str:
    if isinstance(v, bool):
        return f"{'true' if v else 'false'} is not a number"
    if isinstance(v, str):
        return f"{shown(v)} is text"
    if isinstance(v, dict):
        return "an object is not a value"
    if isinstance(v, list):
        return "a list is not a value"
    return f"{shown(v)} is a number"
