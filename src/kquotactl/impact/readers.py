"""Read traffic samples (Parquet, CSV, JSON lines; a file or a directory of them) for the local engine.

Columns: ``ts`` (epoch seconds, or a timestamp), ``user``, ``client_id``, ``ip`` and the usage columns of
:data:`kquotactl.impact.replay.USAGE`; a missing column counts as 0 (or ``""`` for names). The Spark engine
reads the same files with Spark's readers and applies the same normalisation (``spark.read_traffic``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from kquotactl.core.errors import UsageError
from kquotactl.core.keys import TrafficColumn
from kquotactl.impact.replay import ID_COLUMNS, USAGE, Window
from kquotactl.impact.requestlog import COLUMNS as REQUEST_COLUMNS
from kquotactl.impact.requestlog import LogStats, Row, is_blank, is_request_log_file, parse_row
from kquotactl.impact.validation import first_failing_cast

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json"}


def detect_format(path: str | Path) -> tuple[str, list[Path]]:
    """The format and files of a traffic input (a directory holds files of one format)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"traffic input {str(p)!r} does not exist; give a Parquet/CSV/JSONL file or directory")
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    files = [f for f in files if f.suffix.lower() in FORMATS and not f.name.startswith((".", "_"))]
    fmts = {FORMATS[f.suffix.lower()] for f in files}
    if not files:
        raise UsageError(f"no .parquet, .csv or .jsonl files in {str(p)!r}")
    if len(fmts) > 1:
        raise UsageError(f"{str(p)!r} mixes formats ({', '.join(sorted(fmts))}); keep one format per directory")
    return fmts.pop(), files


def read_table(path: str | Path) -> Any:
    """The traffic as one pyarrow Table, every file checked (:mod:`kquotactl.impact.validation`)."""
    import pyarrow as pa

    from kquotactl.impact.validation import read_all

    fmt, files = detect_format(path)
    tables = read_all(files, fmt)
    return pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]


def engine_columns(table: Any, window: Window) -> dict[str, list[Any]]:
    """The traffic as the local engine reads it, one Python list per column: ``ms`` (the row's time in whole ms),
    ``sample`` (``ms // (S·1000)``), the three names (str) and ``u_<column>`` integer units per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "ts" not in table.column_names:
        raise UsageError("traffic has no 'ts' column (epoch seconds or a timestamp)")
    n = table.num_rows
    ms = ms_column(table.column("ts")).to_pylist()
    step = window.sample_ms
    out: dict[str, list[Any]] = {"ms": ms, "sample": [None if t is None else t // step for t in ms]}
    for name in ID_COLUMNS:
        if name in table.column_names:
            col = pc.fill_null(pc.cast(table.column(name), pa.string()), "")
            out[name] = col.to_pylist()
        else:
            out[name] = [""] * n
    if "topic" in table.column_names:  # only the optional topic-threshold model uses it (and its µs clock)
        out["topic"] = pc.fill_null(pc.cast(table.column("topic"), pa.string()), "").to_pylist()
        out["t_us"] = micros_column(table.column("ts")).to_pylist()
    for usage in {u.column: u for u in USAGE.values()}.values():
        if usage.column in table.column_names:
            out["u_" + usage.column] = usage_units(table, usage).to_pylist()
        else:
            out["u_" + usage.column] = [0] * n
    return out


def usage_units(table: Any, usage: TrafficColumn) -> Any:
    """A usage column in the model's integer units, ``floor(value × scale + 0.5)`` (nulls 0): sums exact in every
    engine. A pyarrow array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    x = pc.cast(table.column(usage.column), pa.float64())
    units = pc.floor(pc.add(pc.multiply(x, float(usage.scale)), 0.5))
    return pc.fill_null(pc.cast(units, pa.int64()), 0)


def ms_column(ts: Any) -> Any:
    """The time in whole milliseconds (the broker's clock): ``floor(microseconds / 1000)`` of :func:`micros_column`;
    the Spark engine computes the same."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.floor(pc.divide(pc.cast(micros_column(ts), pa.float64()), 1000.0)).cast(pa.int64())


def micros_column(ts: Any) -> Any:
    """Whole microseconds: those of timestamps; epoch seconds to the nearest microsecond (a double has no exact
    0.001: 0.001 s is 1000 µs, not 999.9…)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = _timestamps(ts)
    if pa.types.is_timestamp(ts.type):
        return pc.cast(pc.cast(ts, pa.timestamp("us", tz=ts.type.tz)), pa.int64())
    return pc.floor(pc.add(pc.multiply(pc.cast(ts, pa.float64()), 1e6), 0.5)).cast(pa.int64())


