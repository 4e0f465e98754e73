"""Pick an engine, run the model on a traffic input, and build the report (and a comparison) from it.

The command layer calls :func:`analyze`; the engines stay ignorant of each other and of rendering.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kquotactl.core.errors import UsageError
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact.readers import detect_format, request_log_files
from kquotactl.impact.replay import (
    BROKER_COLUMN,
    CLIENT_MODEL_KEYS,
    IP_MODEL_KEYS,
    Rates,
    Sid,
    Timeline,
    Window,
    check_limits,
    merge_broker_reports,
    quota_table,
    report,
)
from kquotactl.impact.requestlog import FORMAT as REQUEST_LOG
from kquotactl.impact.requestlog import LogStats

AUTO_LOCAL_MAX_BYTES = 32 * 1024 * 1024  # inputs below this run on the local engine with --engine auto


@dataclass
class Analysis:
    report: dict[str, Any]
    timeline: Timeline = field(default_factory=dict)
    first_sample: int | None = None
    pairs: list[tuple[str, str]] = field(default_factory=list)  # distinct (user, client-id), for --compare
    ips: list[str] = field(default_factory=list)
    rates: Rates = field(default_factory=dict)  # the timeline's quota-ids


TABLE = "table"  # --input-format: Parquet/CSV/JSON lines traffic tables (readers.detect_format)
INPUT_FORMATS = (TABLE, REQUEST_LOG)


def choose_engine(engine: str, path: str, input_format: str = TABLE, paths: Sequence[str] = ()) -> str:
    if engine != "auto":
        return engine
    if "://" in path or any("://" in p for p in paths):
        return "spark"
    if input_format == REQUEST_LOG:
        files = request_log_files(paths or (path,))
    else:
        _, files = detect_format(path)
    return "local" if sum(f.stat().st_size for f in files) <= AUTO_LOCAL_MAX_BYTES else "spark"


class Runner:
    """Runs the model on one input with one engine; keeps the Spark session and input across quota sets."""

    def __init__(
        self,
        path: str,
        engine: str,
        window: Window,
        master: str | None = "local[*]",
        conf: Mapping[str, str] | None = None,
        status: Callable[[str], None] | None = None,
        input_format: str = TABLE,
        paths: Sequence[str] = (),
        table: Any = None,
        per_broker: bool = False,
    ) -> None:
        """``table``: the traffic as an in-memory pyarrow table instead of files (``path`` then only names it), e.g.
        rebuilt from the brokers' sensors; with a :data:`~kquotactl.impact.replay.BROKER_COLUMN`, each broker's rows
        are replayed on their own (quotas are per broker) and the reports merged. ``per_broker``: each of ``paths``
        is one broker's request logs (``input_format`` kafka-request-log), replayed on its own in the same way (the
        broker named by its path)."""
        if input_format not in INPUT_FORMATS:
            raise UsageError(f"unknown input format {input_format!r}: use {' or '.join(INPUT_FORMATS)}")
        self.path = path
        self.paths = tuple(paths) or (path,)
        self.input_format = input_format
        self.log_stats: LogStats | None = None  # what reading a request log skipped
        self.table = table
        if table is None:
            self.engine = choose_engine(engine, path, input_format, self.paths)
        elif engine == "auto":
            self.engine = "local" if table.nbytes <= AUTO_LOCAL_MAX_BYTES else "spark"
        else:
            self.engine = engine
        self.window = window
        self.master = master
        self.conf = dict(conf or {})
        self.status = status or (lambda _m: None)
        self._columns: dict[str, list[Any]] | None = None
        self._spark: Any = None
        self._traffic: Any = None
        self._full_timeline: Timeline = {}
        self._bounds: tuple[int | None, int | None] = (None, None)
        self._per_broker: dict[str, Runner] = {}
        if table is not None and BROKER_COLUMN in table.column_names:
            import pyarrow.compute as pc

            for b in sorted(set(table.column(BROKER_COLUMN).to_pylist())):
                rows = table.filter(pc.equal(table.column(BROKER_COLUMN), b)).drop_columns([BROKER_COLUMN])
                self._per_broker[b] = Runner(
                    f"{path} (broker {b})", self.engine, window, master, conf, status, table=rows
                )
        elif per_broker and input_format == REQUEST_LOG:
            for p in self.paths:
                self._per_broker[p] = Runner(p, self.engine, window, master, conf, status, REQUEST_LOG, (p,))

    def analyze(self, index: QuotaIndex, top: int = 0, distinct: bool = False) -> Analysis:
        check_limits(quota_table(index))
        if self._per_broker:
            merged = _merge({b: r.analyze(index, top, distinct) for b, r in self._per_broker.items()}, top)
            stats = [r.log_stats for r in self._per_broker.values() if r.log_stats is not None]
            if stats:
                self.log_stats = LogStats.total(stats)
                merged.report["summary"]["request_log"] = self.log_stats.as_dict()
            return merged
        if self.engine == "local":
            a = self._local(index, top, distinct)
        elif self.engine == "spark":
            a = self._spark_run(index, top, distinct)
        else:
            raise UsageError(f"unknown engine {self.engine!r}: use spark, local or auto")
        if self.log_stats is not None:
            a.report["summary"]["request_log"] = self.log_stats.as_dict()
        return a

    def _local(self, index: QuotaIndex, top: int, distinct: bool) -> Analysis:
        from kquotactl.impact import local, readers

        if self._columns is None:
            self.status(f"reading {self.path}")
            if self.table is not None:
                table = self.table
            elif self.input_format == REQUEST_LOG:
                table, self.log_stats = readers.read_request_log(self.paths)
            else:
                table = readers.read_table(self.path)
            self._columns = readers.engine_columns(table, self.window)
        self.status("replaying traffic against the quotas (local engine)")
        result, tl, rates = local.timelines(self._columns, index, self.window)
        self._full_timeline, self._bounds = tl, (result.first_sample, result.last_sample)
        rep = report(result, index, self.window)
        picked = _top_timeline(tl, top)
        a = Analysis(rep, picked, result.first_sample, rates={sid: rates[sid] for sid in picked})
        if distinct:
            cols = self._columns
            a.pairs = sorted(set(zip(cols["user"], cols["client_id"], strict=True)))
            a.ips = sorted({ip for ip, c in zip(cols["ip"], cols["u_connections"], strict=True) if c})
        return a

    def _spark_run(self, index: QuotaIndex, top: int, distinct: bool) -> Analysis:
        from kquotactl.impact import spark

        try:
            return self._spark_analysis(index, top, distinct)
        except Exception as e:  # a Java error: one line naming its cause and Spark's log, no stack trace
            raise spark.failure(e) from None

    def _spark_analysis(self, index: QuotaIndex, top: int, distinct: bool) -> Analysis:
        from kquotactl.impact import spark

        if self._spark is None:
            if self.table is None and self.input_format == TABLE:
                self.status(f"checking {self.path}")
                spark.check_traffic(self.path)  # a bad cell is refused before the JVM starts
            self.status(f"starting Spark ({self.master or 'from spark-submit'})")
            self._spark = spark.session(self.master, self.conf)
            if self.table is not None:
                self._traffic = spark.engine_frame(self._spark.createDataFrame(self.table), self.window)
            elif self.input_format == REQUEST_LOG:
                self.status(f"Spark: parsing the request log {self.path}")
                self._traffic, self.log_stats = spark.read_request_log(self._spark, self.paths, self.window)
            else:
                self._traffic = spark.read_traffic(self._spark, self.path, self.window, checked=True)
        self.status("Spark: resolving and replaying traffic against the quotas")
        result, tl, rates = spark.run(self._traffic, quota_table(index), self.window, timeline_top=top)
        self._bounds = (result.first_sample, result.last_sample)
        a = Analysis(report(result, index, self.window), tl, result.first_sample, rates=rates)
        if distinct:
            self.status("Spark: listing distinct (user, client-id) pairs and ips")
            a.pairs = [
                (r["user"], r["client_id"])
                for r in self._traffic.select("user", "client_id").distinct().toArrow().to_pylist()
            ]
            a.pairs.sort()
            a.ips = sorted(
                r["ip"] for r in self._traffic.where("u_connections > 0").select("ip").distinct().toArrow().to_pylist()
            )
        return a


def _merge(parts: Mapping[str, Analysis], top: int) -> Analysis:
    """Per-broker analyses as one: the reports merged (rows name their broker); a quota-id throttled on several
    brokers keeps, in the timeline and the picture, the broker where it was throttled most."""
    timeline: Timeline = {}
    rates: Rates = {}
    for a in parts.values():
        for sid, intervals in a.timeline.items():
            if sid not in timeline or _throttled_ms(intervals) > _throttled_ms(timeline[sid]):
                timeline[sid] = intervals
                rates[sid] = a.rates.get(sid, [])
    firsts = [a.first_sample for a in parts.values() if a.first_sample is not None]
    picked = _top_timeline(timeline, top)
    return Analysis(
        merge_broker_reports({b: a.report for b, a in parts.items()}),
        picked,
        min(firsts) if firsts else None,
        sorted({p for a in parts.values() for p in a.pairs}),
        sorted({ip for a in parts.values() for ip in a.ips}),
        {sid: rates[sid] for sid in picked},
    )


def _throttled_ms(intervals: Sequence[tuple[int, int, int]]) -> int:
    return sum((e - s) * ms for s, e, ms in intervals)


def topic_threshold(runner: Runner, index: QuotaIndex, cfg: Any) -> dict[str, Any]:
    """The seed-003 topic-threshold model on the same traffic, next to what client quotas would have throttled.

    Runs after :meth:`Runner.analyze`, on its engine and its read traffic. Both engines reduce the traffic to
    the model's cells (or per-sample bytes for the quota-window rates) and run the same sequential replay of
    :mod:`kquotactl.impact.topic` on them: the broker's meter couples every topic, so the replay cannot be split
    by topic, but the cells are few (at most a few per topic per 5-second tick).
    """
    from kquotactl.impact import topic

    first, last = runner._bounds
    if runner.engine == "local":
        from kquotactl.impact import local

        cols = runner._columns
        if cols is None or "topic" not in cols:
            raise UsageError("--model topic-threshold needs a 'topic' column in the traffic")
        by, client = local.topic_usage(cols, index, runner._full_timeline)
        if cfg.rate == topic.ONE_MINUTE_RATE:
            out = topic.replay_one_minute(*local.topic_cells(cols, cfg.explicit), cfg)
        else:
            out = topic.replay_quota_window(by, first or 0, last if last is not None else -1, cfg, runner.window)
    else:
        from kquotactl.impact import spark

        traffic = runner._traffic
        if traffic is None or "topic" not in traffic.columns:
            raise UsageError("--model topic-threshold needs a 'topic' column in the traffic")
        runner.status("Spark: produce bytes per topic in throttled samples of the client quotas")
        client = spark.topic_client_throttled(traffic, quota_table(index), runner.window, last)
        runner.status("Spark: produce bytes per topic, cut where the topic-threshold rule can change")
        if cfg.rate == topic.ONE_MINUTE_RATE:
            out = topic.replay_one_minute(*spark.topic_cells(traffic, cfg.explicit), cfg)
        else:
            out = topic.replay_quota_window(
                spark.topic_samples(traffic), first or 0, last if last is not None else -1, cfg, runner.window
            )
    out["topic_rate"] = cfg.rate
    for row in out["topics"]:
        row["client_quota_throttled_bytes"] = client.get(row["topic"], 0)
    out["client_quota_throttled_bytes"] = sum(client.values())
    return out


def _top_timeline(tl: Mapping[Sid, list[tuple[int, int, int]]], top: int) -> Timeline:
    ranked = sorted(tl.items(), key=lambda kv: -_throttled_ms(kv[1]))
    return dict(ranked[:top])


def compare(new: Analysis, base: Analysis, new_index: QuotaIndex, base_index: QuotaIndex) -> dict[str, Any]:
    """What changes between two quota sets on the same traffic (``new`` is the proposed set)."""
    from kquotactl.impact.output import qid_label

    def throttled(a: Analysis) -> dict[tuple[str, str, str], dict[str, Any]]:
        return {
            (r.get("broker", ""), r["key"], qid_label(r["quota_id"])): r
            for r in a.report["quota_ids"]
            if r["seconds_throttled"] > 0
        }

    tn, tb = throttled(new), throttled(base)

    def brief(r: dict[str, Any]) -> dict[str, Any]:
        keep = ("broker", "key", "quota_id", "level", "entity_path", "limit", "seconds_throttled", "total_throttle_ms")
        return {k: r[k] for k in keep if k in r}

    started = [brief(tn[k]) for k in sorted(set(tn) - set(tb))]
    stopped = [brief(tb[k]) for k in sorted(set(tb) - set(tn))]
    changed = [
        {
            **({"broker": k[0]} if k[0] else {}),
            "key": k[1],
            "quota_id": tn[k]["quota_id"],
            "seconds_throttled": [tb[k]["seconds_throttled"], tn[k]["seconds_throttled"]],
            "total_throttle_ms": [tb[k]["total_throttle_ms"], tn[k]["total_throttle_ms"]],
        }
        for k in sorted(set(tn) & set(tb))
        if (tn[k]["seconds_throttled"], tn[k]["total_throttle_ms"])
        != (tb[k]["seconds_throttled"], tb[k]["total_throttle_ms"])
    ]
    limits = []
    for user, client in new.pairs:
        for key in CLIENT_MODEL_KEYS:
            a, b = base_index.resolve(key, user, client), new_index.resolve(key, user, client)
            if (a.limit, a.level) != (b.limit, b.level):
                limits.append(
                    {
                        "user": user,
                        "client-id": client,
                        "key": key,
                        "before": {"limit": a.limit, "level": a.level, "entity_path": a.entity_path},
                        "after": {"limit": b.limit, "level": b.level, "entity_path": b.entity_path},
                    }
                )
    for ip in new.ips:
        for key in IP_MODEL_KEYS:
            a, b = base_index.resolve_ip(ip, key), new_index.resolve_ip(ip, key)
            if (a.limit, a.level) != (b.limit, b.level):
                limits.append(
                    {
                        "ip": ip,
                        "key": key,
                        "before": {"limit": a.limit, "level": a.level, "entity_path": a.entity_path},
                        "after": {"limit": b.limit, "level": b.level, "entity_path": b.entity_path},
                    }
                )
    sb, sn = base.report["summary"], new.report["summary"]
    return {
        "summary": {
            "throttled_quota_ids": [sb["throttled_quota_ids"], sn["throttled_quota_ids"]],
            "share_of_traffic_throttled": [sb["share_of_traffic_throttled"], sn["share_of_traffic_throttled"]],
            "started": len(started),
            "stopped": len(stopped),
            "changed": len(changed),
            "limit_changes": len(limits),
        },
        "started_throttling": started,
        "stopped_throttling": stopped,
        "throttle_changed": changed,
        "limit_changes": limits,
    }


def input_exists(path: str) -> None:
    if "://" not in path and not Path(path).exists():
        raise UsageError(f"traffic input {path!r} does not exist; give a Parquet/CSV/JSONL file or directory")
