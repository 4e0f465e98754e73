"""``recommend``: limits from observed traffic, as a manifest to review; it writes nothing to a cluster.

The traffic is read as ``impact run`` reads it (a traffic table: Parquet, CSV or JSON lines), each group of the
policy's level replayed through the broker's ``Rate`` (:mod:`kquotactl.impact.recommend`), and the policy applied
by the pure core (:mod:`kquotactl.core.recommend`). The current quotas, when given, are kept wherever the
recommendation says nothing: a recommendation never removes a quota.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import UsageError
from kquotactl.core.keys import KEYS, Number
from kquotactl.core.recommend import Distribution, GroupId, Policy, Recommendation, recommend
from kquotactl.impact.replay import MODEL_KEYS, Window

if TYPE_CHECKING:
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.impact.recommend import Volumes
    from kquotactl.impact.replay import EngineResult
    from kquotactl.impact.spill import RateSpill
    from kquotactl.services.impact import Replay


@dataclass
class Recommended:
    """What :func:`recommend_from_traffic` found: the recommendation, the distributions it rests on, the quotas it
    started from, how many rows of traffic it read, and ``replayed``: the ``impact`` report of the recommended
    quotas on the same traffic (who would have been throttled, how much, how often)."""

    recommendation: Recommendation
    distributions: dict[tuple[GroupId, str], dict[str, Distribution]]
    current: list[QuotaRecord]
    rows: int
    replayed: dict[str, Any]


def recommend_from_traffic(
    source: Replay,
    policy: Policy,
    *,
    current: Sequence[QuotaRecord] = (),
    warn: Callable[[str], None] = lambda _message: None,
) -> Recommended:
    """Read the traffic ``source`` names (the ``impact run`` spec: table files, or request logs, ``per_broker``:
        each input one broker's; the ``local``, ``spark`` or ``auto`` engine, which give identical results), measure
        each quota-id's rate per quota window sample and propose limits under ``policy``, then replay them on the same
        traffic. ``current``: the quotas kept where the traffic says nothing; ``warn`` hears what a request log reader
        skipped. ``source.prometheus``: the brokers' sensors over ``source.span``, already the broker's rates (read on
    the local engine: the range is streamed, not replayed through ``Rate`` again)."""
    from kquotactl.impact.engine import choose_engine

    if source.prometheus is not None:
        return _from_prometheus(source, policy, current, warn)
    paths = list(source.traffic)
    if source.input_format == "table" and len(paths) != 1:
        raise UsageError("a traffic table is one file or directory: give one TRAFFIC (several are request logs)")
    keys = _keys(policy)
    defaults = _default_keys(current)
    engine = choose_engine(source.engine, paths[0], source.input_format, paths)
    if engine == "spark":
        from kquotactl.impact import spark
        from kquotactl.impact.recommend import settled_quota_ids

        source = dataclasses.replace(source, engine="spark")
        try:
            traffic, dists, volumes, span_s, rows = _spark_distributions(source, policy, keys, warn)
            rec = recommend(dists, policy, span_s, defaults)
            index = proposed_index(rec, current)
            # the quota-ids the distributions show never throttled are not replayed again (the same outcome)
            settled = settled_quota_ids(index, dists, volumes, keys)
            replayed = spark.replay_per_broker(traffic, index, source.window, settled)
        except Exception as e:  # a Java error: one line naming its cause and Spark's log
            raise spark.failure(e) from None
        return Recommended(rec, dists, list(current), rows, replayed)
    from kquotactl.impact.recommend import distributions, sample_rates

    window = source.window
    columns = traffic_columns(paths, window, source.input_format, source.per_broker, warn)
    samples = [s for s in columns["sample"] if s is not None]
    span_s = float((max(samples) - min(samples) + 1) * window.size_s) if samples else 0.0
    dists = distributions(sample_rates(columns, policy.level, window, keys), policy.percentile)
    rec = recommend(dists, policy, span_s, defaults)
    return Recommended(rec, dists, list(current), len(samples), replay_recommendation(columns, rec, current, window))


def _from_prometheus(
    source: Replay, policy: Policy, current: Sequence[QuotaRecord], warn: Callable[[str], None]
) -> Recommended:
    """The recommendation from the brokers' sensors in Prometheus, streamed: each slice of the range read in turn
    (:func:`kquotactl.observe.prometheus.traffic_slices`), each sample's rate the sensors' reading
    (:func:`kquotactl.impact.recommend.windowed_sample_rates`), the rates kept in a bounded buffer and spilled to a
    temporary file a group (:class:`kquotactl.impact.spill.RateSpill`, 8 bytes a sample with traffic), each
    group's distribution computed from its file alone; then the range read once more to replay the recommendation
    slice by slice, with the windowed model ``impact run --from-prometheus`` runs, each sample on its own,
    column-wise (:mod:`kquotactl.impact.columnar`)."""
    import pyarrow.compute as pc

    from kquotactl.core.keys import KEYS, KeyScope
    from kquotactl.impact.columnar import run_windowed
    from kquotactl.impact.replay import BROKER_COLUMN, merge_slices
    from kquotactl.impact.spill import RateSpill
    from kquotactl.observe.prometheus import no_readings, traffic_slices

    if source.engine == "spark":
        raise UsageError("the brokers' sensors from Prometheus are read on the local engine, streamed: not on Spark")
    if source.span is None or source.prometheus is None:
        raise UsageError("a Prometheus source needs its range: start, end and step")
    base, span = source.prometheus, source.span
    window = dataclasses.replace(source.window, windowed=True)
    keys = _keys(policy)
    with RateSpill() as spill:
        rows, first, last, skipped = _spill_rates(spill, base, span, policy, window, keys)
        if not rows:
            raise no_readings(base, span[0], span[1])
        for key, n in skipped.items():
            if KEYS[key].kind is not KeyScope.IP:
                warn(
                    f"{key}: {n:,} samples of sensors whose quota-id has no {_level_tags(policy)} (the cluster's "
                    f"quotas there are coarser than the level {policy.level.value}): left out"
                )
        found: dict[tuple[GroupId, str], dict[str, Distribution]] = {}
        for (gk, broker), dist in spill.distributions([policy.percentile]):
            found.setdefault(gk, {})[broker] = dist
    dists = {gk: dict(sorted(found[gk].items())) for gk in sorted(found, key=lambda gk: (gk[0].sort_key(), gk[1]))}
    span_s = last - first + window.size_s
    defaults = _default_keys(current)
    rec = recommend(dists, policy, span_s, defaults)
    index = proposed_index(rec, current)
    merged: dict[str, EngineResult] = {}
    for table in traffic_slices(base, *span, window.size_s):
        for broker in sorted(pc.unique(table.column(BROKER_COLUMN)).to_pylist()):
            result = run_windowed(table.filter(pc.equal(table.column(BROKER_COLUMN), broker)), index, window)
            merged[broker] = merge_slices([merged[broker], result]) if broker in merged else result
    return Recommended(rec, dists, list(current), rows, _merged_report(merged, index, window))


def _spill_rates(
    spill: RateSpill, base: str, span: tuple[float, float, float], policy: Policy, window: Window, keys: Sequence[str]
) -> tuple[int, float, float, dict[str, int]]:
    """Each slice of the range read in turn, its sample rates handed to ``spill`` per ((group, key), broker): the
    rows read, the first and last sample's time, and the samples left out per key (a level finer than the
    sensors)."""
    from kquotactl.impact.recommend import windowed_sample_rates
    from kquotactl.observe.prometheus import traffic_slices

    skipped: dict[str, int] = {}
    rows, first, last = 0, math.inf, -math.inf
    for table in traffic_slices(base, *span, window.size_s):
        rates, skips = windowed_sample_rates(table, policy.level, window, keys)
        for gk, per_broker in rates.items():
            for broker, values in per_broker.items():
                spill.add((gk, broker), values)
        for key, n in skips.items():
            skipped[key] = skipped.get(key, 0) + n
        rows += table.num_rows
        ts = table.column("ts").to_numpy()
        first, last = min(first, float(ts.min())), max(last, float(ts.max()))
        spill.done = (last - span[0]) / max(span[1] - span[0], 1e-9)
    return rows, first, last, skipped


def _keys(policy: Policy) -> list[str]:
    """The keys a recommendation covers, and so the keys whose distributions are computed: the policy's, by
    default every modelled key but a draft one (KIP-124's ``request_rate``, as :func:`recommend` decides), less
    those it keeps."""
    wanted = policy.keys or tuple(k for k in MODEL_KEYS if not KEYS[k].draft)
    return [k for k in wanted if k not in policy.keep and k in MODEL_KEYS]


def _default_keys(current: Sequence[QuotaRecord]) -> set[str]:
    """The keys a current default entity already sets (an exempt user needs its own limit under them)."""
    return {k for r in current if DEFAULT in r.entity.components().values() for k in r.config}


def _level_tags(policy: Policy) -> str:
    from kquotactl.core.recommend import Level

    return {Level.USER: "user", Level.CLIENT: "client-id"}.get(policy.level, "user and client-id")


def traffic_source(
    traffic: Sequence[str],
    input_format: str,
    per_broker: bool,
    engine: str,
    master: str | None,
    confs: Sequence[str],
    window_num: int,
    window_size_seconds: int,
    kafka_version: tuple[int, ...] | None,
    prometheus: str | None = None,
    span: tuple[float, float, float] | None = None,
) -> Replay:
    """The traffic spec :func:`recommend_from_traffic` reads, from ``impact run``'s options (``master``
    ``submit``: left to spark-submit; ``confs``: ``K=V`` Spark settings; ``prometheus`` and its ``span``: the
    brokers' sensors instead of ``traffic``)."""
    from kquotactl.impact.spark import parse_conf
    from kquotactl.services.impact import Replay

    window = Window(window_num, window_size_seconds, kafka_version=kafka_version, windowed=prometheus is not None)
    spark_master = None if master == "submit" else master
    return Replay(window, traffic, prometheus, span, input_format, per_broker, engine, spark_master, parse_conf(confs))


def _spark_distributions(
    source: Replay, policy: Policy, keys: Sequence[str], warn: Callable[[str], None]
) -> tuple[Any, dict[tuple[GroupId, str], dict[str, Distribution]], Volumes, float, int]:
    """The traffic as one Spark frame, read once, and the distributions (and their volumes) computed on it."""
    from kquotactl.impact import spark

    window, paths = source.window, list(source.traffic)
    if source.input_format == "table":
        for p in paths:
            spark.check_traffic(p)  # a bad cell is refused before the JVM starts
    session = spark.session(source.master, dict(source.conf))
    traffic, stats = spark.traffic_frame(session, paths, window, source.input_format, source.per_broker)
    if stats is not None and (skipped := stats.warning()):
        warn(skipped)
    lo, hi, rows = spark.sample_bounds(traffic)
    span_s = float((hi - lo + 1) * window.size_s) if rows else 0.0
    dists, volumes = spark.recommend_distributions(traffic, policy.level.value, window, keys, policy.percentile)
    return traffic, dists, volumes, span_s, rows


def proposed_index(rec: Recommendation, current: Sequence[QuotaRecord]) -> QuotaIndex:
    """The quotas as they would be: the current ones with the recommended ones merged in."""
    from kquotactl.core.precedence import QuotaIndex

    configs: dict[Entity, dict[str, Number]] = {}
    for r in current:
        configs.setdefault(r.entity, {}).update(r.config)
    for lim in rec.limits:
        configs.setdefault(lim.entity, {})[lim.key] = lim.value
    return QuotaIndex(configs)


def traffic_columns(
    paths: Sequence[str], window: Window, input_format: str, per_broker: bool, warn: Callable[[str], None]
) -> dict[str, list[Any]]:
    """The inputs as the local engine's columns (``readers.engine_columns``), with a ``broker`` column when the
    traffic says which broker measured it (a table's own column, or one broker per request-log input)."""
    from kquotactl.impact.readers import read_request_log, read_table

    if input_format == "table":
        tables = [("", read_table(p)) for p in paths]
    else:
        groups = [[p] for p in paths] if per_broker else [list(paths)]
        tables = []
        for group in groups:
            table, stats = read_request_log(group)
            if skipped := stats.warning():
                warn(skipped)
            tables.append((group[0] if per_broker else "", table))
    return _columns(tables, window)


def _columns(tables: Sequence[tuple[str, Any]], window: Window) -> dict[str, list[Any]]:
    """Tables as one set of the local engine's columns, each with its broker (the table's own ``broker`` column,
    else the name paired with it; "" for none)."""
    from kquotactl.impact.readers import engine_columns
    from kquotactl.impact.replay import BROKER_COLUMN

    out: dict[str, list[Any]] = {}
    for broker, table in tables:
        cols = engine_columns(table, window)
        if BROKER_COLUMN in table.column_names:
            cols[BROKER_COLUMN] = [str(b) for b in table.column(BROKER_COLUMN).to_pylist()]
        elif broker:
            cols[BROKER_COLUMN] = [broker] * table.num_rows
        for name, values in cols.items():
            if name not in ("topic", "t_us"):  # the topic model's: not recommend's
                out.setdefault(name, []).extend(values)
    return out


def replay_recommendation(
    columns: Mapping[str, Sequence[Any]], rec: Recommendation, current: Sequence[QuotaRecord], window: Window
) -> dict[str, Any]:
    """The ``impact`` report of the quotas as they would be (current ones, recommended ones merged in) on the
    traffic the recommendation came from, on the local engine: each broker's traffic replayed on its own (quotas are
    per broker) and the reports merged, as ``impact run`` does for per-broker inputs."""
    index = proposed_index(rec, current)
    return _merged_report(_results_per_broker(columns, index, window), index, window)


def _results_per_broker(
    columns: Mapping[str, Sequence[Any]], index: QuotaIndex, window: Window
) -> dict[str, EngineResult]:
    """The local engine's result of each broker's rows ("" for traffic that names no broker)."""
    from kquotactl.impact import local
    from kquotactl.impact.replay import BROKER_COLUMN

    brokers = columns.get(BROKER_COLUMN)
    if not brokers:
        return {"": local.run(columns, index, window)}
    rows: dict[str, list[int]] = {}
    for i, b in enumerate(brokers):
        rows.setdefault(b, []).append(i)
    return {
        b: local.run({name: [values[i] for i in picked] for name, values in columns.items()}, index, window)
        for b, picked in rows.items()
    }


def _merged_report(results: Mapping[str, EngineResult], index: QuotaIndex, window: Window) -> dict[str, Any]:
    """One report of per-broker results (:func:`~kquotactl.impact.replay.merge_broker_reports`), or of the one
    result of traffic that names no broker."""
    from kquotactl.impact.replay import merge_broker_reports, report

    if list(results) == [""]:
        return report(results[""], index, window)
    return merge_broker_reports({b: report(r, index, window) for b, r in results.items()})


def policy_of(
    policy_file: str | None,
    percentile: float | None = None,
    headroom: str | None = None,
    floors: Sequence[str] = (),
    level: str | None = None,
    tail_share: str | None = None,
    keys: Sequence[str] = (),
    keep: Sequence[str] = (),
    exempt: Sequence[str] = (),
) -> Policy:
    """The policy from an optional YAML file, each given option overriding its field (``floors``: ``KEY=VALUE``)."""
    from kquotactl.core.errors import MalformedInput
    from kquotactl.core.keys import KEYS, parse_value
    from kquotactl.core.recommend import Level, check_key, checked_percentile, percent, policy_from

    doc: dict[str, object] = {}
    source = "policy"
    if policy_file is not None:
        doc, source = _policy_document(policy_file), policy_file
    floor_values = {}
    for item in floors:
        key, sep, value = item.partition("=")
        if not sep:
            raise MalformedInput("floor", "is not KEY=VALUE", item)
        name = check_key(key.strip(), "floor")
        floor_values[name] = parse_value(KEYS[name], value)
    for k in (*keys, *keep):
        check_key(k, "key")
    return policy_from(
        doc,
        source,
        percentile=None if percentile is None else checked_percentile(percentile, "percentile"),
        headroom=None if headroom is None else percent(headroom, "headroom"),
        floors=floor_values,
        level=None if level is None else Level(level),
        tail_share=None if tail_share is None else percent(tail_share, "tail_share", below_all=True),
        keys=tuple(keys),
        keep=frozenset(keep),
        exempt=frozenset(exempt),
    )


def _policy_document(path: str) -> dict[str, object]:
    import yaml

    from kquotactl.core.errors import MalformedInput

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise MalformedInput(path, f"cannot be read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise MalformedInput(path, "is not UTF-8 text") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise MalformedInput(path, f"is not YAML{where}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise MalformedInput(path, "is not a mapping of policy fields")
    return doc


def protected_users(backend: QuotaBackend | None, super_users: str | None = None) -> tuple[frozenset[str], list[str]]:
    """The users a recommendation must exempt: ``super_users`` (``User:A;User:B``, as ``super.users`` spells it)
    and, from a live ``backend``, the brokers' super users and their own user; with notes on what could not be
    read (the admin API's DescribeConfigs hides ``super.users``' value)."""
    from kquotactl.core.principals import super_user_names
    from kquotactl.services.principals import PrincipalRuleArgs, broker_principals

    names = set(super_user_names(super_users))
    notes: list[str] = []
    if backend is not None:
        found = broker_principals(backend, PrincipalRuleArgs(), read_super_users=True)
        names.update(found.protected_users())
        if found.super_users_hidden and super_users is None:
            notes.append("the brokers do not show super.users' value: its users are not exempted")
    return frozenset(names), notes
