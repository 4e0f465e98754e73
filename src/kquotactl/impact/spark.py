"""The Spark engine: the model of :mod:`kquotactl.impact.replay` on PySpark DataFrames.

The resolution runs in the DataFrame API only; the replay through Kafka's ``Rate`` is the one pure function
both engines share (:func:`kquotactl.impact.replay.replay_quota_id`), run on each quota-id's rows a partition at
a time (``mapInArrow``, partitions sorted by quota-id), so the executors need kquotactl too (``make impact-zip``,
``spark-submit --py-files``):

1. read and normalise the traffic (integer units per row, ``ms`` = the row's time in whole milliseconds,
   sample = floor(ms / S·1000));
2. resolve every row per key with broadcast hash joins against the small quota table — one join per kind of
   name the precedence levels look up (pair, user, client-id, ip) — and ``coalesce`` in level order; default
   entities are literals;
3. ``inline`` the row into one row per key with usage; the quota-id travels as numbers — the key's index, the
   level and 64-bit ``xxhash64`` hashes of the names — so the shuffle and the grouping work on fixed-width rows;
4. sum per (quota-id, millisecond) and replay each quota-id's recordings in one group (windowed input, the
   brokers' sensors: the window sum as events (s, +u) and (s + span, −u) with a running sum over a window
   partitioned by quota-id instead);
5. aggregate throttle seconds, rates and milliseconds per quota-id and collect only that (small) report;
6. put the names back: one more pass over the traffic finds the names whose hashes the report holds (a
   broadcast semi-join). Two names sharing a hash would merge two quota-ids; that is detected there and
   refused, never reported wrong.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import reduce
from typing import Any

from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import UsageError
from kquotactl.core.keys import KEYS, PRODUCE_KEY
from kquotactl.core.precedence import LEVELS, QuotaIndex, Sharing
from kquotactl.impact.readers import compression_of, detect_format, first_malformed_line, request_log_files
from kquotactl.impact.recommend import NOTHING_SETTLED, Settled, Settlement, Volumes
from kquotactl.impact.replay import (
    BROKER_COLUMN,
    CLIENT_MODEL_KEYS,
    IP_MODEL_KEYS,
    MODEL_KEYS,
    USAGE,
    EngineResult,
    KeyTotals,
    QidStats,
    QuotaRow,
    Rates,
    Sid,
    Timeline,
    Window,
)
from kquotactl.impact.requestlog import (
    API_FETCH,
    API_PRODUCE,
    API_VERSIONS,
    BLANK,
    FETCH_APIS,
    JSON_FIELDS,
    MILLIS_CHARS,
    PRINCIPAL_NAME,
    REPLICA_ID,
    REQUEST_EXEMPT_APIS,
    STAMP_CHARS,
    LogStats,
)
from kquotactl.impact.requestlog import COLUMNS as REQUEST_COLUMNS
from kquotactl.impact.requestlog import LINE as RL_LINE
from kquotactl.impact.topic import TICK_US, Cell, implicit_creations
from kquotactl.impact.validation import check_input

# LINE in its parts, for the Spark parser (_parsed_lines): the head up to the JSON's "{", and the tail after its "}".
LINE_HEAD, LINE_TAIL = RL_LINE.split(r"(\{.*\})")
#: RECORDS_SIZE with its literal prefix spelled out: the same matches, but Java's regex then skips through the text
#: for that prefix (Boyer-Moore) instead of trying the alternatives at every quote (``tests/test_impact_requestlog.py``
#: holds the two patterns to the same matches)
RECORDS_SIZE_SPARK = r'"record(?:sSizeInBytes|SetSizeInBytes)":([0-9]{1,10})(?![0-9])'

# Does the resolver model the broker's two-phase lookup for empty user / client-id names? The Spark engine
# follows whichever resolver this package has, so both engines always agree.
BROKER_EXACT_EMPTY_NAMES = (
    QuotaIndex(
        {
            Entity(user=DEFAULT, client_id=DEFAULT): {PRODUCE_KEY: 1},
            Entity(client_id=DEFAULT): {PRODUCE_KEY: 2},
        }
    )
    .resolve(PRODUCE_KEY, "", "c")
    .level
    == 8  # the broker: an empty user's (user, client) level gives tags ("", c), looked up at levels 7-8 only
)

# A quota-id travels as numbers: QID_PARTS hold xxhash64 of the names in NAME_COLUMNS (the same position).
QID_PARTS = ("qu", "qc", "qip")
NAME_COLUMNS = ("user", "client_id", "ip")

DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "4g",
    # The parsed request log is cached once, then read four times: compressing its columns took about 4 s of CPU per
    # million lines (1.5 s uncompressed; the parse itself about 11 s), for less memory. --conf turns it back on.
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
}


def parse_conf(pairs: Iterable[str]) -> dict[str, str]:
    out = {}
    for p in pairs:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--conf {p!r} is not KEY=VALUE (e.g. --conf spark.sql.shuffle.partitions=16)")
        if k.strip() in out:
            raise UsageError(f"--conf: {k.strip()} given twice: give each key once")
        out[k.strip()] = v.strip()
    return out


def session(master: str | None = "local[*]", conf: dict[str, str] | None = None) -> Any:
    """A SparkSession; ``master=None`` leaves the master to ``spark-submit``/``spark-defaults``.

    Spark's own output (the JVM's warnings, log4j's lines, stack traces) goes to :func:`log_path`, not to the
    terminal, unless kquotactl's debug logging is on (``--debug``)."""
    import os
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if master and master.startswith("local"):  # Python workers (the replay, compressed logs): this interpreter
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("kquotactl-impact")
    if master:
        builder = builder.master(master)
        settings = {**DEFAULT_CONF, **(conf or {})}
    else:
        settings = {k: v for k, v in {**DEFAULT_CONF, **(conf or {})}.items() if not k.startswith("spark.driver.")}
    for k, v in settings.items():
        builder = builder.config(k, v)
    try:
        if not _debugging():
            _quiet_python_loggers()
            _quiet_gateway(
                {"spark.app.name": "kquotactl-impact", **({"spark.master": master} if master else {})}, settings
            )
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
    except Exception as e:
        raise failure(e, "Spark did not start") from None
    return spark


_LOG: list[str] = []  # the file Spark's output goes to, once the gateway is started quietly


def log_path() -> str | None:
    """Where Spark's own output went (None: to the terminal, or Spark not started here)."""
    return _LOG[0] if _LOG else None


def _debugging() -> bool:
    import logging

    return logging.getLogger("kquotactl").isEnabledFor(logging.DEBUG)


def _quiet_python_loggers() -> None:
    """pyspark logs a failed query's context to stderr itself (its own handler, as JSON): off the terminal; the
    failure is reported as one line (:func:`failure`)."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def _quiet_gateway(identity: dict[str, str], settings: dict[str, str]) -> None:
    """Start the JVM gateway as ``getOrCreate`` would, its stdout and stderr into a log file (removed at exit
    unless a failure named it), and keep py4j's Python logging off the terminal."""
    import atexit
    import logging
    import os
    import tempfile

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    py4j = logging.getLogger("py4j")
    py4j.addHandler(logging.NullHandler())
    py4j.propagate = False
    fd, path = tempfile.mkstemp(prefix="kquotactl-spark-", suffix=".log")
    _LOG[:] = [path]
    atexit.register(_remove_log, path)
    conf = SparkConf(loadDefaults=False)
    for k, v in {**identity, **settings}.items():
        conf.set(k, v)
    with os.fdopen(fd, "ab") as out:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})  # type: ignore[no-untyped-call]
    SparkContext._ensure_initialized(gateway=gateway)


_KEEP: set[str] = set()


def _remove_log(path: str) -> None:
    import contextlib
    import os

    if path not in _KEEP:
        with contextlib.suppress(OSError):
            os.remove(path)


def failure(e: BaseException, what: str = "the Spark job failed") -> BaseException:
    """A Spark or py4j error as one line: the innermost Java cause's message, and where Spark's log is; any other
    exception as it is."""
    from kquotactl.core.errors import QuotaError

    if isinstance(e, QuotaError) or not _is_spark_error(e):
        return e
    cause = _root_message(e)
    path = log_path()
    if path is not None:
        _KEEP.add(path)
    where = f"Spark's log: {path}" if path else "re-run with --debug for Spark's own output"
    return QuotaError(f"{what}: {cause}; {where}")


def _is_spark_error(e: BaseException) -> bool:
    module = type(e).__module__ or ""
    return module.startswith(("py4j", "pyspark"))


def _root_message(e: BaseException) -> str:
    """The innermost Java cause's message (a Spark error wraps the one that says what is wrong), first line only,
    without Java class names; the Python error's first line when there is no Java side."""
    import re

    java = getattr(e, "java_exception", None) or getattr(e, "_origin", None)
    text = ""
    try:
        while java is not None:
            message = java.getMessage()
            if message:
                text = str(message)
            java = java.getCause()
    except Exception:  # the JVM is gone: keep what was read
        pass
    if not text:
        text = str(e).strip() or type(e).__name__
    first = text.strip().splitlines()[0] if text.strip() else "no detail"
    first = re.sub(r"^\[[A-Z_.]+\]\s*|\s*SQLSTATE: [0-9A-Z]+\s*$", "", first)  # Spark's error class and state
    return re.sub(r"\b(?:[a-z][a-z0-9_]*\.)+([A-Z][A-Za-z0-9_$]*)", r"\1", first).rstrip(".:")


# -- input ---------------------------------------------------------------------------------------


