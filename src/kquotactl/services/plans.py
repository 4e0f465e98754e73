"""Plan a manifest against the live quotas, read a saved plan back, and apply a plan in chunks with an exact report of
what was applied when it stops midway."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from kquotactl.backends.base import ProgressCallback, QuotaBackend, opened, signals_held
from kquotactl.core.changes import EntityResult, Outcome, QuotaRecord, check_live_changes
from kquotactl.core.entities import Entity
from kquotactl.core.errors import EXIT_INTERRUPTED, LogMismatch, NothingLogged, PartialFailure, QuotaError, UsageError
from kquotactl.core.retry import RetryPolicy
from kquotactl.services.quotas import backend_warnings

if TYPE_CHECKING:  # types only: the modules load inside the services that use them
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.plan import EntityDiff, Plan

#: entities per backend call of :func:`apply`: bounds the backend's working set (reads, ops, results)


@dataclass(frozen=True)
class Planned:
    """A plan, the manifest it was made from, the backend's warnings and the plan's own notes that are not one of
    them (the same reading of the live state is said once), and ``info``: the plan's notes that only inform (each
    cluster-wide budget with its per-broker share), which ``notes`` leaves out."""

    backend: QuotaBackend
    plan: Plan
    manifest: Manifest
    warnings: list[str]
    notes: list[str]
    info: list[str] = field(default_factory=list)


def plan(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    manifest: Manifest,
    *,
    prune: bool = False,
    offline: bool = False,
    brokers: int | None = None,
) -> Planned:
    """Diff ``manifest`` against what ``backend`` describes (``prune``: inside the manifest's prune scope, live
    entities and keys it does not declare are removed; ``offline``: the backend is a saved export, so keys only a
    live cluster refuses are not checked). ``backend`` may be a function that opens it: then a manifest a cluster
    would refuse never connects.

    Cluster-wide budgets (``cluster:``) are divided by ``brokers``, or else by the backend's live broker count
    (:func:`kquotactl.core.budget.resolve_budgets`); the plan's notes give both values and a broker-count change
    read from the live per-broker values. ``Planned.manifest`` is the manifest with the budgets resolved."""
    from kquotactl.core.budget import resolve_budgets
    from kquotactl.core.manifest import ManifestError, live_problems, release_problems
    from kquotactl.core.plan import make_plan

    if not offline and (problems := live_problems(manifest)):
        raise ManifestError(problems)
    backend = opened(backend)
    if not offline and (problems := release_problems(manifest, backend.release_refusal)):
        raise ManifestError(problems, "entries the brokers' release refuses too")
    live = backend.describe()
    warnings = backend_warnings(backend)
    budget_notes: list[str] = []
    info: list[str] = []
    if manifest.budgets:
        budgets = resolve_budgets(manifest, brokers if brokers is not None else len(backend.broker_ids()))
        manifest = budgets.manifest
        budget_notes, info = budgets.notes(live), budgets.described()
    the_plan = make_plan(manifest, live, prune=prune)
    the_plan.notes[:0] = budget_notes  # saved with the plan, information included
    shown = {*warnings, *info}
    return Planned(backend, the_plan, manifest, warnings, [n for n in the_plan.notes if n not in shown], info)


@dataclass(frozen=True)
class SavedPlan:
    """A plan read back from its file (``path``); ``target``: the cluster it was made for."""

    plan: Plan
    path: str
    target: str | None


def read_plan_file(path: str) -> SavedPlan:
    """A plan saved by ``plan --out`` (every entity and value validated again: plans are files people can edit)."""
    from kquotactl.core.plan import Plan
    from kquotactl.core.wording import decoded, json_problem

    try:
        with open(path, "rb") as fh:
            data = json.loads(decoded(fh.read()))
    except OSError as e:
        raise UsageError(f"cannot read the plan {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:  # (a ValueError: first)
        raise UsageError(f"the plan {path} is not JSON: {json_problem(e.msg, e.doc, e.lineno, e.colno)}") from None
    except ValueError as e:  # not UTF-8: which byte, where
        raise UsageError(f"the plan {path}: {e}") from None
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


@dataclass
class Applied:
    """What an apply did, per entity: ``counts`` per outcome, the ``failed`` results (rejected or not attempted),
    the labels applied, the result records (:func:`result_record`) when asked for, and ``partial``: when the apply
    stopped midway (the cluster went away, Ctrl-C), exactly which entities were applied, not applied and of
    unknown outcome (render it with :func:`kquotactl.render.records.partial_report`); ``read_back``: what reading
    the entities of unknown outcome back found, in words ("" when none was unknown)."""

    counts: dict[str, int] = field(default_factory=lambda: {o.value: 0 for o in Outcome})
    failed: list[EntityResult] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    partial: PartialFailure | None = None
    read_back: str = ""


def result_record(result: EntityResult, diff: EntityDiff | None) -> dict[str, Any]:
    """One entity's result as ``apply -o json`` and the ``--log`` lines give it: with the manifest entry's path,
    source and metadata."""
    from kquotactl.core.manifest import entity_path_text

    out = result.to_json()
    if diff is not None:
        out["path"] = entity_path_text(diff.entity, quoted=False)
        if diff.source:
            out["source"] = diff.source
        out.update(diff.meta)
    return out


#: the ``--log`` header of a plain apply (``"plan"``: the whole plan, so ``apply --resume LOG`` needs nothing else)
LOG_PLAN = "plan"
#: how often a read-back reads again within the backend's read-after-write settle time
READ_BACK_POLL = RetryPolicy(delay=0.1)


def apply_log_header(the_plan: Plan, target: Mapping[str, str] | None = None) -> str:
    """The line an apply's ``--log`` starts with: the plan (every entity's values before and after) and the cluster,
    so that ``apply --resume LOG`` can continue it from the log alone."""
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return json.dumps({"time": stamp, LOG_PLAN: the_plan.to_json(target)}, ensure_ascii=False) + "\n"


def check_applicable(the_plan: Plan, max_deletions: int | None = None) -> None:
    """What :func:`apply` refuses before anything is written, a saved plan too: removing quotas from more than
    ``max_deletions`` entities (default :data:`kquotactl.core.plan.DEFAULT_MAX_DELETIONS`), setting a key no live
    cluster accepts (before the first chunk: every backend's alter refuses it too, one chunk at a time)."""
    from kquotactl.core.plan import DEFAULT_MAX_DELETIONS, check_deletions

    check_deletions(the_plan, DEFAULT_MAX_DELETIONS if max_deletions is None else max_deletions)
    check_live_changes(d.change() for d in the_plan.diffs)


def apply(
    backend: QuotaBackend,
    the_plan: Plan,
    *,
    dry_run: bool = False,
    max_deletions: int | None = None,
    log: IO[str] | None = None,
    keep_records: bool = False,
    progress: ProgressCallback | None = None,
    chunk: int | None = None,
    log_extra: Mapping[str, Any] | None = None,
) -> Applied:
    """Hand the plan to the backend in order, ``chunk`` entities at a time (default: the backend's
    :attr:`~kquotactl.backends.base.QuotaBackend.apply_chunk`).

    Refused before anything is written as :func:`check_applicable` says. ``log``: one JSON
    line per entity result, written and flushed as each write completes (a committed transaction, an answered
    request), also when the apply stops midway; ``log_extra``: fields added to each line, as a staged apply's
    stage number. ``keep_records``: the same records are kept in :attr:`Applied.records`. ``progress``: called with
    the results as they are logged.

    A failure or Ctrl-C after some entities were applied is returned as :attr:`Applied.partial` (one before any
    was applied is raised); the entities whose write was in flight are read back first, so that only those the
    cluster does not answer for stay unknown.
    """
    from kquotactl.core.wording import counted

    check_applicable(the_plan, max_deletions)
    by_entity = {d.entity: d for d in the_plan.diffs}
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out = Applied()
    seen: dict[Entity, EntityResult] = {}  # every result logged, in the order it came: the one account

    def add(results: Sequence[EntityResult]) -> None:
        """Log results not seen yet (the backend reports each write as it lands, then returns them all)."""
        with signals_held():  # a Ctrl-C lands before or after a batch is logged and counted, never in between
            fresh = [r for r in results if r.entity not in seen]
            if log is not None and fresh:
                extra = log_extra or {}
                text = "".join(
                    json.dumps({"time": stamp, **result_record(r, by_entity.get(r.entity)), **extra},
                               ensure_ascii=False) + "\n"
                    for r in fresh
                )  # fmt: skip
                try:
                    log.write(text)
                    log.flush()
                except OSError as e:  # a full disk: the writes happened all the same; stop and say so
                    seen.update((r.entity, r) for r in fresh)
                    name = getattr(log, "name", "the log")
                    raise QuotaError(
                        f"cannot write the log {name}: {e.strerror or e}; stopped, the last "
                        f"{counted(len(fresh), 'entity', 'entities')} applied may be missing from it"
                    ) from None
            seen.update((r.entity, r) for r in fresh)
        if progress is not None and fresh:
            progress(fresh)

    diffs = the_plan.diffs
    chunk = chunk or backend.apply_chunk
    for start in range(0, len(diffs), chunk):
        part = diffs[start : start + chunk]
        try:
            results = backend.alter(
                [d.change() for d in part],
                validate_only=dry_run,
                expected={d.entity: d.before for d in part},
                progress=add,
            )
        except (QuotaError, KeyboardInterrupt) as e:  # Interrupted (Ctrl-C in the backend) included: exit 130
            written = any(r.outcome is Outcome.APPLIED for r in seen.values())
            if isinstance(e, QuotaError) and not isinstance(e, PartialFailure) and not written:
                raise QuotaError(f"{e}; nothing was applied") from None
            out.partial = _stopped(backend, e, the_plan, part, out, seen, add)
            _tally(out, seen, by_entity, keep_records)
            return out
        add(results)
    _tally(out, seen, by_entity, keep_records)
    return out


def _tally(
    out: Applied, seen: Mapping[Entity, EntityResult], by_entity: Mapping[Entity, EntityDiff], keep_records: bool
) -> None:
    """The counts, failures, labels applied and records of :class:`Applied`, from the results as logged."""
    for r in seen.values():
        out.counts[r.outcome.value] += 1
        if r.outcome in (Outcome.REJECTED, Outcome.NOT_ATTEMPTED):
            out.failed.append(r)
        elif r.outcome is Outcome.APPLIED:
            out.applied.append(r.entity.label())
        if keep_records:
            out.records.append(result_record(r, by_entity.get(r.entity)))


def _stopped(
    backend: QuotaBackend,
    error: QuotaError | KeyboardInterrupt,
    the_plan: Plan,
    part: Sequence[EntityDiff],
    out: Applied,
    seen: Mapping[Entity, EntityResult],
    add: Callable[[Sequence[EntityResult]], None],
) -> PartialFailure:
    """Where an apply stopped by ``error`` (in the chunk ``part``) leaves each entity: applied (logged), not
    applied, or unknown (the write in flight, read back to resolve it where the cluster answers)."""
    from kquotactl.core.partial import apply_failure

    by_label = {d.entity.label(): d for d in the_plan.diffs}
    if isinstance(error, PartialFailure):
        cause, stopped = error.cause, error.exit_code == EXIT_INTERRUPTED
        # applied by the backend's own account but not reported as it landed (a Ctrl-C just before its report)
        add([EntityResult(d.entity, Outcome.APPLIED, d.before, d.after) for d in _diffs(by_label, error.applied)])
        in_flight = _diffs(by_label, error.unknown)
    elif isinstance(error, KeyboardInterrupt):  # outside a backend's bookkeeping: what it did not report is unknown
        cause, stopped, in_flight = "interrupted", True, [d for d in part if d.entity not in seen]
    else:
        cause, stopped, in_flight = str(error), False, []
    in_flight = [d for d in in_flight if d.entity not in seen]
    if isinstance(error, PartialFailure) and error.read_back:  # the backend read them back already
        unknown, out.read_back = [d.entity for d in in_flight], ""
    else:
        unknown, out.read_back = _read_back(backend, in_flight, add)
    gone = set(unknown)
    applied = [e.label() for e, r in seen.items() if r.outcome is Outcome.APPLIED]
    not_applied = [
        d.entity.label()
        for d in the_plan.diffs
        if d.entity not in gone and (d.entity not in seen or seen[d.entity].outcome in _NOT_WRITTEN)
    ]
    return apply_failure(
        QuotaError(cause),
        applied,
        not_applied,
        [d.entity.label() for d in the_plan.diffs if d.entity in gone],
        interrupted=stopped,
    )


_NOT_WRITTEN = (Outcome.REJECTED, Outcome.NOT_ATTEMPTED)


def _diffs(by_label: Mapping[str, EntityDiff], labels: Iterable[str]) -> list[EntityDiff]:
    return [by_label[label] for label in labels if label in by_label]


def _read_back(
    backend: QuotaBackend, in_flight: Sequence[EntityDiff], add: Callable[[Sequence[EntityResult]], None]
) -> tuple[list[Entity], str]:
    """Read the entities whose write was in flight when the apply stopped: at their planned values they were
    applied (logged now), at their old values not; the rest stay unknown. Returns those and what was found, in
    words. A cluster that does not answer (or a second Ctrl-C) leaves them all unknown."""
    import time

    from kquotactl.core.filters import EntityFilter
    from kquotactl.core.wording import counted

    if not in_flight:
        return [], ""
    settle = backend.read_after_write_settle
    wanted = {d.entity for d in in_flight}
    covering = EntityFilter.covering(wanted)  # one describe request (one scan) that reads them all
    pending = list(in_flight)
    found: list[EntityResult] = []
    try:
        for attempt in READ_BACK_POLL.within(settle).tries(time.monotonic, time.sleep):
            live = {r.entity: dict(r.config) for r in backend.describe(covering) if r.entity in wanted}
            landed = {d.entity for d in pending if live.get(d.entity, {}) == dict(d.after)}
            found += [
                EntityResult(d.entity, Outcome.APPLIED, d.before, d.after, message="read back")
                for d in pending
                if d.entity in landed
            ]
            pending = [d for d in pending if d.entity not in landed]
            at_before = {d.entity for d in pending if live.get(d.entity, {}) == dict(d.before)}
            if not at_before or attempt.last:
                break  # (a lagging broker may show an applied write late: read again, within the settle time)
    except (QuotaError, KeyboardInterrupt) as e:
        add(found)
        why = "interrupted" if isinstance(e, KeyboardInterrupt) else str(e)
        return [
            d.entity for d in pending
        ], f"{counted(len(pending), 'entity')} in flight could not be read back ({why})"
    add(found)
    unknown = [d.entity for d in pending if d.entity not in at_before]
    words = f"read back the {counted(len(in_flight), 'entity')} in flight: {len(found)} applied, "
    words += f"{len(at_before)} not applied" + (f", {len(unknown)} changed by someone else" if unknown else "")
    return unknown, words


@dataclass(frozen=True)
class LoggedApply:
    """A plain apply read back from its ``--log``: its plan, the entities logged as done (``applied`` or
    ``unchanged``) after the plan's header, and the cluster it was applied to."""

    plan: Plan
    done: frozenset[Entity]
    target: dict[str, str] | None


def read_apply_log(path: str) -> LoggedApply | None:
    """The last run in the log ``path``: a plain apply, or None when it is a staged one
    (:func:`kquotactl.services.staged.read_staged_log`). A log can hold several runs: the last header wins."""
    from kquotactl.core.plan import Plan

    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise UsageError(f"cannot read the log {path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"cannot read the log {path}: byte {e.start} is not UTF-8") from None
    from kquotactl.core.wording import record_problem

    records: list[tuple[int, Any]] = []  # (line number, its JSON), a last line cut short left out
    header: tuple[int, dict[str, Any]] | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as e:
            if header is not None and number == len(lines) and not line.endswith("}"):
                break  # a last line cut short (a full disk, a crash): its entity is read back from the cluster
            raise UsageError(f"{path}:{number}: not a line of an apply log ({record_problem(e)})") from None
        if isinstance(data, dict) and (LOG_PLAN in data or "staged" in data):
            header, records = (number, data), []
        else:
            records.append((number, data))
    if header is None:
        raise NothingLogged(path)
    number, data = header
    if "staged" in data:
        return None
    try:
        the_plan = Plan.from_json(data[LOG_PLAN], f"{path}:{number}")
    except QuotaError as e:
        raise UsageError(str(e)) from None
    done: set[Entity] = set()
    for at, record in records:
        try:
            if record.get("outcome") in ("applied", "unchanged"):
                done.add(Entity.from_json(record["entity"]))
        except (ValueError, KeyError, TypeError, AttributeError, QuotaError) as e:
            raise UsageError(f"{path}:{at}: not a line of an apply log ({record_problem(e)})") from None
    target = (data[LOG_PLAN].get("target") or None) if isinstance(data[LOG_PLAN], dict) else None
    return LoggedApply(the_plan, frozenset(done), target)


def resume_plan(backend: QuotaBackend, logged: LoggedApply) -> Plan:
    """What is left of a logged apply: the entities not logged as done, checked against the live values first.
    A logged entity must be at its planned values; any other at its planned values (a write whose answer never
    came) is done, at its old values still to do. Anything else was changed by someone else: refused, nothing
    written."""
    from kquotactl.core.manifest import entity_path_text
    from kquotactl.core.plan import Plan
    from kquotactl.core.wording import counted

    live = {r.entity: dict(r.config) for r in backend.describe()}
    left, wrong = [], []
    for d in logged.plan.diffs:
        have = live.get(d.entity, {})
        if have == dict(d.after):
            continue
        if d.entity not in logged.done and have == dict(d.before):
            left.append(d)
        else:
            wrong.append(d)
    if wrong:
        first = wrong[0]
        names = ", ".join(entity_path_text(d.entity) for d in wrong[:5]) + (" ..." if len(wrong) > 5 else "")
        found = _config_words(live.get(first.entity, {}))
        expected = _config_words(first.after) + (
            "" if first.entity in logged.done else f" or {_config_words(first.before)}"
        )
        raise QuotaError(
            f"not resumed, nothing written: the live values of {counted(len(wrong), 'entity')} ({names}) are not what "
            f"the log expects (changed by someone else?): {entity_path_text(first.entity)} has {found}, "
            f"the log expects {expected}; plan and apply again"
        )
    return Plan(left, None, prune=logged.plan.prune, live=())


def _config_words(config: Mapping[str, Any]) -> str:
    from kquotactl.core.keys import KEYS, format_value

    return ", ".join(f"{k}={format_value(KEYS[k], v)}" for k, v in config.items()) or "no quota"


def open_writable(backend: QuotaBackend | Callable[[], QuotaBackend]) -> QuotaBackend:
    """The backend (opened when given as a function), once whatever it would refuse to write is refused: before a
    plan is shown and confirmed, not after."""
    backend = opened(backend)
    backend.check_writable()
    return backend


@dataclass(frozen=True)
class ResumedApply:
    """What is left of a logged plain apply (:func:`resume`): the backend, the plan of the entities still to do,
    and how many of the logged plan's ``total`` entities were ``done``."""

    backend: QuotaBackend
    plan: Plan
    done: int
    total: int


def resume(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    logged: LoggedApply,
    *,
    path: str,
    cluster: str,
    manifest: Manifest | None = None,
) -> ResumedApply:
    """Resume the plain apply logged in ``path`` (read by :func:`read_apply_log`) on ``cluster``: refused, nothing
    written, when ``manifest`` (if given) asks for other values than the log, when the log is for another cluster,
    or when the live values are not what the log expects (:func:`resume_plan`). ``backend`` may be a function that
    opens it: a log refused for itself never connects."""
    from kquotactl.core.manifest import entity_path_text

    if manifest is not None:
        for d in logged.plan.diffs:
            entry = manifest.get(d.entity)
            if entry is not None and dict(entry.config) != dict(d.after):
                raise LogMismatch(str(entry.source), entity_path_text(d.entity), path)
    if logged.target and logged.target.get("cluster") != cluster:
        raise UsageError(f"{path} logs an apply to {logged.target.get('cluster')}, not {cluster}")
    backend = open_writable(backend)
    left = resume_plan(backend, logged)
    total = len(logged.plan.diffs)
    return ResumedApply(backend, left, total - len(left.diffs), total)