def _timestamps(ts: Any) -> Any:
    """``ts`` as timestamps (strings parsed) or numbers; anything else is refused."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = ts.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            ts = pc.cast(ts, pa.timestamp("us", tz="UTC"))
        except pa.ArrowInvalid:
            row = first_failing_cast(ts, pa.timestamp("us", tz="UTC"))
            raise UsageError(f"ts in row {row + 1} ({ts[row].as_py()!r}) is not an ISO 8601 time with a zone") from None
        t = ts.type
    if pa.types.is_timestamp(t) or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return ts
    raise UsageError(f"'ts' has type {t}; expected epoch seconds or a timestamp")


# -- the broker request log (format: kquotactl.impact.requestlog) ---------------------------------


def request_log_files(paths: Sequence[str]) -> list[Path]:
    """The files of a request-log input: files as given, and in directories the request logs and their
    rotations (:func:`~kquotactl.impact.requestlog.is_request_log_file`); sorted by absolute path."""
    out: set[Path] = set()
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise UsageError(f"request log {str(p)!r} does not exist; give kafka-request.log files or a directory")
        if p.is_dir():
            found = [f for f in p.rglob("*") if f.is_file() and is_request_log_file(f.name)]
            if not found:
                raise UsageError(f"no request logs (kafka-request.log*) in {str(p)!r}")
            out.update(f.absolute() for f in found)
        else:
            out.add(p.absolute())
    return sorted(out, key=str)


# Rotated request logs, by suffix: log4j2's rollover compressions (``FileExtension``: ``.gz`` and ``.zip`` built in;
# ``.bz2``, ``.deflate``, ``.xz`` and ``.zst`` through commons-compress, which the operator adds to the broker's
# classpath; ``.pack200`` packs jars, not text) and logrotate's. Any other name is read as plain text.
COMPRESSIONS = (".gz", ".zip", ".bz2", ".deflate", ".xz", ".zst")
CHUNK = 1 << 20


def compression_of(name: str) -> str:
    """The compression suffix of a file name (one of :data:`COMPRESSIONS`), or ``""`` for plain text."""
    return next((c for c in COMPRESSIONS if name.endswith(c)), "")


def _streams(compression: str, raw: BinaryIO) -> Iterator[BinaryIO]:
    """One stream's decompressed bytes, as binary streams (a zip's entries, in archive order: log4j2 writes one)."""
    import bz2
    import gzip
    import lzma
    import zipfile

    if compression == ".zip":
        with zipfile.ZipFile(raw) as archive:
            for info in archive.infolist():
                with archive.open(info) as member:
                    yield member  # type: ignore[misc]
    elif compression == ".deflate":
        yield io.BufferedReader(_Inflating(raw), CHUNK)
    elif compression == ".zst":
        import pyarrow as pa

        yield pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")
    elif compression == ".gz":
        with gzip.GzipFile(fileobj=raw) as gz:
            yield gz  # type: ignore[misc]
    elif compression == ".bz2":
        with bz2.BZ2File(raw) as bz:
            yield bz  # type: ignore[misc]
    elif compression == ".xz":
        with lzma.LZMAFile(raw) as xz:
            yield xz  # type: ignore[misc]
    else:
        yield raw


class _Inflating(io.RawIOBase):
    """A zlib-wrapped deflate stream (commons-compress' ``.deflate`` default) as a readable raw stream."""

    def __init__(self, raw: BinaryIO) -> None:
        import zlib

        self._raw, self._inflater, self._rest = raw, zlib.decompressobj(), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._rest:
            if self._inflater.eof:
                return 0
            block = self._raw.read(CHUNK)
            if not block:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            self._rest = self._inflater.decompress(block)
        n = min(len(buffer), len(self._rest))
        buffer[:n], self._rest = self._rest[:n], self._rest[n:]
        return n


def decoded_lines(name: str, raw: BinaryIO) -> Iterator[str]:
    """The lines of one request log (split on ``\\n`` only, as the Spark engine's ``lineSep``), decompressed by
    the suffix of ``name``; bytes that are not UTF-8 become U+FFFD as in Spark's text reader. Both engines read
    the compressions Spark has no codec for through this."""
    for stream in _streams(compression_of(name), raw):
        for line in io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="\n"):
            yield line[:-1] if line.endswith("\n") else line


def request_log_lines(path: Path) -> Iterator[str]:
    """A request log's lines (:func:`decoded_lines`), any compression of :data:`COMPRESSIONS`."""
    import lzma
    import zipfile
    import zlib

    try:
        with open(path, "rb") as raw:
            yield from decoded_lines(path.name, raw)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, zipfile.BadZipFile) as e:
        compression = compression_of(path.name)
        if isinstance(e, OSError) and e.errno is not None:  # the file itself: missing, a directory, no permission
            raise UsageError(f"cannot read request log {str(path)!r}: {e.strerror}") from None
        detail = re.sub(r"\s*\(b'.*'\)$", "", str(e)).rstrip(".") or "unreadable"
        what = f"not a valid {compression} file (its name says so): {detail}" if compression else detail
        raise UsageError(f"cannot read request log {str(path)!r}: {what}") from None


def first_malformed_line(path: Path) -> int | None:
    """The 1-based number of the first malformed line of one request log, or None."""
    for n, line in enumerate(request_log_lines(path), 1):
        if parse_row(line) is None and not is_blank(line):
            return n
    return None


BATCH_ROWS = 65_536  # rows held as Python tuples before they become one Arrow record batch


def read_request_log(paths: Sequence[str]) -> tuple[Any, LogStats]:
    """Request logs as one pyarrow traffic table (columns :data:`~kquotactl.impact.requestlog.COLUMNS`) and
    what was skipped."""
    import pyarrow as pa

    types = {"ts": pa.float64(), "user": pa.string(), "client_id": pa.string(), "ip": pa.string()}
    types.update({"request_time_ms": pa.float64()})
    schema = pa.schema([(c, types.get(c, pa.int64())) for c in REQUEST_COLUMNS])
    stats = LogStats()
    batches: list[Any] = []
    rows: list[Row] = []

    def flush() -> None:
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in REQUEST_COLUMNS]
        batches.append(pa.record_batch([pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema))
        stats.requests += len(rows)
        rows.clear()

    for path in request_log_files(paths):
        for n, line in enumerate(request_log_lines(path), 1):
            row = parse_row(line)
            if row is not None:
                rows.append(row)
                if len(rows) == BATCH_ROWS:
                    flush()
            elif is_blank(line):
                continue
            else:
                stats.malformed += 1
                if stats.first_malformed is None:
                    stats.first_malformed = f"{path}:{n}"
    flush()
    stats.lines = stats.requests + stats.malformed
    return pa.Table.from_batches(batches, schema), stats