def check_traffic(path: str) -> None:
    """A local traffic input checked as the local engine reads it (:mod:`kquotactl.impact.validation`), before
    Spark starts; remote inputs (s3a://, hdfs://) go to Spark as they are."""
    if "://" not in path:
        fmt, files = detect_format(path)
        check_input(files, fmt)


def read_traffic(spark: Any, path: str, window: Window, checked: bool = False) -> Any:
    """Traffic normalised exactly as ``readers.engine_columns`` does: sample, names, ``u_<column>`` units; a local
    input is checked first unless ``checked`` (by :func:`check_traffic`)."""
    fmt = "parquet"
    if "://" not in path:
        if not checked:
            check_traffic(path)
        fmt, _ = detect_format(path)
    elif path.endswith((".csv",)):
        fmt = "csv"
    elif path.endswith((".json", ".jsonl", ".ndjson")):
        fmt = "json"
    reader = spark.read
    if fmt == "csv":
        # RFC 4180 quoting (a quote doubled, as the check reads it), not Spark's backslash escape
        df = reader.option("header", "true").option("inferSchema", "true").option("escape", '"').csv(path)
    elif fmt == "json":
        df = reader.option("lineSep", "\n").json(path)  # lines end at \n only, as the local reader splits them
    else:
        df = reader.parquet(path)
    if "://" in path:
        check_remote(df, path)
    return engine_frame(df, window)


def check_remote(df: Any, source: str) -> None:
    """A remote input (s3a://, hdfs://, file://), which only Spark reads: one pass finds a cell the local check
    would refuse (an empty, non-numeric, NaN, negative or too large usage value; a ts that is empty, not a time,
    or outside 1970 to 9999) and names its file and column (Spark keeps no line numbers)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from kquotactl.impact.validation import EXPECTED, MAX_UNITS, TS_EXPECTED, TS_MAX, USAGE_BY_COLUMN, TrafficError

    checks: list[tuple[str, Any, str]] = []
    for c in df.columns:
        if c not in USAGE_BY_COLUMN:
            continue
        x = F.col(c).try_cast("double")  # (ANSI mode: a plain cast fails the job on 'abc')
        limit = MAX_UNITS // USAGE_BY_COLUMN[c].scale
        bad = F.col(c).isNull() | x.isNull() | F.isnan(x) | (x < 0) | (x > F.lit(float(limit)))
        checks.append((c, bad, f"{EXPECTED[c][0]}, 0 or more, at most {limit:,} {EXPECTED[c][1]}"))
    if "ts" in df.columns:
        t = df.schema["ts"].dataType
        if isinstance(t, T.NumericType):
            x = F.col("ts").try_cast("double")
            seconds = F.when(~F.isnan(x), x)
        elif isinstance(t, T.StringType | T.TimestampType | T.TimestampNTZType):
            stamp = (
                F.try_to_timestamp(F.col("ts")) if isinstance(t, T.StringType) else F.col("ts").try_cast("timestamp")
            )
            seconds = F.unix_micros(stamp) / F.lit(1e6)
        else:
            seconds = F.lit(None).cast("double")
        checks.append(("ts", seconds.isNull() | (seconds < 0) | (seconds > F.lit(float(TS_MAX))), TS_EXPECTED))
    if not checks:
        return
    cond = reduce(operator.or_, (bad for _, bad, _ in checks))
    flags = [F.coalesce(bad, F.lit(True)).alias(f"_bad{i}") for i, (_, bad, _) in enumerate(checks)]
    values = [F.col(c).cast("string").alias(f"_value{i}") for i, (c, _, _) in enumerate(checks)]
    rows = df.where(F.coalesce(cond, F.lit(True))).select(F.col("_metadata.file_path"), *flags, *values).limit(1)
    found = rows.collect()
    if not found:
        return
    row = found[0]
    i = next(i for i in range(len(checks)) if row[f"_bad{i}"])
    value = row[f"_value{i}"]
    said = "the cell is empty" if value in (None, "") else f"{value!r} is not valid"
    raise TrafficError(
        f"{row['file_path']}: column {checks[i][0]}: {said}; expected {checks[i][2]} (a remote input: Spark names "
        f"no line)"
    )


# Rotated logs Spark's text reader decompresses itself (Hadoop's gzip and bzip2 codecs ship with every Spark); the
# other compressions of readers.COMPRESSIONS are read as whole files and decompressed by readers.decoded_lines.
SPARK_CODECS = ("", ".gz", ".bz2")


def read_request_log(spark: Any, paths: Sequence[str], window: Window) -> tuple[Any, LogStats]:
    """Broker request logs parsed on Spark (``spark.read.text``, Spark's codecs for ``.gz``/``.bz2``, the local
    reader's decompression for the other formats; regexes and ``from_json`` from
    :mod:`kquotactl.impact.requestlog`), normalised as :func:`engine_frame` does, with the same :class:`LogStats` as
    the local reader. The parsed lines are persisted: the counts and every quota set's replay read them, not the
    text."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    local = all("://" not in p for p in paths)
    files = [str(f) for f in request_log_files(paths)] if local else list(paths)
    native = [f for f in files if compression_of(f) in SPARK_CODECS]
    other = [f for f in files if compression_of(f) not in SPARK_CODECS]
    parts = []
    if native:
        text = spark.read.option("lineSep", "\n").text(native)
        parts.append(text.select(F.col("_metadata.file_path").alias("file"), F.col("value")))
    if other:
        blobs = spark.read.format("binaryFile").load(other).select(F.col("path").alias("file"), "content")
        parts.append(blobs.mapInArrow(_decompressed_lines, "file string, value string"))
    lines = reduce(lambda a, b: a.unionByName(b), parts)
    parsed = _parsed_lines(lines).persist(
        StorageLevel.MEMORY_AND_DISK  # the text is parsed once: for the counts and for every replay
    )
    agg = parsed.agg(
        F.count(F.when(~F.col("blank"), 1)).alias("lines"),
        F.count(F.when(F.col("bad"), 1)).alias("malformed"),
        F.collect_set(F.when(F.col("bad"), F.col("file"))).alias("bad_files"),
    ).collect()[0]
    stats = LogStats(lines=agg["lines"], malformed=agg["malformed"])
    stats.requests = stats.lines - stats.malformed
    if agg["bad_files"]:
        # The local reader's order: files sorted by path (Spark's URIs spell paths differently per reader).
        stats.first_malformed = _first_malformed(min(agg["bad_files"], key=_file_path))
    rows = parsed.where(~F.col("blank") & ~F.col("bad")).select(*REQUEST_COLUMNS)
    return engine_frame(rows, window), stats


