"""What the commands do, callable from Python without click: describe, alter, plan, apply, explain's pieces, and the
one loader of a quota set (manifests or a live backend) that explain and impact share.

Services take typed arguments (a :class:`~kquotactl.backends.base.QuotaBackend`, a manifest, entities, changes) and
return dataclasses; they never print and never name a command-line flag. The click commands in :mod:`kquotactl.cli`
parse their options, call a service and render what it returns; errors are raised as
:class:`~kquotactl.core.errors.QuotaError` (with data) and worded by the CLI (:mod:`kquotactl.cli.errorwords`).

For example::

    backend = open_backend(ConnectionOptions(zookeeper="zk:2181/kafka"))  # kquotactl.backends.factory
    result = apply(backend, plan(backend, load_manifests(["quotas.yaml"])).plan)  # kquotactl.manifests.loader
    result.partial is None, result.counts["applied"]
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING, Any

from kquotactl.backends.base import ProgressCallback, QuotaBackend
from kquotactl.core.entities import Entity
from kquotactl.core.errors import EXIT_INTERRUPTED, MissingInput, PartialFailure, QuotaError, UsageError
from kquotactl.core.keys import Number
from kquotactl.core.model import EntityChange, EntityResult, Outcome, QuotaRecord, check_live_changes

if TYPE_CHECKING:  # the rest loads inside the services that use it: describe and alter stay light
    from kquotactl.config.clientprops import ClientSettings
    from kquotactl.config.cluster import ConnectionOptions
    from kquotactl.core.budget import Share
    from kquotactl.core.entities import Entity
    from kquotactl.core.explain import Connection, ThrottleModel
    from kquotactl.core.filters import EntityFilter
    from kquotactl.core.keys import Number, QuotaKey
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.plan import EntityDiff, Plan
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.core.principals import BrokerPrincipals
    from kquotactl.core.rate import ReplayStep
    from kquotactl.core.stages import StagedPlan
    from kquotactl.core.verify import BrokerView, DriveVerdict

#: entities per backend call of :func:`apply`: bounds the backend's working set (reads, ops, results)
APPLY_CHUNK = 5000


def backend_warnings(backend: QuotaBackend) -> list[str]:
    """What the backend noticed while reading or writing (stored values brokers cannot parse, lagging brokers...)."""
    return list(backend.warnings)


# -- describe / alter ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Described:
    """The entities with quotas that matched, and what the backend noticed on the way."""

    records: list[QuotaRecord]
    warnings: list[str]


def describe(backend: QuotaBackend, flt: EntityFilter | None = None) -> Described:
    """Entities with at least one quota matching ``flt`` (every one when None), sorted like kafka-configs."""
    records = backend.describe(flt)
    return Described(records, backend_warnings(backend))


@dataclass(frozen=True)
class Altered:
    """One result per entity written (one per stored spelling when several stored ip names are the address)."""

    results: list[EntityResult]
    warnings: list[str]
    shares: list[Share] = field(default_factory=list)  # --cluster-wide: each budget and its per-broker value

    @property
    def rejection(self) -> QuotaError | None:
        """Why the change was refused (the core's error, with data, when the backend kept it), or None."""
        for result in self.results:
            if result.outcome in (Outcome.REJECTED, Outcome.NOT_ATTEMPTED):
                return result.error or QuotaError(result.message)
        return None


def alter(backend: QuotaBackend, change: EntityChange, *, dry_run: bool = False, cluster_wide: bool = False) -> Altered:
    """Set and remove keys of one entity, atomically (``dry_run``: validated, nothing written); a refused change is
    in :attr:`Altered.rejection`. ``cluster_wide``: the values set are cluster-wide budgets, written as their
    per-broker shares for the backend's live broker count (:func:`kquotactl.core.budget.per_broker`)."""
    from kquotactl.core.budget import check_cluster_key, per_broker
    from kquotactl.core.keys import KEYS

    check_live_changes([change])
    shares: list[Share] = []
    if cluster_wide:
        for k in change.set:
            check_cluster_key(KEYS[k])  # refused before the cluster is asked anything
        brokers = len(backend.broker_ids())
        shares = [per_broker(KEYS[k], v, brokers) for k, v in change.set.items()]
        change = replace(change, set={s.key.name: s.per_broker for s in shares})
    results = backend.alter([change], validate_only=dry_run)
    return Altered(results, backend_warnings(backend), shares)


# -- plan ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """A plan, the manifest it was made from, the backend's warnings and the plan's own notes that are not one of
    them (the same reading of the live state is said once)."""

    backend: QuotaBackend
    plan: Plan
    manifest: Manifest
    warnings: list[str]
    notes: list[str]


def plan(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    manifest: Manifest,
    *,
    prune: bool = False,
    offline: bool = False,
    keep_hint: str = "",
    brokers: int | None = None,
) -> Planned:
    """Diff ``manifest`` against what ``backend`` describes (``prune``: inside the manifest's prune scope, live
    entities and keys it does not declare are removed; ``offline``: the backend is a saved export, so keys only a
    live cluster refuses are not checked). ``backend`` may be a function that opens it: then a manifest a cluster
    would refuse never connects. ``keep_hint``: see :func:`kquotactl.core.plan.make_plan`.

    Cluster-wide budgets (``cluster:``) are divided by ``brokers``, or else by the backend's live broker count
    (:func:`kquotactl.core.budget.resolve_budgets`); the plan's notes give both values and a broker-count change
    read from the live per-broker values. ``Planned.manifest`` is the manifest with the budgets resolved."""
    from kquotactl.core.budget import resolve_budgets
    from kquotactl.core.manifest import ManifestError, live_problems
    from kquotactl.core.plan import make_plan

    if not offline and (problems := live_problems(manifest)):
        raise ManifestError(problems)
    if not isinstance(backend, QuotaBackend):
        backend = backend()
    live = backend.describe()
    warnings = backend_warnings(backend)
    budget_notes: list[str] = []
    if manifest.budgets:
        budgets = resolve_budgets(manifest, brokers if brokers is not None else len(backend.broker_ids()))
        manifest = budgets.manifest
        budget_notes = budgets.notes(live)
    the_plan = make_plan(manifest, live, prune=prune, keep_hint=keep_hint)
    the_plan.notes[:0] = budget_notes
    shown = set(warnings)
    return Planned(backend, the_plan, manifest, warnings, [n for n in the_plan.notes if n not in shown])


@dataclass(frozen=True)
class SavedPlan:
    """A plan read back from its file (``path``); ``target``: the cluster it was made for."""

    plan: Plan
    path: str
    target: str | None


def read_plan_file(path: str) -> SavedPlan:
    """A plan saved by ``plan --out`` (every entity and value validated again: plans are files people can edit)."""
    from kquotactl.core.plan import Plan

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise UsageError(f"cannot read the plan {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"cannot read the plan {path}: {e}") from None
    the_plan = Plan.from_json(data, path)
    target = (data.get("target") or {}).get("cluster")
    return SavedPlan(the_plan, path, str(target) if target else None)


def check_fresh(saved: SavedPlan, live: Sequence[QuotaRecord]) -> None:
    """Refuse a saved plan when the live quotas changed since it was made (its fingerprint)."""
    from kquotactl.core.plan import fingerprint

    if fingerprint(live) != saved.plan.fingerprint:
        raise QuotaError(
            f"the cluster changed since the plan {saved.path} was made (stale plan): nothing was written; "
            "run plan again"
        )


# -- apply -----------------------------------------------------------------------------------------------


@dataclass
class Applied:
    """What an apply did, per entity: ``counts`` per outcome, the ``failed`` results (rejected or not attempted),
    the labels applied, the result records (:func:`result_record`) when asked for, and ``partial``: when the apply
    stopped midway (the cluster went away, Ctrl-C), exactly which entities were applied, not applied and of
    unknown outcome (render it with :func:`kquotactl.render.records.partial_report`)."""

    counts: dict[str, int] = field(default_factory=lambda: {o.value: 0 for o in Outcome})
    failed: list[EntityResult] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    partial: PartialFailure | None = None


def result_record(result: EntityResult, diff: EntityDiff | None) -> dict[str, Any]:
    """One entity's result as ``apply -o json`` and the ``--log`` lines give it: with the manifest entry's path,
    source and metadata."""
    from kquotactl.core.manifest import entity_path_text

    out = result.to_json()
    if diff is not None:
        out["path"] = entity_path_text(diff.entity)
        if diff.source:
            out["source"] = diff.source
        out.update(diff.meta)
    return out


def apply(
    backend: QuotaBackend,
    the_plan: Plan,
    *,
    dry_run: bool = False,
    max_deletions: int | None = None,
    log: IO[str] | None = None,
    keep_records: bool = False,
    progress: ProgressCallback | None = None,
    chunk: int = APPLY_CHUNK,
    log_extra: Mapping[str, Any] | None = None,
) -> Applied:
    """Hand the plan to the backend in order, ``chunk`` entities at a time.

    Refused before anything is written when it removes quotas from more than ``max_deletions`` entities (default
    :data:`kquotactl.core.plan.DEFAULT_MAX_DELETIONS`) or sets a key no live cluster accepts. ``log``: one JSON
    line per entity result is appended (and flushed per chunk; ``log_extra``: fields added to each line, as a staged
    apply's stage number); ``keep_records``: the same records are kept in
    :attr:`Applied.records`. A failure after some entities were applied is returned as :attr:`Applied.partial`; one
    before any was applied is raised.
    """
    from kquotactl.core.partial import apply_failure
    from kquotactl.core.plan import DEFAULT_MAX_DELETIONS, check_deletions

    if max_deletions is None:
        max_deletions = DEFAULT_MAX_DELETIONS
    check_deletions(the_plan, max_deletions)
    check_live_changes(d.change() for d in the_plan.diffs)  # a saved plan too: refused before any chunk is written
    by_entity = {d.entity: d for d in the_plan.diffs}
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out = Applied()

    def add(results: Iterable[EntityResult]) -> None:
        for r in results:
            out.counts[r.outcome.value] += 1
            if r.outcome in (Outcome.REJECTED, Outcome.NOT_ATTEMPTED):
                out.failed.append(r)
            elif r.outcome is Outcome.APPLIED:
                out.applied.append(r.entity.label())
            if log is not None or keep_records:
                record = result_record(r, by_entity.get(r.entity))
                if log is not None:
                    line = {"time": stamp, **record, **(log_extra or {})}
                    log.write(json.dumps(line, ensure_ascii=False) + "\n")
                if keep_records:
                    out.records.append(record)
        if log is not None:
            log.flush()

    diffs = the_plan.diffs
    for start in range(0, len(diffs), chunk):
        part = diffs[start : start + chunk]
        later = [d.entity.label() for d in diffs[start + len(part) :]]
        try:
            results = backend.alter(
                [d.change() for d in part],
                validate_only=dry_run,
                expected={d.entity: d.before for d in part},
                progress=progress,
            )
        except PartialFailure as e:  # Interrupted (Ctrl-C in the backend) included: exit 130
            stopped = e.exit_code == EXIT_INTERRUPTED
            out.partial = apply_failure(
                e, out.applied + e.applied, e.not_applied + later, e.unknown, interrupted=stopped
            )
            return out
        except KeyboardInterrupt:  # Ctrl-C outside a backend's own bookkeeping: this chunk's fate is unknown
            unknown = [d.entity.label() for d in part]
            out.partial = apply_failure(QuotaError("interrupted"), list(out.applied), later, unknown, interrupted=True)
            return out
        except QuotaError as e:
            if not out.applied:
                raise QuotaError(f"{e}; nothing was applied") from None
            out.partial = apply_failure(e, list(out.applied), [d.entity.label() for d in diffs[start:]])
            return out
        add(results)
    return out


# -- quota sets (explain, impact) --------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaSet:
    """A quota set to resolve connections against, and what the backend noticed reading it."""

    index: QuotaIndex
    warnings: list[str]


def load_quota_set(
    source: QuotaBackend | Sequence[str],
    static_defaults: Mapping[str, int] | None = None,
    brokers: int | None = None,
    spread: int = 1,
    principals: BrokerPrincipals | None = None,
) -> QuotaSet:
    """The one loader of a quota set: manifest files or directories (offline, through the read-only manifest
    backend, the same protocol as a cluster) or a live backend's whole quota set. Manifests' cluster-wide budgets
    count as their per-broker shares for ``brokers`` brokers (refused without it). ``spread``: the limits are
    applied to cluster-wide traffic spread evenly over that many brokers (:func:`kquotactl.core.budget.spread_evenly`).

    A ZooKeeper-mode broker tells every quota manager of every entity; a broker answering the admin API (KRaft) only
    the key's own: ``per_key_levels`` follows the backend (offline manifests answer as ZooKeeper does).
    ``principals``: the rules for manifests' ``principal:`` entries.
    """
    from kquotactl.core.precedence import QuotaIndex

    if isinstance(source, Sequence):
        from kquotactl.backends.manifest import ManifestBackend
        from kquotactl.manifests.loader import load_manifests

        manifest = load_manifests(list(source), principals=principals)
        if manifest.budgets:
            from kquotactl.core.budget import resolve_budgets

            if brokers is None:
                raise UsageError(
                    "the manifests declare cluster-wide budgets (cluster:): give the broker count they divide by "
                    "(--brokers N)"
                )
            manifest = resolve_budgets(manifest, brokers).manifest
        with ManifestBackend(manifest) as offline:
            return load_quota_set(offline, static_defaults, spread=spread)
    records = source.describe()
    if spread != 1:
        from kquotactl.core.budget import spread_evenly

        records = spread_evenly(records, spread)
        static_defaults = {k: v * spread for k, v in (static_defaults or {}).items()}
    index = QuotaIndex(records, static_defaults=static_defaults, per_key_levels=source.name == "admin")
    return QuotaSet(index, backend_warnings(source))


def explain_lines(
    index: QuotaIndex, conns: Iterable[Connection], throttle: ThrottleModel | None = None, chain: bool = False
) -> Iterator[dict[str, Any] | str]:
    """Explain many connections, in order: one JSON object each (``chain``: with every level of the chain), or, on
    the bulk path without the chain, each already encoded as one compact JSON line."""
    from kquotactl.core.explain import LineEncoder, explain_json

    obs = throttle if throttle is not None and throttle.observed else None
    if chain:
        return (explain_json(index, c, obs, True) for c in conns)
    encoder = LineEncoder(index, obs)
    return (encoder.line(c) for c in conns)


@dataclass(frozen=True)
class Replayed:
    """A replay: the key, the limit it ran under (given, or resolved for the connection) and each recording's step."""

    key: str
    limit: float
    steps: list[ReplayStep]


def replay(
    events: list[tuple[int, float]],
    *,
    conn: Connection | None = None,
    quota_set: Callable[[], QuotaIndex] | None = None,
    key: str | None = None,
    limit: float | str | None = None,
    unrecord_throttled: bool = False,
    window_num: int = 11,
    window_size_seconds: int = 1,
    kafka_version: tuple[int, ...] | None = None,
    mutation_mode: str = "strict",
) -> Replayed:
    """Replay recordings for one key: under ``limit`` (a number, or a quota value as typed: see
    :func:`limit_value`), or under what ``conn`` resolves to in ``quota_set`` (called only then: loading a live
    quota set reads the cluster). ``key`` defaults to connection_creation_rate for an ip-only connection, else
    producer_byte_rate. A missing input raises :class:`MissingInput`."""
    from kquotactl.core.keys import KeyScope, lookup_key

    if key is None:
        key = "connection_creation_rate" if conn is not None and conn.user is None else "producer_byte_rate"
    qk = lookup_key(key)
    if isinstance(limit, str):
        limit = limit_value(qk, limit)
    if limit is None:
        if conn is None or quota_set is None:
            raise MissingInput("replay-limit")
        index = quota_set()
        if qk.kind is KeyScope.IP:
            if conn.ip is None:
                raise MissingInput("ip", key)
            res = index.resolve_ip(conn.ip, key)
        else:
            if conn.user is None:
                raise MissingInput("client", key)
            res = index.resolve(key, conn.user, conn.client_id or "")
        if res.limit is None:
            raise MissingInput("unlimited", key)
        limit = float(res.limit)
    steps = replay_steps(
        events,
        key,
        limit,
        unrecord_throttled=unrecord_throttled,
        window_num=window_num,
        window_size_seconds=window_size_seconds,
        kafka_version=kafka_version,
        mutation_mode=mutation_mode,
    )
    return Replayed(key, limit, steps)


def limit_value(qk: QuotaKey, text: str) -> float:
    """A replay's limit as typed: a quota value as for kafka-configs, and also 0 or a negative one (kafka-configs 2.8
    wrote them and brokers still apply them: the replay shows what they do)."""
    from kquotactl.core.errors import InvalidValue
    from kquotactl.core.keys import java_trim, parse_value

    stripped = java_trim(text)
    negative = stripped.startswith("-")
    body = stripped[1:] if negative else stripped
    try:
        value = float(parse_value(qk, body))
    except InvalidValue:
        try:
            zero = float(body) == 0
        except ValueError:
            zero = False
        if not zero:
            raise
        value = 0.0
    return -value if negative else value


def replay_steps(
    events: list[tuple[int, float]],
    key: str,
    limit: float,
    *,
    unrecord_throttled: bool = False,
    window_num: int = 11,
    window_size_seconds: int = 1,
    kafka_version: tuple[int, ...] | None = None,
    mutation_mode: str = "strict",
) -> list[ReplayStep]:
    """Recordings replayed through the broker's sampled Rate for ``key`` under ``limit`` (controller_mutation_rate:
    its token bucket): each recording's throttle."""
    if key == "controller_mutation_rate":
        from kquotactl.core.rate import replay_token_bucket

        if kafka_version is not None and kafka_version[:2] < (2, 7):
            raise UsageError(
                "controller_mutation_rate came with Kafka 2.7 (KIP-599): a broker before it has no such quota"
            )
        return replay_token_bucket(
            events, limit, samples=window_num, window_ms=window_size_seconds * 1000, mode=mutation_mode
        )
    from kquotactl.core.keys import KEYS
    from kquotactl.core.rate import replay, sampled_stat_for

    return replay(
        events,
        limit,
        samples=window_num,
        window_ms=window_size_seconds * 1000,
        cap_ms=window_size_seconds * 1000 if KEYS[key].throttle_capped else None,
        unrecord_throttled=unrecord_throttled,
        **sampled_stat_for(kafka_version),
    )


# -- staged apply (apply --stages) -------------------------------------------------------------------------


@dataclass(frozen=True)
class StepCheck:
    """What the check between two stages found: ``mismatches`` (an entity's live values are not what the stage
    wrote: someone else changed them, or the write did not take) and ``regressions`` (quota-ids throttled worse
    than the stage predicts, :func:`kquotactl.observe.model.stage_regressions`). Empty both: go on."""

    mismatches: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.regressions


#: the between-stage check :func:`apply_stages` calls: the backend, and each entity's config the stage leaves
StepChecker = Callable[["QuotaBackend", "Mapping[Entity, Mapping[str, Number]]"], StepCheck]


def live_mismatches(backend: QuotaBackend, expected: Mapping[Entity, Mapping[str, Number]]) -> list[str]:
    """One line per entity whose live config (as describe reads it) is not ``expected``, naming each key."""
    from kquotactl.core.keys import KEYS, format_value
    from kquotactl.core.manifest import entity_path_text

    live = {r.entity: dict(r.config) for r in backend.describe()}
    out = []
    for entity, want in expected.items():
        have = live.get(entity, {})
        if have == dict(want):
            continue
        parts = []
        for k in sorted(set(have) | set(want)):
            h, w = have.get(k), want.get(k)
            if h != w:
                hw = "unset" if h is None else format_value(KEYS[k], h)
                ww = "unset" if w is None else format_value(KEYS[k], w)
                parts.append(f"{k} is {hw} on the cluster, expected {ww}")
        out.append(f"{entity_path_text(entity)}: {', '.join(parts)}")
    return out


def applied_mismatches(
    backend: QuotaBackend, expected: Mapping[Entity, Mapping[str, Number]], timeout: float
) -> list[str]:
    """One line per entity not applied as ``expected``: through the admin API, a broker that does not report it
    within ``timeout`` (:func:`verify_applied`); else the live config as describe reads it
    (:func:`live_mismatches`)."""
    from kquotactl.backends.kafka.quotas import AdminBackend

    if not isinstance(backend, AdminBackend) or backend.controller:
        return live_mismatches(backend, expected)
    from kquotactl.core.verify import lag_message

    checked = verify_applied(backend, [(e, c) for e, c in expected.items()], timeout=timeout)
    return [lag_message(c.entity.label(), c.expected, c.lagging, c.waited) for c in checked if not c.converged]


class StageObserver:
    """The quota sensors (as ``kquotactl top`` reads them: a Prometheus server, or the brokers' JMX exporter
    endpoints) before and after each stage, for :func:`check_step`'s regression rule."""

    def __init__(self, prometheus: str | None = None, scrape: Sequence[str] = ()) -> None:
        self.prometheus = prometheus
        self.scrape = list(scrape)
        self.last: list[Any] | None = None  # the rows of the last look (kquotactl.observe.model.QuotaIdRow)

    def look(self, backend: QuotaBackend) -> list[Any]:
        """The sensors now, joined with the limits the backend describes now."""
        from kquotactl.observe import prometheus as source
        from kquotactl.observe.model import top_rows

        samples = source.from_prometheus(self.prometheus) if self.prometheus else source.scrape(self.scrape)
        return top_rows(samples, load_quota_set(backend).index)

    def baseline(self, backend: QuotaBackend) -> None:
        self.last = self.look(backend)

    def regressions(self, backend: QuotaBackend) -> list[str]:
        """What got worse since the last look (which this look replaces)."""
        from kquotactl.observe.model import stage_regressions

        now = self.look(backend)
        found = stage_regressions(self.last or [], now) if self.last is not None else []
        self.last = now
        return found


def check_step(
    backend: QuotaBackend,
    expected: Mapping[Entity, Mapping[str, Number]],
    *,
    observer: StageObserver | None = None,
    timeout: float = 30.0,
) -> StepCheck:
    """The check between two stages: every broker reports what the stage wrote (through the admin API, as
    ``verify`` waits for it, at most ``timeout`` seconds: KRaft brokers apply metadata asynchronously; else the
    values read back through the backend), and (``observer``) no throttled quota-id got worse than the stage
    predicts. The one place the staged apply checks; :class:`StepChecker` is its type."""
    mismatches = applied_mismatches(backend, expected, timeout)
    if mismatches or observer is None:
        return StepCheck(mismatches)
    return StepCheck(regressions=observer.regressions(backend))


@dataclass
class StagedApplied:
    """Where a staged apply got to: ``done`` (entity -> the last stage written and checked, 0: none), the stage it
    stopped at and why (``stopped``: None when every stage is done), each stage's :class:`Applied`, and whether it
    was interrupted (Ctrl-C: exit 130)."""

    staged: StagedPlan
    done: dict[Entity, int]
    stages: list[Applied] = field(default_factory=list)
    stopped: str | None = None
    stopped_at: int | None = None
    details: list[str] = field(default_factory=list)
    interrupted: bool = False

    @property
    def finished(self) -> bool:
        return self.stopped is None


@dataclass(frozen=True)
class StageEvent:
    """Progress of a staged apply: ``what`` is ``applied`` (stage written), ``checked``, or ``waiting`` (for
    ``seconds``, before ``stage``)."""

    what: str
    stage: int
    count: int
    entities: int = 0
    seconds: float = 0.0


def apply_stages(
    backend: QuotaBackend,
    staged: StagedPlan,
    *,
    interval: float,
    done: Mapping[Entity, int] | None = None,
    check: StepChecker = check_step,
    log: IO[str] | None = None,
    max_deletions: int | None = None,
    on_event: Callable[[StageEvent], None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> StagedApplied:
    """Write ``staged`` stage by stage through :func:`apply` (the one home for writes), from where ``done`` says
    each entity is (default: nowhere). Before each stage the live values must still be what the last stage left
    (else: stopped, someone else changed them); after it ``check`` runs; then it waits ``interval`` seconds before
    the next. A failed check, a rejected write or Ctrl-C stops it: :attr:`StagedApplied.stopped` says why and
    :attr:`StagedApplied.done` where each entity is. ``log``: each result line carries ``stage`` and ``stages``."""
    import time

    wait = sleep or time.sleep
    n = staged.count
    out = StagedApplied(staged, {e.entity: (done or {}).get(e.entity, 0) for e in staged.entities})
    first = min(out.done.values(), default=n) + 1

    def event(what: str, stage: int, entities: int = 0, seconds: float = 0.0) -> None:
        if on_event is not None:
            on_event(StageEvent(what, stage, n, entities, seconds))

    def stop(stage: int, why: str, details: Sequence[str] = (), interrupted: bool = False) -> StagedApplied:
        out.stopped, out.stopped_at, out.details, out.interrupted = why, stage, list(details), interrupted
        return out

    for k in range(first, n + 1):
        try:
            if k > first:
                event("waiting", k, seconds=interval)
                wait(interval)
            at = {e.entity: e.at(out.done[e.entity]) for e in staged.entities}
            changed = live_mismatches(backend, at)
            if changed:
                return stop(k, f"the live values are not what stage {k - 1} left (changed by someone else)", changed)
        except KeyboardInterrupt:
            return stop(k, "interrupted", interrupted=True)
        the_plan = staged.stage(k, out.done)
        result = apply(backend, the_plan, log=log, max_deletions=max_deletions, log_extra={"stage": k, "stages": n})
        out.stages.append(result)
        written = {d.entity for d in the_plan.diffs}
        failed = {r.entity for r in result.failed}
        if result.partial is not None:
            applied = set(result.partial.applied)
            for e in staged.entities:
                if e.entity not in written or e.entity.label() in applied:
                    out.done[e.entity] = max(out.done[e.entity], k)
            why = "interrupted" if result.partial.exit_code == EXIT_INTERRUPTED else str(result.partial)
            return stop(k, why, interrupted=result.partial.exit_code == EXIT_INTERRUPTED)
        for e in staged.entities:
            if e.entity not in failed:
                out.done[e.entity] = max(out.done[e.entity], k)
        if failed:
            from kquotactl.render.records import result_line

            return stop(k, f"stage {k} was refused for some entities", [result_line(r) for r in result.failed])
        event("applied", k, entities=len(written))
        try:
            found = check(backend, staged.expected(k))
        except KeyboardInterrupt:
            return stop(k, "interrupted", interrupted=True)
        if not found.ok:
            why = "the check after the stage failed"
            return stop(k, why, [*found.mismatches, *found.regressions])
        event("checked", k)
    return out


def staged_log_header(staged: StagedPlan, interval: float, target: Mapping[str, str] | None = None) -> str:
    """The log line a staged apply starts with: the whole schedule and the interval, so ``apply --resume LOG``
    needs nothing else."""
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    head: dict[str, Any] = {"time": stamp, "staged": staged.to_json(), "interval": interval}
    if target:
        head["target"] = dict(target)
    return json.dumps(head, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class StagedLog:
    """A staged apply read back from its ``--log``: the schedule and the last stage each entity finished (a result
    line ``applied``/``unchanged``), and the entities whose last write's outcome the log does not know."""

    staged: StagedPlan
    done: dict[Entity, int]
    target: dict[str, str] | None
    interval: float = 0.0


def read_staged_log(path: str) -> StagedLog:
    """The last staged apply in the log file ``path`` (a log can hold several runs: the last header wins)."""
    from kquotactl.core import entities, stages

    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise UsageError(f"cannot read the log {path}: {e.strerror or e}") from None
    staged: StagedPlan | None = None
    target: dict[str, str] | None = None
    interval = 0.0
    done: dict[Entity, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if "staged" in data:
                staged = stages.StagedPlan.from_json(data["staged"])
                target = data.get("target")
                interval = float(data.get("interval", 0.0))
                done = {e.entity: 0 for e in staged.entities}
            elif staged is not None and "stage" in data and data.get("outcome") in ("applied", "unchanged"):
                entity = entities.Entity.from_json(data["entity"])
                if entity in done:
                    done[entity] = max(done[entity], int(data["stage"]))
        except (ValueError, KeyError, TypeError, AttributeError, QuotaError) as e:
            raise UsageError(f"{path}:{number}: not a line of a staged apply log ({type(e).__name__}: {e})") from None
    if staged is None:
        raise UsageError(f"{path}: no staged apply in this log (apply --stages N --log FILE writes one)")
    return StagedLog(staged, done, target, interval)


def resume_point(backend: QuotaBackend, logged: StagedLog) -> dict[Entity, int]:
    """Where each entity of a logged staged apply is, checked against the live values: at the stage the log says,
    or one further (a write whose answer never came). Anything else was changed by someone else: refused."""
    from kquotactl.core.manifest import entity_path_text

    live = {r.entity: dict(r.config) for r in backend.describe()}
    done: dict[Entity, int] = {}
    wrong: list[Entity] = []
    for e in logged.staged.entities:
        k = logged.done.get(e.entity, 0)
        have = live.get(e.entity, {})
        if have == dict(e.at(k)):
            done[e.entity] = k
        elif k < len(e.steps) and have == dict(e.at(k + 1)):
            done[e.entity] = k + 1
        else:
            wrong.append(e.entity)
    if wrong:
        k = logged.done.get(wrong[0], 0)
        first = live_mismatches(backend, {wrong[0]: logged.staged.expected(k)[wrong[0]]})
        names = ", ".join(entity_path_text(w) for w in wrong[:5]) + (" ..." if len(wrong) > 5 else "")
        raise QuotaError(
            f"not resumed, nothing written: the live values of {names} are not what the log says stage {k} left "
            f"(someone else changed them): {first[0] if first else names}"
        )
    return done


# -- verify (did a change take effect) ---------------------------------------------------------------------

#: how often ``verify`` asks the brokers again while it waits
VERIFY_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Converged:
    """Step 1 of ``verify``: what every broker (or the ZooKeeper znode) reported last for ``entity``.

    ``expected``: the values waited for (``exact``: and no other key: taken from the cluster itself);
    ``lagging``: the views that did not report them when the wait ended (empty: converged); ``source``: how each
    view was read."""

    entity: Entity
    expected: dict[str, Number]
    exact: bool
    views: list[BrokerView]
    lagging: list[BrokerView]
    waited: float
    source: str

    @property
    def converged(self) -> bool:
        return not self.lagging


def wait_applied(
    backend: QuotaBackend,
    entity: Entity,
    expected: Mapping[str, Number] | None = None,
    *,
    exact: bool | None = None,
    timeout: float = 30.0,
    poll: float = VERIFY_POLL_SECONDS,
    clock: Callable[[], float] | None = None,
) -> Converged:
    """Wait (at most ``timeout`` seconds) until every broker reports ``expected`` for ``entity`` (None: the values
    the cluster describes now; an entity without quotas is then an error). ``exact``: no other key either (default:
    only when ``expected`` is None; ``{}`` exactly is "no quotas": a removal).

    Through the admin API, DescribeClientQuotas is sent to each broker by id: a KRaft broker answers from the
    metadata image it has applied (its quota managers are updated from the same image), so a broker that has not
    applied the change yet says so. A ZooKeeper-mode cluster read through ``--zookeeper`` is the znode brokers read
    (written with its change notification in one transaction); whether each broker has consumed the notification is
    not observable there: ``--drive`` shows it."""
    import time

    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.core.filters import EntityFilter
    from kquotactl.core.verify import BrokerView, lagging

    clock = clock or time.monotonic
    flt = EntityFilter.exact(entity)
    if isinstance(backend, AdminBackend):
        if backend.controller:
            raise UsageError("verify asks each broker: use --bootstrap-server (controllers do not describe quotas)")
        brokers = backend.broker_ids()
        source = "DescribeClientQuotas sent to each broker"

        def views() -> list[BrokerView]:
            return [BrokerView(f"broker {b}", _config_of(backend.describe(flt, broker=b))) for b in brokers]

    else:
        source = "the ZooKeeper znode brokers read" if backend.name == "zookeeper" else f"the {backend.name} backend"

        def views() -> list[BrokerView]:
            return [BrokerView(backend.name, _config_of(backend.describe(flt)))]

    if exact is None:
        exact = expected is None
    if expected is None:
        expected = _config_of(backend.describe(flt))
        if not expected:
            raise QuotaError(f"no such entity: {entity.label()} has no quotas (give --expect to wait for values)")
    start = clock()
    while True:
        seen = views()
        late = lagging(expected, seen, exact)
        if not late or clock() - start >= timeout:
            return Converged(entity, dict(expected), exact, seen, late, clock() - start, source)
        time.sleep(poll)


def _config_of(records: Sequence[QuotaRecord]) -> dict[str, Number]:
    return dict(records[0].config) if records else {}


@dataclass(frozen=True)
class DriveTarget:
    """Where and as whom ``verify --drive`` produces: the broker address, the client settings (SASL...), the
    principal the broker will see and the client-id."""

    bootstrap: str
    settings: ClientSettings
    user: str
    client_id: str


def drive_target(opts: ConnectionOptions, entity: Entity, client_id: str | None, bootstrap: str | None) -> DriveTarget:
    """The producer ``--drive`` runs for ``entity``: the cluster's bootstrap address (or ``bootstrap``) and client
    properties (``--command-config``: SASL credentials make the user), the entity's client-id unless given.
    Refused when the producer would not be the entity's connection."""
    from kquotactl.config.clientprops import ClientSettings, load_client_settings
    from kquotactl.core.explain import ANONYMOUS

    where = bootstrap or opts.bootstrap_server
    if not where:
        raise UsageError("--drive runs a producer: give --bootstrap-server (or --drive-bootstrap with --zookeeper)")
    if entity.user is None and entity.client_id is None:
        raise UsageError("--drive drives producer_byte_rate: verify a user or client-id entity, not an ip")
    settings = load_client_settings(opts.command_config)[0] if opts.command_config else ClientSettings()
    if settings.uses_ssl and not settings.uses_sasl:
        raise UsageError("--drive over SSL without SASL: the principal is the certificate's name; use a SASL listener")
    user = (settings.sasl_username or "") if settings.uses_sasl else ANONYMOUS
    if isinstance(entity.user, str) and entity.user != user:
        raise UsageError(
            f"--drive: the entity is user {entity.user!r} but the producer authenticates as {user!r} "
            "(give that user's credentials with --command-config)"
        )
    named = entity.client_id if isinstance(entity.client_id, str) else None  # the default is not a str
    if client_id is not None and named is not None and client_id != named:
        raise UsageError(f"--drive-client-id {client_id!r}: the entity is client-id {named!r}")
    return DriveTarget(where, settings, user, client_id or named or "kquotactl-verify")


def drive_verdict(
    backend: QuotaBackend,
    target: DriveTarget,
    *,
    rate: float,
    seconds: float,
    topic: str,
    connect_timeout: float = 10.0,
) -> DriveVerdict:
    """Step 2 of ``verify``: drive a real producer at ``rate`` bytes/s for ``seconds`` and compare the broker's
    first throttle with the simulation under the limit the cluster's quotas give the connection
    (:func:`kquotactl.core.verify.compare_drive`)."""
    from kquotactl.backends.kafka.drive import drive_producer
    from kquotactl.core.verify import compare_drive

    index = load_quota_set(backend).index
    limit = index.resolve("producer_byte_rate", target.user, target.client_id).limit
    window_num, window_size = _quota_window(backend)
    drive = drive_producer(target.bootstrap, target.settings, target.client_id, topic, rate, seconds, connect_timeout)
    return compare_drive(drive, None if limit is None else float(limit), window_num, window_size)


def _quota_window(backend: QuotaBackend) -> tuple[int, int]:
    """The brokers' ``quota.window.num`` / ``quota.window.size.seconds`` (through the admin API: the first broker's
    configuration; else Kafka's defaults)."""
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.core.throttle import DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS

    if not isinstance(backend, AdminBackend):
        return DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS
    configs, _ = backend.broker_settings(["quota.window.num", "quota.window.size.seconds"])

    def number(name: str, default: int) -> int:
        value = configs.get(name)
        return int(value) if value and value.isdigit() else default

    return number("quota.window.num", DEFAULT_WINDOW_NUM), number(
        "quota.window.size.seconds", DEFAULT_WINDOW_SIZE_SECONDS
    )


def verify_applied(
    backend: QuotaBackend,
    wanted: Sequence[tuple[Entity, Mapping[str, Number]]],
    *,
    timeout: float = 30.0,
    sample: int | None = None,
    poll: float = VERIFY_POLL_SECONDS,
) -> list[Converged]:
    """``apply --verify``: step 1 of ``verify`` for each (entity, config it must have now) — exactly that config,
    ``{}`` for a removed entity — or for ``sample`` of them (evenly spread, deterministic), all within ``timeout``."""
    import time

    chosen = list(wanted)
    if sample is not None and 0 < sample < len(chosen):
        step = len(chosen) / sample
        chosen = [chosen[int(i * step)] for i in range(sample)]
    deadline = time.monotonic() + timeout
    return [
        wait_applied(
            backend, entity, dict(config), exact=True, timeout=max(0.0, deadline - time.monotonic()), poll=poll
        )
        for entity, config in chosen
    ]


# -- principals as the brokers map them ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PrincipalRuleArgs:
    """What the user said about the brokers' principal rules (None: not given; read from the cluster if any)."""

    ssl_rules: str | None = None
    kerberos_rules: str | None = None
    kerberos_realm: str | None = None

    @property
    def all_given(self) -> bool:
        return self.ssl_rules is not None and self.kerberos_rules is not None


def broker_principals(
    backend: QuotaBackend | None, args: PrincipalRuleArgs, *, read_super_users: bool = False
) -> BrokerPrincipals:
    """The brokers' principal rules and super users: given ones win; the rest are read from ``backend`` (the
    admin API: a broker's DescribeConfigs; ZooKeeper: the cluster-wide dynamic configs only) when it can tell."""
    from kquotactl.core.principals import PRINCIPAL_CONFIGS, BrokerPrincipals

    configs: dict[str, str | None] = {}
    where: str | None = None
    read = getattr(backend, "broker_settings", None)
    if read is not None and (read_super_users or not args.all_given):
        configs, where = read(PRINCIPAL_CONFIGS)
    return BrokerPrincipals.of(
        configs,
        where,
        ssl_rules=args.ssl_rules,
        kerberos_rules=args.kerberos_rules,
        kerberos_realm=args.kerberos_realm,
    )