def _decompressed_lines(batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow``: (file, content) rows of whole compressed files → (file, value) rows, one per line."""
    import io

    import pyarrow as pa

    from kquotactl.impact.readers import BATCH_ROWS, decoded_lines

    def rows(file: str, values: list[str]) -> Any:
        columns = [pa.array([file] * len(values), pa.string()), pa.array(values, pa.string())]
        return pa.record_batch(columns, ["file", "value"])

    for batch in batches:
        for file, content in zip(batch.column("file").to_pylist(), batch.column("content").to_pylist(), strict=True):
            values: list[str] = []
            for line in decoded_lines(file, io.BytesIO(content)):
                values.append(line)
                if len(values) == BATCH_ROWS:
                    yield rows(file, values)
                    values = []
            yield rows(file, values)


def _parsed_lines(lines: Any) -> Any:
    """``lines`` (file, value) → file (set on malformed lines only), blank, bad (malformed) and the traffic
    columns, as Spark expressions.

    Every pass over a ~900-byte line costs about as much as ``from_json``, so there are few. :data:`LINE` is
    matched in its parts (:data:`LINE_HEAD`, the JSON, :data:`LINE_TAIL`): the head on the text before the line's
    first ``{`` and the tail on the text after its last ``}`` (``substring_index`` finds both without reading the
    rest), the JSON being the bytes between. The same lines match: the head holds no ``{`` and no ``}``, the tail
    no ``}``, so where LINE matches its JSON group runs from the first ``{`` to the last ``}``. Then ``from_json``
    once, the record sizes only in Produce and Fetch lines (:data:`RECORDS_SIZE_SPARK`), the ``replicaId`` only in
    Fetch lines. Each is a column of its own before the columns that read it, so it is evaluated once a line."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    value = F.col("value")
    lines = lines.select(
        "file",
        "value",
        F.substring_index(value, "{", 1).alias("_head"),  # "[" stamp [,.] millis "] LEVEL Completed request:"
        F.substring_index(value, "}", -1).alias("_tail"),  # " (kafka.request.logger)"
    )
    head, tail = F.col("_head"), F.col("_tail")
    # (regexp_extract gives "" for no match: an empty head is no match)
    matched = (head != F.lit("")) & (F.regexp_extract(head, LINE_HEAD, 0) == head) & tail.rlike("^" + LINE_TAIL)
    start = F.octet_length(head) + 1
    length = F.octet_length(value) - F.octet_length(head) - F.octet_length(tail)
    # bytes, not characters: a substr of the string would count the whole line's characters first
    body = F.when(matched, value.cast("binary").substr(start, length).cast("string"))
    lines = lines.select("file", "value", "_head", body.alias("_json"), matched.alias("_matched"))
    json_text, matched = F.col("_json"), F.col("_matched")
    # The shape LINE matched (digits at fixed places) read as a timestamp: a date that does not exist is null.
    stamp = F.when(matched, head.substr(2, STAMP_CHARS).try_cast("timestamp"))
    millis = F.when(matched, head.substr(STAMP_CHARS + 3, MILLIS_CHARS).cast("int"))  # (ANSI: "x" would fail)
    kinds = {"int": T.IntegerType(), "string": T.StringType(), "double": T.DoubleType()}
    nested: dict[str, list[Any]] = {}  # JSON_FIELDS as the schema from_json reads: top-level and one level down
    for dotted, kind in JSON_FIELDS.items():
        parent, _, child = dotted.rpartition(".")
        nested.setdefault(parent, []).append(T.StructField(child, kinds[kind]))
    top = nested.pop("")
    schema = T.StructType(
        [T.StructField(k, T.StructType(v)) for k, v in nested.items()]
        + top
        + [T.StructField("_corrupt_record", T.StringType())]
    )
    doc = F.from_json(json_text, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"})
    lines = lines.select(
        "file",
        "value",
        "_json",
        "_matched",
        stamp.alias("_stamp"),
        (F.unix_seconds(stamp) + millis / F.lit(1000.0)).alias("_ts"),
        F.when(matched, doc).alias("_doc"),
    )
    matched, stamp, doc = F.col("_matched"), F.col("_stamp"), F.col("_doc")
    api = doc["requestHeader"]["requestApiKey"]
    sizes = F.aggregate(
        F.regexp_extract_all(json_text, F.lit(RECORDS_SIZE_SPARK), 1),
        F.lit(0).cast("long"),
        lambda acc, x: acc + x.cast("long"),
    )
    lines = lines.select(
        "file",
        "value",
        "_matched",
        "_stamp",
        "_ts",
        "_doc",
        api.alias("_api"),
        F.when(api.isin(API_PRODUCE, *FETCH_APIS), sizes).alias("_sizes"),
        # The first replicaId (REPLICA_ID, whole match), searched for in Fetch lines only.
        F.when(api == API_FETCH, F.regexp_extract(json_text, REPLICA_ID, 0)).alias("_replica"),
    )
    api, sizes, replica = F.col("_api"), F.col("_sizes"), F.col("_replica")
    connection, principal = doc["connection"], doc["principal"]
    blank = ~matched & value.rlike(BLANK)  # (And is lazy: only the lines LINE refuses are matched again)
    bad = F.coalesce(
        ~blank
        & (
            ~matched
            | stamp.isNull()
            | doc.isNull()
            | doc["_corrupt_record"].isNotNull()
            | api.isNull()
            | connection.isNull()
            | principal.isNull()
        ),
        F.lit(True),
    )
    follower = (api == API_FETCH) & (replica != F.lit("")) & ~replica.contains("-")  # a follower's has no sign
    # Request time the broker records as exempt (requestlog.REQUEST_EXEMPT_APIS, a follower, an acks=0 Produce).
    exempt = (
        api.isin(*REQUEST_EXEMPT_APIS)
        | follower
        | ((api == API_PRODUCE) & F.coalesce(doc["request"]["acks"] == 0, F.lit(False)))
    )
    remote = F.split(connection, "-").getItem(1)
    ip = F.when(remote.contains(":"), F.regexp_extract(remote, "^(.*):[^:]*$", 1)).otherwise(F.lit(""))
    user = F.when(principal.contains(":"), F.regexp_extract(principal, PRINCIPAL_NAME, 1)).otherwise(principal)
    zero = F.lit(0).cast("long")
    return lines.select(
        F.when(bad, F.col("file")).alias("file"),  # (only the malformed lines' file is read: not cached per line)
        blank.alias("blank"),
        bad.alias("bad"),
        F.col("_ts").alias("ts"),
        user.alias("user"),
        F.coalesce(doc["requestHeader"]["clientId"], F.lit("")).alias("client_id"),
        F.coalesce(ip, F.lit("")).alias("ip"),
        F.when(api == API_PRODUCE, sizes).otherwise(zero).alias("produce_bytes"),  # (CASE WHEN is lazy too)
        F.when(api.isin(*FETCH_APIS) & ~follower, sizes).otherwise(zero).alias("fetch_bytes"),
        F.lit(1).cast("long").alias("requests"),
        F.when(exempt, F.lit(0.0)).otherwise(F.coalesce(doc["localTimeMs"], F.lit(0.0))).alias("request_time_ms"),
        F.when(api == API_VERSIONS, F.lit(1)).otherwise(F.lit(0)).cast("long").alias("connections"),
    )


def _file_path(file_uri: str) -> str:
    """A local file's path from a Spark file URI (``file:/a``, ``file:///a``); a remote one's URI as it is."""
    from urllib.parse import unquote, urlparse

    u = urlparse(file_uri)
    return unquote(u.path) if u.scheme in ("", "file") else file_uri


def _first_malformed(file_uri: str) -> str:
    """``FILE:LINE`` of the first malformed line in the first file holding one (Spark gives no line numbers:
    that one file is read again, locally, with the same parser); ``FILE`` alone for a remote file."""
    from pathlib import Path

    where = _file_path(file_uri)
    if where == file_uri and "://" in file_uri:
        return file_uri
    path = Path(where)
    line = first_malformed_line(path)
    return f"{path}:{line}" if line is not None else str(path)


def engine_frame(df: Any, window: Window) -> Any:
    """The traffic as the Spark engine reads it: :func:`kquotactl.impact.readers.engine_columns`'s columns, as a
    DataFrame (rows without a time dropped)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if "ts" not in df.columns:
        raise UsageError("traffic has no 'ts' column (epoch seconds or a timestamp)")
    ts_type = df.schema["ts"].dataType
    if isinstance(ts_type, T.StringType):
        ts = F.to_timestamp("ts")
        ts_type = T.TimestampType()
    else:
        ts = F.col("ts")
    if isinstance(ts_type, T.TimestampType | T.TimestampNTZType):
        if isinstance(ts_type, T.TimestampNTZType):
            ts = ts.cast(T.TimestampType())
        ms = F.floor(F.unix_micros(ts).cast("double") / F.lit(1000.0))
    elif isinstance(ts_type, T.NumericType):
        micros = F.floor(ts.cast("double") * F.lit(1e6) + F.lit(0.5))  # as readers.micros_column
        ms = F.floor(micros / F.lit(1000.0))
    else:
        raise UsageError(f"'ts' has type {ts_type.simpleString()}; expected epoch seconds or a timestamp")
    cols = [ms.cast("long").alias("ms")]
    if "topic" in df.columns:  # only the optional topic-threshold model uses it (and its µs clock)
        micros = (
            F.unix_micros(ts)
            if isinstance(ts_type, T.TimestampType | T.TimestampNTZType)
            else F.floor(F.col("ts").cast("double") * F.lit(1e6) + F.lit(0.5))  # as readers.micros_column
        )
        cols += [F.coalesce(F.col("topic").cast("string"), F.lit("")).alias("topic"), micros.cast("long").alias("t_us")]
    for name in ("user", "client_id", "ip"):
        cols.append(
            F.coalesce(F.col(name).cast("string"), F.lit("")).alias(name)
            if name in df.columns
            else F.lit("").alias(name)
        )
    if BROKER_COLUMN in df.columns:  # which broker measured a row (quotas are per broker): recommend reads it
        cols.append(F.coalesce(F.col(BROKER_COLUMN).cast("string"), F.lit("")).alias(BROKER_COLUMN))
    for usage in {u.column: u for u in USAGE.values()}.values():
        if usage.column in df.columns:
            x = F.floor(F.col(usage.column).cast("double") * F.lit(float(usage.scale)) + F.lit(0.5))
            cols.append(F.coalesce(x.cast("long"), F.lit(0).cast("long")).alias("u_" + usage.column))
        else:
            cols.append(F.lit(0).cast("long").alias("u_" + usage.column))
    step = window.sample_ms  # floor(ms / S·1000) in integers, as the local engine
    sample = F.expr(f"(ms - pmod(ms, {step})) div {step}").alias("sample")
    return df.select(*cols).select(sample, "*").where(F.col("ms").isNotNull())


# -- resolution ----------------------------------------------------------------------------------


def _tables(spark: Any, rows: Sequence[QuotaRow]) -> dict[str, Any]:
    """The quota table split by what each level looks up, pivoted to one column per (level, key)."""
    from pyspark.sql import types as T

    def frame(
        keycols: list[str], levels: tuple[int, ...], keys: tuple[str, ...], pick: Callable[[QuotaRow], bool]
    ) -> Any:
        entries: dict[tuple[Any, ...], dict[str, float]] = {}
        for r in rows:
            if r.level in levels and r.key in keys and pick(r):
                ident = tuple(getattr(r, c) for c in keycols)
                entries.setdefault(ident, {})[f"l{r.level}_{r.key}"] = float(r.limit)
        if not entries:
            return None
        valcols = [f"l{lv}_{k}" for lv in levels for k in keys]
        schema = T.StructType(
            [T.StructField(c, T.StringType(), False) for c in keycols]
            + [T.StructField(c, T.DoubleType(), True) for c in valcols]
        )
        return _local_frame(
            spark, schema, [(*ident, *(vals.get(c) for c in valcols)) for ident, vals in entries.items()]
        )

    is_client = lambda r: r.ip is None  # noqa: E731
    return {
        "pair": frame(["user", "client_id"], (1,), CLIENT_MODEL_KEYS, is_client),
        "user": frame(["user"], (2, 3), CLIENT_MODEL_KEYS, is_client),
        "client": frame(["client_id"], (4, 7), CLIENT_MODEL_KEYS, is_client),
        "ip": frame(["ip"], (1,), IP_MODEL_KEYS, lambda r: r.ip is not None),
    }


def _local_frame(spark: Any, schema: Any, rows: list[tuple[Any, ...]]) -> Any:
    """A small driver-side table as a DataFrame through Arrow: no Python worker (and no executor Python) needed."""
    import pyarrow as pa

    arrow_schema = pa.schema(
        [(f.name, pa.string() if f.dataType.typeName() == "string" else pa.float64()) for f in schema.fields]
    )
    table = pa.Table.from_pylist([dict(zip(arrow_schema.names, r, strict=True)) for r in rows], schema=arrow_schema)
    return spark.createDataFrame(table, schema)


def _constants(rows: Sequence[QuotaRow]) -> dict[tuple[int, str], float]:
    """Default-entity limits (levels 5, 6, 8 and the default ip): the same for every row, so literals."""
    out = {}
    for r in rows:
        if r.ip is None and r.level in (5, 6, 8):
            out[(r.level, r.key)] = float(r.limit)
        if r.key in IP_MODEL_KEYS and r.level == 2:
            out[(2, r.key)] = float(r.limit)
    return out


def resolved_usage(traffic: Any, rows: Sequence[QuotaRow], carry: Sequence[str] = ()) -> Any:
    """One row per (input row, key with usage): k (index in ``MODEL_KEYS``), level (0 = unlimited), limit, the
    quota-id's name hashes qu/qc/qip (null where the quota-id has no such part), sample, ms, u; and the ``carry``
    columns of the input row."""
    from pyspark.sql import functions as F

    df, quota_ids = _resolution(traffic, rows)
    structs = [_entry(index, *quota_ids[key], "u_" + USAGE[key].column) for index, key in enumerate(MODEL_KEYS)]
    return df.select("sample", "ms", *carry, F.inline(F.array(*structs))).where(F.col("u") > 0)


#: the levels whose quota-id is the request's own (user, client-id): a (user, client-id) pair's requests are all
#: its rows, whichever of these levels a key resolves at
PAIR_LEVELS = tuple(level.number for level in LEVELS if level.sharing is Sharing.PAIR)


def replay_rows(traffic: Any, rows: Sequence[QuotaRow], settlement: Settlement = NOTHING_SETTLED) -> Any:
    """The rows :func:`replay` takes (grouped by :data:`REPLAY_GROUP`), in one pass over ``traffic``: a request
    whose client keys all resolve to its own (user, client-id) pair (:data:`PAIR_LEVELS`), or to no limit, is one
    row for all of them (``kx`` and ``lvx`` -1, qu and qc the pair); any other request is one row per key it has limited
    usage of (``kx`` the key's index in ``MODEL_KEYS``, ``lvx`` its level, qu/qc/qip that key's quota-id), as
    :func:`resolved_usage` gives. Usage with no limit is left out (:func:`run` counts it from the totals), and so is
    the usage the ``settlement`` settles (its quota-ids' outcome is known)."""
    from pyspark.sql import functions as F

    whole_keys = settlement.keys  # no usage of these keys is left to replay
    df, settled = _settled_bits(traffic, settlement)
    usage = {key: F.col("u_" + USAGE[key].column) for key in MODEL_KEYS}
    # a request's usage of a key still to replay, whatever limit it resolves to
    pending = {key: (usage[key] > 0) & ~settled.get(key, F.lit(False)) for key in MODEL_KEYS if key not in whole_keys}
    if settlement.settled or whole_keys:  # only the requests with usage left to replay are resolved
        df = df.where(reduce(operator.or_, pending.values(), F.lit(False)))
    df, quota_ids = _resolution(df, rows)
    zero = F.lit(0).cast("long")
    # the client keys some quota sets at a level that is not the pair's: only they can make a request not a pair's
    elsewhere = {
        r.key for r in rows if r.ip is None and r.key in CLIENT_MODEL_KEYS and r.level not in PAIR_LEVELS
    } - whole_keys
    # Each as a column of its own, computed once a request: inlined into every struct below, the expressions grow
    # past what the JVM compiles, and the stage runs six times slower.
    df = df.withColumns(
        {
            **{f"_lim{i}": quota_ids[key][1].cast("double") for i, key in enumerate(MODEL_KEYS)},
            **{
                f"_u{i}": (
                    F.when(pending[key] & (quota_ids[key][0] > 0), usage[key]).otherwise(zero)
                    if key in pending
                    else zero
                )
                for i, key in enumerate(MODEL_KEYS)
            },
            "_pair": reduce(
                operator.and_,
                (quota_ids[key][0].isin(0, *PAIR_LEVELS) for key in CLIENT_MODEL_KEYS if key in elsewhere),
                F.lit(True),
            ),
        }
    )
    nothing = F.lit(None).cast("double")
    pair = F.col("_pair")

    def row(kx: int, lvx: Any, qu: Any, qc: Any, qip: Any, keys: Sequence[str]) -> Any:
        per_key = []
        for i, key in enumerate(MODEL_KEYS):
            mine = key in keys
            per_key += [
                (quota_ids[key][0] if mine else F.lit(0)).cast("int").alias(f"lv{i}"),
                (F.col(f"_lim{i}") if mine else nothing).alias(f"lim{i}"),
                (F.col(f"_u{i}") if mine else zero).alias(f"u{i}"),
            ]
        return F.struct(
            F.lit(kx).cast("byte").alias("kx"),
            lvx.cast("int").alias("lvx"),
            qu.cast("long").alias("qu"),
            qc.cast("long").alias("qc"),
            qip.cast("long").alias("qip"),
            *per_key,
        )

    used = {key: F.col(f"_u{i}") > 0 for i, key in enumerate(MODEL_KEYS)}
    whole = row(-1, F.lit(-1), F.col("h_user"), F.col("h_client_id"), F.lit(None), CLIENT_MODEL_KEYS)
    structs = [F.when(pair & reduce(operator.or_, (used[k] for k in CLIENT_MODEL_KEYS)), whole)]
    for index, key in enumerate(MODEL_KEYS):
        level, _, qu, qc, qip = quota_ids[key]
        if key in whole_keys or (key in CLIENT_MODEL_KEYS and not elsewhere):
            continue  # nothing to replay, or every request is a pair's (or has no limit)
        alone = used[key] if key not in CLIENT_MODEL_KEYS else ~pair & used[key]
        structs.append(F.when(alone, row(index, level, qu, qc, qip, (key,))))
    return df.select("ms", F.inline(F.array(*structs))).where(F.col("kx").isNotNull())


def _settled_bits(df: Any, settlement: Settlement) -> tuple[Any, dict[str, Any]]:
    """``df`` joined with the settled quota-ids of the keys not settled whole (a small broadcast table of their
    pairs, one of their ips, each with a bit per key), and per such key whether a row's usage of it is settled."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    by_pair: dict[tuple[str | None, ...], int] = {}
    by_ip: dict[tuple[str | None, ...], int] = {}
    for s in settlement.settled:
        if s.key not in settlement.keys:
            names, bits = ((s.ip,), by_ip) if s.ip is not None else ((s.user, s.client_id), by_pair)
            bits[names] = bits.get(names, 0) | 1 << MODEL_KEYS.index(s.key)
    settled: dict[str, Any] = {}
    for on, bits in ((("user", "client_id"), by_pair), (("ip",), by_ip)):
        if not bits:
            continue
        column = "_settled_" + on[-1]
        table = pa.table(
            {
                **{c: pa.array([names[i] for names in bits], pa.string()) for i, c in enumerate(on)},
                column: pa.array(list(bits.values()), pa.int32()),
            }
        )
        df = df.join(F.broadcast(df.sparkSession.createDataFrame(table)), list(on), "left")
        for index, key in enumerate(MODEL_KEYS):
            if any(b >> index & 1 for b in bits.values()):
                settled[key] = F.coalesce(F.col(column), F.lit(0)).bitwiseAND(1 << index) != 0
    return df, settled


def _resolution(traffic: Any, rows: Sequence[QuotaRow]) -> tuple[Any, dict[str, tuple[Any, Any, Any, Any, Any]]]:
    """``traffic`` joined with the quotas ``rows`` set, and per key in ``MODEL_KEYS`` the columns of the quota-id
    each row's usage of it resolves to: level (0 = unlimited), limit, qu, qc, qip."""
    from pyspark.sql import functions as F

    spark = traffic.sparkSession
    tables = _tables(spark, rows)
    consts = _constants(rows)
    df = traffic
    for name, on in (("pair", ["user", "client_id"]), ("user", ["user"]), ("client", ["client_id"]), ("ip", ["ip"])):
        if tables[name] is not None:
            df = df.join(F.broadcast(tables[name]), on, "left")
    present = set(df.columns)

    def cand(level: int, key: str) -> Any:
        name = f"l{level}_{key}"
        if name in present:
            return F.col(name)
        if (level, key) in consts:
            return F.lit(consts[(level, key)])
        return None

    # Level first, as its own column (so it is computed once per row), then limit and quota-id parts from it.
    cands_by_key = {
        key: [
            (lv, c) for lv in (range(1, 9) if key in CLIENT_MODEL_KEYS else (1, 2)) if (c := cand(lv, key)) is not None
        ]
        for key in MODEL_KEYS
    }
    df = df.withColumns({f"lv_{k}": _level(cands_by_key[k], k in CLIENT_MODEL_KEYS) for k in MODEL_KEYS})
    df = df.withColumns({f"h_{c}": F.xxhash64(c) for c in NAME_COLUMNS})
    empty = F.xxhash64(F.lit(""))  # the "" of levels 7-8 (and 3, 6) hashes as an empty name would
    quota_ids: dict[str, tuple[Any, Any, Any, Any, Any]] = {}
    for key in MODEL_KEYS:
        level = F.col(f"lv_{key}")
        limit = F.lit(None).cast("double")
        for lv, c in reversed(cands_by_key[key]):
            limit = F.when(level == lv, c).otherwise(limit)
        if key in CLIENT_MODEL_KEYS:
            qu = F.when(level.between(1, 6), F.col("h_user")).when(level > 0, empty)
            qc = F.when(level.isin(3, 6), empty).when(level > 0, F.col("h_client_id"))
            qip = F.lit(None)
        else:
            qu = qc = F.lit(None)
            qip = F.when(level > 0, F.col("h_ip"))
        quota_ids[key] = (level, limit, qu, qc, qip)
    return df, quota_ids


def _level(cands: list[tuple[int, Any]], client_key: bool = True) -> Any:
    """The level (0 = unlimited) whose limit applies.

    Names that are set resolve to the first level with a limit. Empty names follow the broker's two-phase
    resolution when :mod:`kquotactl.core.precedence` models it (``BROKER_EXACT_EMPTY_NAMES``): an empty user only
    reaches levels 7 and 8 (and nothing when users/<default> is the first of levels 4-6 to set the key), an
    empty client-id only levels 3 and 6 (and only when one of levels 2, 3, 5, 6 sets the key), both empty
    nothing.
    """
    from pyspark.sql import functions as F

    if not cands:
        return F.lit(0)
    cols = dict(cands)

    def has(lv: int) -> Any:
        return cols[lv].isNotNull() if lv in cols else F.lit(False)

    def first(levels: Sequence[int]) -> Any:
        return F.coalesce(*[F.when(has(lv), F.lit(lv)) for lv in levels if lv in cols], F.lit(0))

    level = first([lv for lv, _ in cands])
    if client_key and BROKER_EXACT_EMPTY_NAMES:
        ue, ce = F.col("user") == "", F.col("client_id") == ""
        level = (
            F.when(ue & ce, F.lit(0))
            .when(ue, F.when(~has(4) & ~has(5) & has(6), F.lit(0)).otherwise(first([7, 8])))
            .when(ce, F.when(has(2) | has(3) | has(5) | has(6), first([3, 6])).otherwise(F.lit(0)))
            .otherwise(level)
        )
    return level


def _entry(index: int, level: Any, limit: Any, qu: Any, qc: Any, qip: Any, ucol: str) -> Any:
    from pyspark.sql import functions as F

    return F.struct(
        F.lit(index).cast("byte").alias("k"),
        level.cast("int").alias("level"),
        limit.cast("double").alias("limit"),
        qu.cast("long").alias("qu"),
        qc.cast("long").alias("qc"),
        qip.cast("long").alias("qip"),
        F.col(ucol).alias("u"),
    )


# -- the window sweep ----------------------------------------------------------------------------

QID = ["k", "level", "qu", "qc", "qip"]


#: what :func:`sweep` and :func:`replay` give per (quota-id, interval [p, p + len)): the usage added there, the input
#: rows, the rate, the throttle, and the units of throttled recordings
SWEPT = (
    "k byte, level int, qu long, qc long, qip long, limit double, p long, added long, n long, rate double, "
    "ms long, len long, thr_units long"
)


#: how :func:`replay` groups its rows: a quota-id (a pair's row stands for each of its keys' quota-ids)
REPLAY_GROUP = ("qu", "qc", "qip", "kx", "lvx")


def replay(replayed: Any, window: Window) -> Any:
    """Per (quota-id, sample with usage): what :func:`kquotactl.impact.replay.replay_quota_id` gives, run on each
    quota-id's rows (the one replay both engines share, so executors need kquotactl: the ``--py-files`` zip).
    ``replayed``: :func:`replay_rows`' rows (limited usage only). The rows go to Python a partition at a time, each
    quota-id's together and in time order (``mapInArrow`` over a partition sorted by quota-id: a per-group call
    would cost a round trip per quota-id, and there are as many quota-ids as clients)."""
    return (  # one shuffle: a quota-id's rows summed per millisecond in the partition
        replayed.repartition(*REPLAY_GROUP)
        .sortWithinPartitions(*REPLAY_GROUP, "ms")
        .mapInArrow(_replay_partition(window), SWEPT)
    )


def _as_replay_rows(usage: Any) -> Any:
    """:func:`resolved_usage`'s rows with a limit as :func:`replay_rows` spells them: one row per (request, key)."""
    from pyspark.sql import functions as F

    limited = usage.where(F.col("level") > 0)
    per_key = []
    for i in range(len(MODEL_KEYS)):
        mine = F.col("k") == i
        per_key += [
            F.when(mine, F.col("level")).otherwise(F.lit(0)).cast("int").alias(f"lv{i}"),
            F.when(mine, F.col("limit")).cast("double").alias(f"lim{i}"),
            F.when(mine, F.col("u")).otherwise(F.lit(0)).cast("long").alias(f"u{i}"),
        ]
    return limited.select("ms", F.col("k").alias("kx"), F.col("level").alias("lvx"), "qu", "qc", "qip", *per_key)


#: How many input rows :func:`_whole_groups` gathers before the column-wise replay runs on them.
REPLAY_BATCH_ROWS = 262_144


def _whole_groups(batches: Any, group_cols: Sequence[str]) -> Iterator[tuple[Any, Any]]:
    """A partition's Arrow batches (sorted by ``group_cols``) as tables of whole groups, each at least
    :data:`REPLAY_BATCH_ROWS` rows but the last, with each row's group number (dense from 0, per table); a group
    spanning batches is carried into the next table."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    pending: list[Any] = []
    rows = 0

    def numbered(table: Any) -> Any:
        n = table.num_rows
        if not n:
            return np.zeros(0, dtype=np.int64)
        change = np.zeros(n - 1, dtype=bool)
        for name in group_cols:  # compared by Arrow (no Python object per name); null equals null only
            col = table.column(name)
            after, before = col.slice(1), col.slice(0, n - 1)
            differs = pc.fill_null(pc.not_equal(after, before), True)
            change |= np.asarray(pc.and_(differs, pc.invert(pc.and_(pc.is_null(after), pc.is_null(before)))))
        return np.r_[0, np.cumsum(change)]

    for b in batches:
        if not b.num_rows:
            continue
        pending.append(b)
        rows += b.num_rows
        if rows < REPLAY_BATCH_ROWS:
            continue
        table = pa.Table.from_batches(pending).combine_chunks()
        group = numbered(table)
        cut = int(np.searchsorted(group, group[-1]))  # the last group may go on in the next batch
        if cut:
            yield table.slice(0, cut), group[:cut]
            rest = table.slice(cut)
            pending, rows = rest.to_batches(), rest.num_rows
    if rows:
        table = pa.Table.from_batches(pending).combine_chunks()
        yield table, numbered(table)


def _replay_partition(window: Window) -> Callable[[Any], Any]:
    """The Arrow function of :func:`replay` (a closure over the window, pickled to the executors): a partition's
    rows, sorted by quota-id (:data:`REPLAY_GROUP`) then time, replayed column-wise
    (:func:`kquotactl.impact.columnrate.replay_groups`, :func:`~kquotactl.impact.replay.replay_quota_id`'s outcomes
    bit for bit), a key at a time: a key's rows are those with its usage (``u{i}``), its quota-id the group's
    names with the key and its level (``lv{i}``)."""

    def go(batches: Any) -> Any:
        import numpy as np
        import pyarrow as pa

        from kquotactl.impact.columnrate import replay_groups, runs

        names = ("k", "level", "qu", "qc", "qip", "limit", "p", "added", "n", "rate", "ms", "len", "thr_units")
        long, double = pa.int64(), pa.float64()
        types = (pa.int8(), pa.int32(), long, long, long, double, long, long, long, double, long, long, long)
        for rows, row_group in _whole_groups(batches, REPLAY_GROUP):
            ms = np.asarray(rows.column("ms"))
            for k, key in enumerate(MODEL_KEYS):
                units = np.asarray(rows.column(f"u{k}"))
                chosen = np.flatnonzero(units > 0)
                if not len(chosen):
                    continue
                # one recording per (quota-id, millisecond): the units summed, the input rows counted
                starts = runs(row_group[chosen], ms[chosen])
                firsts = chosen[starts]
                group, at_ms = row_group[firsts], ms[firsts]
                summed = np.add.reduceat(units[chosen], starts)
                counted = np.diff(np.r_[starts, len(chosen)])
                limits = np.asarray(rows.column(f"lim{k}"))[firsts]
                sample = at_ms // window.sample_ms
                # input rows per (quota-id, sample)
                cut = runs(group, sample)
                low = int(sample.min())
                span = int(sample.max()) - low + 1
                at = group[cut] * span + (sample[cut] - low)
                counts = np.add.reduceat(counted, cut)
                got = replay_groups(group, at_ms, summed, key, limits, window)
                first_row = firsts[np.searchsorted(group, got.group)]  # each outcome's quota-id's first row
                here = np.searchsorted(at, got.group * span + (got.sample - low))
                ident = rows.take(pa.array(first_row))
                values = (
                    np.full(len(got.group), k, dtype=np.int8),
                    ident.column(f"lv{k}").combine_chunks(),
                    *(ident.column(c).combine_chunks() for c in ("qu", "qc", "qip")),
                    ident.column(f"lim{k}").combine_chunks(),
                    got.sample,
                    got.units,
                    counts[here],
                    got.max_rate,
                    got.throttle_ms,
                    np.ones(len(got.group), dtype=np.int64),
                    got.units_throttled,
                )
                yield pa.RecordBatch.from_arrays(
                    [
                        (v if isinstance(v, pa.Array) else pa.array(v)).cast(t)
                        for v, t in zip(values, types, strict=True)
                    ],
                    names,
                )

    return go


def throttle_rows(usage: Any, window: Window, last: int) -> Any:
    """The throttle per quota-id and sample: the brokers' own windowed rates (Prometheus input) swept, else each
    quota-id's recordings replayed through Kafka's ``Rate``."""
    return sweep(usage, window, last) if window.windowed else replay(_as_replay_rows(usage), window)


def sweep(usage: Any, window: Window, last: int, one_shuffle: bool = True) -> Any:
    """Windowed input: per event, the window sum on [p, end), its rate and throttle (``end`` clipped to the last
    sample + 1).

    ``one_shuffle``: hash-partition the usage rows by quota-id once; the per-sample aggregation, the window
    and the per-quota-id aggregation then all run inside those partitions (their required clustering is a
    superset of, or equal to, the quota-id), instead of three shuffles.
    """
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    if one_shuffle:
        usage = usage.repartition(*QID)
    per_sample = usage.groupBy(*QID, "limit", "sample").agg(F.sum("u").alias("u"), F.count(F.lit(1)).alias("n"))
    n = window.span
    events = per_sample.select(
        *QID,
        "limit",
        F.inline(
            F.array(
                F.struct(
                    F.col("sample").alias("p"),
                    F.col("u").alias("delta"),
                    F.col("u").alias("added"),
                    F.col("n").alias("n"),
                ),
                F.struct(
                    (F.col("sample") + n).alias("p"),
                    (-F.col("u")).alias("delta"),
                    F.lit(0).cast("long").alias("added"),
                    F.lit(0).cast("long").alias("n"),
                ),
            )
        ),
    )
    w = W.partitionBy(*QID).orderBy("p")
    running = F.sum("delta").over(w.rangeBetween(W.unboundedPreceding, W.currentRow))
    nxt = F.lead("p").over(w)
    stop = F.lit(last + 1)
    denom = F.lit(None).cast("double")
    capped = F.lit(False)
    for index, key in enumerate(MODEL_KEYS):
        denom = F.when(F.col("k") == index, F.lit(window.denominator(key))).otherwise(denom)
        if KEYS[key].throttle_capped:
            capped = capped | (F.col("k") == index)
    ev = events.select(*QID, "limit", "p", "added", "n", running.alias("running"), nxt.alias("nxt")).where(
        F.col("p") <= last
    )
    rate = F.col("running").cast("double") / denom
    # kquotactl.core.throttlemath.quota_throttle_ms, column-wise (limits are > 0 here: replay.check_limits): Math.round
    # (floor, +1 from a fraction of .5, saturating), the cap, then Java's long -> int narrowing.
    x = (rate - F.col("limit")) / F.col("limit") * F.lit(window.window_ms)
    fl = F.floor(x)
    rounded = F.when(x >= F.lit(9.223372036854775807e18), F.lit(2**63 - 1).cast("long")).otherwise(
        fl + F.when(x - fl >= F.lit(0.5), F.lit(1)).otherwise(F.lit(0))
    )
    bounded = F.when(capped, F.least(rounded, F.lit(window.cap_ms).cast("long"))).otherwise(rounded)
    low32 = F.pmod(bounded, F.lit(2**32).cast("long"))
    narrowed = low32 - F.when(low32 >= F.lit(2**31), F.lit(2**32).cast("long")).otherwise(F.lit(0).cast("long"))
    ms = F.when((F.col("level") > 0) & (rate > F.col("limit")), narrowed).otherwise(F.lit(0).cast("long"))
    length = F.least(F.coalesce(F.col("nxt"), stop), stop) - F.col("p")
    return ev.select(
        *QID,
        "limit",
        "p",
        "added",
        "n",
        rate.alias("rate"),
        ms.alias("ms"),
        length.alias("len"),
        F.when(ms > 0, F.col("added")).otherwise(F.lit(0).cast("long")).alias("thr_units"),
    )


def aggregate(swept: Any, window: Window) -> Any:
    from pyspark.sql import functions as F

    thr = F.col("ms") > 0
    return swept.groupBy(*QID).agg(
        (F.sum(F.when(thr, F.col("len")).otherwise(0)) * window.size_s).alias("seconds_throttled"),
        F.max("rate").alias("max_rate"),
        F.sum(F.when(thr, F.col("ms") * F.col("len")).otherwise(0)).alias("total_throttle_ms"),
        F.max(F.when(thr, F.col("ms")).otherwise(0)).alias("max_throttle_ms"),
        F.sum("n").alias("rows"),
        F.sum("added").alias("units"),
        F.sum("thr_units").alias("units_throttled"),
    )


def bounds(traffic: Any) -> tuple[int, int | None, int | None, dict[str, tuple[int, int]]]:
    """The rows, the first and last sample, and per key in ``MODEL_KEYS`` the rows with its usage and that usage
    summed, in one pass."""
    from pyspark.sql import functions as F

    columns = sorted({USAGE[k].column for k in MODEL_KEYS})
    figures = []
    for c in columns:
        u = F.col("u_" + c)
        figures += [F.count(F.when(u > 0, 1)).alias(f"r_{c}"), F.sum(F.when(u > 0, u)).alias(f"s_{c}")]
    r = traffic.agg(
        F.count(F.lit(1)).alias("n"), F.min("sample").alias("lo"), F.max("sample").alias("hi"), *figures
    ).first()
    used = {k: (int(r[f"r_{USAGE[k].column}"]), int(r[f"s_{USAGE[k].column}"] or 0)) for k in MODEL_KEYS}
    return int(r["n"]), r["lo"], r["hi"], used


def _unlimited(
    table: list[dict[str, Any]], used: dict[str, tuple[int, int]], settled: Sequence[Settled]
) -> list[dict[str, Any]]:
    """:func:`aggregate`'s rows for the usage with no limit (one per key, level 0), as the totals less the limited
    usage :func:`replay` replayed (it is given only that) and the ``settled`` quota-ids' usage."""
    limited = {k: [0, 0] for k in MODEL_KEYS}
    for r in table:
        limited[MODEL_KEYS[r["k"]]][0] += r["rows"]
        limited[MODEL_KEYS[r["k"]]][1] += r["units"]
    for s in settled:
        limited[s.key][0] += s.rows
        limited[s.key][1] += s.units
    out = []
    for index, key in enumerate(MODEL_KEYS):
        rows, units = used[key][0] - limited[key][0], used[key][1] - limited[key][1]
        if rows:
            out.append(
                {
                    "k": index,
                    "level": 0,
                    "qu": None,
                    "qc": None,
                    "qip": None,
                    "seconds_throttled": 0,
                    "max_rate": 0.0,
                    "total_throttle_ms": 0,
                    "max_throttle_ms": 0,
                    "rows": rows,
                    "units": units,
                    "units_throttled": 0,
                }
            )
    return out


def run(
    traffic: Any,
    rows: Sequence[QuotaRow],
    window: Window,
    timeline_top: int = 0,
    settlement: Settlement = NOTHING_SETTLED,
) -> tuple[EngineResult, Timeline, Rates]:
    """Compute the model; with ``timeline_top`` also the throttle intervals of that many top quota-ids and their
    rate on every interval (the local engine's ``timelines``). ``settlement``: what the replay leaves out, its
    outcome taken as given (replayed traffic only: windowed input is swept whole)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    nrows, first, last, used = bounds(traffic)
    if first is None or last is None:  # both None, or neither
        return EngineResult(0, None, None, [], {k: KeyTotals() for k in MODEL_KEYS}), {}, {}
    settlement = NOTHING_SETTLED if window.windowed else settlement  # windowed input is swept whole
    replayed_keys = {r.key for r in rows} - settlement.keys  # empty: every limited usage is settled
    swept = None
    if window.windowed:
        swept = sweep(resolved_usage(traffic, rows), window, int(last))
    elif replayed_keys:
        swept = replay(replay_rows(traffic, rows, settlement), window)
    if timeline_top and swept is not None:
        swept = swept.persist(StorageLevel.MEMORY_AND_DISK)
    table = [] if swept is None else aggregate(swept, window).toArrow().to_pylist()
    if not window.windowed:
        table += _unlimited(table, used, settlement.settled)
    limited = [r for r in table if r["level"] > 0]
    # the replayed rows' names are known when each of their keys is named
    names = _names(traffic, limited, settlement.names if replayed_keys <= settlement.named else None)
    stats: list[QidStats] = []
    hashed: dict[Sid, tuple[Any, ...]] = {}  # quota-id as the report names it -> as the Spark rows spell it
    totals = {k: KeyTotals() for k in MODEL_KEYS}
    for r in table:
        t = totals[MODEL_KEYS[r["k"]]]
        t.rows += r["rows"]
        t.units += r["units"]
        if r["level"] == 0:
            t.rows_unlimited += r["rows"]
            t.units_unlimited += r["units"]
    for s in settlement.settled:
        totals[s.key].rows += s.rows
        totals[s.key].units += s.units
        stats.append(QidStats(s.key, s.level, s.user, s.client_id, s.ip, 0, s.peak, 0, 0))
    for r in limited:
        totals[MODEL_KEYS[r["k"]]].units_throttled += r["units_throttled"]
        qu, qc, qip = (None if r[part] is None else names[(i, r[part])] for i, part in enumerate(QID_PARTS))
        st = QidStats(
            MODEL_KEYS[r["k"]],
            r["level"],
            qu,
            qc,
            qip,
            int(r["seconds_throttled"]),
            float(r["max_rate"]),
            int(r["total_throttle_ms"]),
            int(r["max_throttle_ms"]),
        )
        stats.append(st)
        hashed[(st.key, st.level, qu, qc, qip)] = tuple(r[c] for c in QID)
    result = EngineResult(nrows, int(first), int(last), stats, totals)
    timeline: Timeline = {}
    rates: Rates = {}
    if timeline_top and swept is not None:
        top = sorted((s for s in stats if s.total_throttle_ms > 0), key=lambda s: -s.total_throttle_ms)[:timeline_top]
        if top:
            by_hash = {hashed[sid]: sid for sid in ((s.key, s.level, s.qid_user, s.qid_client, s.qid_ip) for s in top)}
            # the top quota-ids as a small broadcast table, semi-joined null-safely (an or-ed filter of --top 1000
            # quota-ids overflows the planner's stack)
            wanted = swept.sparkSession.createDataFrame(
                list(by_hash), "k byte, level int, qu long, qc long, qip long"
            ).alias("w")
            on = reduce(operator.and_, (F.col(f"s.{c}").eqNullSafe(F.col(f"w.{c}")) for c in QID))
            picked = (
                swept.alias("s")
                .join(F.broadcast(wanted), on, "left_semi")
                .where(F.col("len") > 0)
                .select(*QID, "p", "len", "ms", "rate")
            )
            for r in picked.toArrow().to_pylist():
                sid = by_hash[tuple(r[c] for c in QID)]
                end = r["p"] + r["len"]
                rates.setdefault(sid, []).append((r["p"], end, float(r["rate"])))
                if r["ms"] > 0:
                    timeline.setdefault(sid, []).append((r["p"], end, r["ms"]))
            for intervals in timeline.values():
                intervals.sort()
            for rated in rates.values():
                rated.sort()
        swept.unpersist()
    return result, timeline, rates


def _names(
    traffic: Any, limited: list[dict[str, Any]], known: Sequence[Iterable[str]] | None = None
) -> dict[tuple[int, int], str]:
    """(part index in ``QID_PARTS``, hash) -> the name, for every hash the report holds.

    The names hashed are ``known``'s (per column of ``NAME_COLUMNS``: every name of the rows replayed), else
    the traffic's, in one pass over its name columns; either way their hashes semi-joined with the (small) set of
    wanted hashes. A hash that two different names share would have merged their quota-ids, so it is refused
    rather than reported.
    """
    import pyarrow as pa
    from pyspark.sql import functions as F

    wanted = {(i, r[part]) for r in limited for i, part in enumerate(QID_PARTS) if r[part] is not None}
    if not wanted:
        return {}
    spark = traffic.sparkSession
    wanted_df = spark.createDataFrame(
        pa.table(
            {
                "part": pa.array([i for i, _ in wanted], pa.int8()),
                "h": pa.array([h for _, h in wanted], pa.int64()),
            }
        )
    )
    if known is not None:
        parts = [(i, name) for i, names in enumerate(known) for name in names]
        candidates = spark.createDataFrame(
            pa.table(
                {
                    "part": pa.array([i for i, _ in parts], pa.int8()),
                    "name": pa.array([name for _, name in parts], pa.string()),
                }
            )
        ).select("part", F.xxhash64("name").alias("h"), "name")
    else:  # the distinct names first (one aggregation of the rows), then only those hashed and looked up
        candidates = (
            traffic.select(*NAME_COLUMNS)
            .distinct()
            .select(
                F.inline(
                    F.array(
                        *[
                            F.struct(
                                F.lit(i).cast("byte").alias("part"), F.xxhash64(c).alias("h"), F.col(c).alias("name")
                            )
                            for i, c in enumerate(NAME_COLUMNS)
                        ]
                    )
                )
            )
        )
    found = candidates.join(F.broadcast(wanted_df), ["part", "h"], "left_semi").distinct().toArrow().to_pylist()
    # Levels 3, 6, 7 and 8 put an empty name in the quota-id whether or not any row has one.
    empty = spark.range(1).select(F.xxhash64(F.lit("")).alias("h")).first()["h"]
    names: dict[tuple[int, int], str] = {(i, empty): "" for i in range(len(NAME_COLUMNS))}
    if known is not None and not wanted <= {(r["part"], r["h"]) for r in found} | set(names):
        return _names(traffic, limited)  # (not all: look in the traffic)
    for r in found:
        ident = (r["part"], r["h"])
        seen = names.get(ident)
        if seen is not None and seen != r["name"]:
            raise UsageError(
                f"the {NAME_COLUMNS[r['part']]} names {seen!r} and {r['name']!r} share a 64-bit hash, so the"
                " Spark engine cannot tell their quota-ids apart; run this traffic with --engine local"
            )
        names[ident] = r["name"]
    return names


# -- the topic-threshold model (kquotactl.impact.topic): cells here, the sequential replay on the driver -----------


def _produce(traffic: Any) -> Any:
    from pyspark.sql import functions as F

    u = F.col("u_" + USAGE[PRODUCE_KEY].column)
    return traffic.where((u > 0) & F.col("t_us").isNotNull()).select("sample", "topic", "t_us", u.alias("u"))


def topic_samples(traffic: Any) -> dict[tuple[int, str], int]:
    """Produce bytes per (sample, topic), as ``local.topic_usage`` counts them."""
    from pyspark.sql import functions as F

    rows = _produce(traffic).groupBy("sample", "topic").agg(F.sum("u").alias("u")).toArrow().to_pylist()
    return {(r["sample"], r["topic"]): r["u"] for r in rows}


def topic_cells(traffic: Any, explicit: Iterable[str]) -> tuple[list[Cell], dict[str, int]]:
    """Produce bytes per :data:`~kquotactl.impact.topic.Cell` and each topic's first produce (µs), as
    ``local.topic_cells`` finds them: the per-row arithmetic in Spark, only the cells collected."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    explicit = sorted(explicit)
    prod = _produce(traffic)
    firsts = prod.groupBy("topic").agg(F.min("t_us").alias("c")).toArrow().to_pylist()
    created = {r["topic"]: r["c"] for r in firsts}
    if not created:
        return [], {}
    start = min(created.values())
    creations = implicit_creations(created, explicit)
    spark = traffic.sparkSession
    ctab = spark.createDataFrame(
        pa.table({"topic": pa.array(list(created), pa.string()), "c": pa.array(list(created.values()), pa.int64())})
    )
    # [creations[i-1], creations[i]): i implicit topics exist
    itab = spark.createDataFrame(
        pa.table(
            {
                "lo": pa.array(creations, pa.int64()),
                "hi": pa.array([*creations[1:], None], pa.int64()),
                "i": pa.array(range(1, len(creations) + 1), pa.int64()),
            }
        )
    )
    per_t = (
        prod.join(F.broadcast(ctab), "topic")
        .groupBy("topic", "c", "t_us")
        .agg(F.sum("u").alias("b"), F.count(F.lit(1)).alias("n"))
    )
    inside = (F.col("t_us") >= F.col("lo")) & (F.col("hi").isNull() | (F.col("t_us") < F.col("hi")))
    is_explicit = F.col("topic").isin(explicit) if explicit else F.lit(False)
    cells = (
        per_t.join(F.broadcast(itab), inside, "left")
        .select(
            "topic",
            F.expr(f"(t_us - {start}L) div {TICK_US}L").alias("kb"),  # both >= 0: div truncates = floors
            F.expr(f"(t_us - c) div {TICK_US}L").alias("kt"),
            F.when(is_explicit, F.lit(0).cast("long")).otherwise(F.coalesce(F.col("i"), F.lit(0))).alias("m"),
            "b",
            "n",
        )
        .groupBy("topic", "kb", "kt", "m")
        .agg(F.sum("b").alias("b"), F.sum("n").alias("n"))
    )
    return [(r["topic"], r["kb"], r["kt"], r["m"], r["b"], r["n"]) for r in cells.toArrow().to_pylist()], created


def topic_client_throttled(traffic: Any, rows: Sequence[QuotaRow], window: Window, last: int | None) -> dict[str, int]:
    """Per topic, the produce bytes in a throttled sample of their ``producer_byte_rate`` quota-id (what
    ``local.topic_usage`` counts from the local timeline)."""
    from pyspark.sql import functions as F

    if last is None:
        return {}
    key = MODEL_KEYS.index(PRODUCE_KEY)
    usage = resolved_usage(traffic, rows, carry=("topic",)).where((F.col("k") == key) & (F.col("level") > 0))
    swept = throttle_rows(usage, window, last).where((F.col("ms") > 0) & (F.col("len") > 0))
    throttled = swept.select(
        "level", "qu", "qc", F.explode(F.sequence(F.col("p"), F.col("p") + F.col("len") - 1)).alias("sample")
    )
    got = usage.join(throttled, ["level", "qu", "qc", "sample"]).groupBy("topic").agg(F.sum("u").alias("u"))
    return {r["topic"]: r["u"] for r in got.toArrow().to_pylist()}


# -- recommend: each quota-id's rate per sample, and its distribution ----------------------------------------------


def traffic_frame(
    spark: Any, paths: Sequence[str], window: Window, input_format: str, per_broker: bool
) -> tuple[Any, LogStats | None]:
    """The traffic of several inputs as one :func:`engine_frame` DataFrame: tables, or request logs (with
    ``per_broker``, each input one broker's, named by its path in a ``broker`` column); what the logs skipped."""
    from pyspark.sql import functions as F

    if input_format == "table":
        frames = [read_traffic(spark, p, window, checked=True) for p in paths]
        stats = None
    else:
        groups = [[p] for p in paths] if per_broker else [list(paths)]
        frames, read = [], []
        for group in groups:
            frame, st = read_request_log(spark, group, window)
            frames.append(frame.withColumn(BROKER_COLUMN, F.lit(group[0])) if per_broker else frame)
            read.append(st)
        stats = LogStats.total(read)
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames), stats


def sample_bounds(traffic: Any) -> tuple[int, int, int]:
    """The first and last sample and the row count of :func:`engine_frame`'s DataFrame (0, 0, 0 when empty)."""
    from pyspark.sql import functions as F

    row = traffic.agg(F.min("sample"), F.max("sample"), F.count("sample")).collect()[0]
    return (int(row[0]), int(row[1]), int(row[2])) if row[2] else (0, 0, 0)


#: the figures of :class:`kquotactl.core.recommend.Distribution` in a row :func:`recommend_distributions` collects
#: (the percentiles as one array, in ``qs`` order), after the group's identity and the key's index
DISTRIBUTION_FIGURES = (
    "k byte, samples long, peak double, total double, ps array<double>, over array<long>, rows long, units long"
)
#: a group's identity: its names and the broker
GROUP_COLUMNS = ("gu", "gc", "gip", BROKER_COLUMN)


def recommend_distributions(
    traffic: Any, level: str, window: Window, keys: Sequence[str], percentile: float
) -> tuple[dict[tuple[Any, str], dict[str, Any]], Volumes]:
    """What :func:`kquotactl.impact.recommend.distributions` computes, on Spark: per key, the usage summed per
    (group, broker, ms), each group's rows replayed in time order through the same
    :func:`~kquotactl.impact.replay.replay_quota_id` (``mapInArrow`` over partitions sorted by group), and the
    distribution built as :meth:`~kquotactl.core.recommend.Distribution.of` builds it
    (:func:`~kquotactl.impact.recommend.column_distributions`); only one row per group and key comes back. Besides
    the distributions, each one's rows and units (what :func:`~kquotactl.impact.recommend.settled_quota_ids` needs).
    ``traffic``: :func:`engine_frame`'s DataFrame (with a ``broker`` column, or one broker's)."""
    from kquotactl.core.recommend import REPORTED, Distribution, GroupId, Level

    qs = sorted({*REPORTED, percentile})
    if not keys:
        return {}, {}
    out: dict[tuple[Any, str], dict[str, Any]] = {}
    volumes: Volumes = {}
    usage, group_cols = _group_rows(traffic, Level(level), keys)
    for r in _sorted_distributions(usage, group_cols, window, qs, keys):
        group, key, broker = GroupId(r["gu"], r["gc"], r["gip"]), keys[r["k"]], r.get("broker", "")
        out.setdefault((group, key), {})[broker] = Distribution(
            r["samples"],
            dict(zip(qs, r["ps"], strict=True)),
            r["peak"],
            dict(zip(qs, r["over"], strict=True)),
            r["total"],
        )
        volumes[(group, key, broker)] = (r["rows"], r["units"])
    # in one order whatever the partitioning (the local engine's: by group, key, broker)
    ordered = {gk: dict(sorted(out[gk].items())) for gk in sorted(out, key=lambda gk: (gk[0].sort_key(), gk[1]))}
    return ordered, volumes


def _group_rows(traffic: Any, level: Any, keys: Sequence[str]) -> tuple[Any, tuple[str, ...]]:
    """The rows of ``traffic`` as its groups at ``level`` see them, in one pass: a row's client keys share one
    group (its user and/or client-id), so they share one row, ``u0``, ``u1``... its usage of each key in ``keys``
    (0 for the other scope's); the connection keys' group is the ip, a second row where the row has such usage.
    Each row holds :data:`GROUP_COLUMNS` (no broker column when the traffic has none), ms and the usage columns.
    One row per request, not per (request, key): the shuffle and the sort after it move a third as many rows."""
    from pyspark.sql import functions as F

    from kquotactl.core.keys import KeyScope
    from kquotactl.core.recommend import Level

    none = F.lit(None).cast("string")
    zero = F.lit(0).cast("long")
    scopes = {
        KeyScope.CLIENT: [
            none if level is Level.CLIENT else F.col("user"),
            none if level is Level.USER else F.col("client_id"),
            none,
        ],
        KeyScope.IP: [none, none, F.col("ip")],
    }
    structs = []
    for scope, names in scopes.items():
        mine = [i for i, key in enumerate(keys) if KEYS[key].kind is scope]
        if not mine:
            continue
        units = [F.col("u_" + USAGE[key].column) if i in mine else zero for i, key in enumerate(keys)]
        any_use = reduce(operator.or_, (F.col("u_" + USAGE[keys[i]].column) > 0 for i in mine))
        structs.append(
            F.when(
                any_use,
                F.struct(
                    *(c.alias(n) for c, n in zip(names, ("gu", "gc", "gip"), strict=True)),
                    *(u.alias(f"u{i}") for i, u in enumerate(units)),
                ),
            )
        )
    broker = [BROKER_COLUMN] if BROKER_COLUMN in traffic.columns else []
    group_cols = tuple(c for c in GROUP_COLUMNS if c != BROKER_COLUMN or broker)
    rows = traffic.select(*broker, "ms", F.inline(F.array(*structs)))
    return rows.where(F.col("gu").isNotNull() | F.col("gc").isNotNull() | F.col("gip").isNotNull()), group_cols


def _sorted_distributions(
    usage: Any, group_cols: Sequence[str], window: Window, qs: Sequence[float], keys: Sequence[str]
) -> Any:
    """One shuffle: ``usage`` (``group_cols``, ms, u0...) partitioned by group, each partition sorted by group then
    time, each group's distribution per key computed in Python (:func:`_distribution_partition`); the rows
    collected."""
    ident = ", ".join(f"{c} {usage.schema[c].dataType.simpleString()}" for c in group_cols)
    return (
        usage.repartition(*group_cols)
        .sortWithinPartitions(*group_cols, "ms")
        .mapInArrow(_distribution_partition(window, qs, group_cols, keys), f"{ident}, {DISTRIBUTION_FIGURES}")
        .toArrow()
        .to_pylist()
    )


def replay_per_broker(
    traffic: Any, index: QuotaIndex, window: Window, settled: Mapping[str, Settlement] | None = None
) -> dict[str, Any]:
    """The ``impact`` report of ``index`` on :func:`engine_frame`'s DataFrame, each broker's rows replayed on their
    own (a ``broker`` column) and the reports merged (:func:`~kquotactl.impact.replay.merge_broker_reports`), as the
    local engine does. ``settled``: per broker (``""``: the traffic's only one), what its replay leaves out
    (:func:`~kquotactl.impact.recommend.settled_quota_ids`)."""
    from pyspark.sql import functions as F

    from kquotactl.impact.replay import merge_broker_reports, quota_table, report

    rows = quota_table(index)
    known = settled or {}

    def replayed(frame: Any, broker: str) -> dict[str, Any]:
        return report(run(frame, rows, window, settlement=known.get(broker, NOTHING_SETTLED))[0], index, window)

    if BROKER_COLUMN not in traffic.columns:
        return replayed(traffic, "")
    brokers = sorted(r[0] for r in traffic.select(BROKER_COLUMN).distinct().collect())
    return merge_broker_reports({b: replayed(traffic.where(F.col(BROKER_COLUMN) == b), b) for b in brokers})


def _distribution_partition(
    window: Window, qs: Sequence[float], group_cols: Sequence[str], keys: Sequence[str]
) -> Callable[[Any], Any]:
    """The Arrow function of :func:`recommend_distributions`: a partition's rows sorted by group (``group_cols``)
    then time, ``u{i}`` the usage of ``keys[i]``; each group's rates of each key replayed column-wise
    (:func:`kquotactl.impact.columnrate.replay_groups`, no limit), its
    :class:`~kquotactl.core.recommend.Distribution` one output row after the group's columns and the key's index."""
    key_of = list(keys)

    def go(batches: Any) -> Any:
        import math

        import numpy as np
        import pyarrow as pa

        from kquotactl.impact.columnrate import per_ms, replay_groups
        from kquotactl.impact.recommend import column_distributions

        figures = [
            ("k", pa.int8()),
            ("samples", pa.int64()),
            ("peak", pa.float64()),
            ("total", pa.float64()),
            ("ps", pa.list_(pa.float64())),
            ("over", pa.list_(pa.int64())),
            ("rows", pa.int64()),
            ("units", pa.int64()),
        ]
        width = len(qs)
        for table, group in _whole_groups(batches, group_cols):
            schema = pa.schema([table.schema.field(c) for c in group_cols] + figures)
            ms = np.asarray(table.column("ms"))
            for k, key in enumerate(key_of):
                units = np.asarray(table.column(f"u{k}"))
                chosen = np.flatnonzero(units > 0)
                if not len(chosen):
                    continue
                got = replay_groups(
                    *per_ms(group[chosen], ms[chosen], units[chosen], in_order=True), key, math.inf, window
                )
                d = column_distributions(got.group, got.max_rate, qs)
                firsts = np.flatnonzero(np.r_[True, got.group[1:] != got.group[:-1]])
                starts = np.searchsorted(group[chosen], got.group[firsts])  # each group's first row with the key
                first_rows = chosen[starts]
                ident = table.select(list(group_cols)).take(pa.array(first_rows))
                offsets = pa.array(np.arange(len(firsts) + 1, dtype=np.int32) * width)
                yield pa.RecordBatch.from_arrays(
                    [
                        *(column.combine_chunks() for column in ident.columns),
                        pa.array(np.full(len(firsts), k, dtype=np.int8)),
                        pa.array(d["samples"], pa.int64()),
                        pa.array(d["peak"], pa.float64()),
                        pa.array(d["total"], pa.float64()),
                        pa.ListArray.from_arrays(offsets, pa.array(d["ps"].ravel(), pa.float64())),
                        pa.ListArray.from_arrays(offsets, pa.array(d["over"].ravel(), pa.int64())),
                        pa.array(np.diff(np.r_[starts, len(chosen)]), pa.int64()),
                        pa.array(np.add.reduceat(units[chosen], starts), pa.int64()),
                    ],
                    schema=schema,
                )

    return go
