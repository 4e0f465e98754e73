"""Plan a manifest against the live quotas, read a saved plan back, and apply a plan in chunks with an exact report of
what was applied when it stops midway."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from kquotactl.backends.base import ProgressCallback, QuotaBackend
from kquotactl.core.errors import EXIT_INTERRUPTED, PartialFailure, QuotaError, UsageError
from kquotactl.core.model import EntityResult, Outcome, QuotaRecord, check_live_changes
from kquotactl.services.quotas import backend_warnings

if TYPE_CHECKING:  # types only: the modules load inside the services that use them
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.plan import EntityDiff, Plan

#: entities per backend call of :func:`apply`: bounds the backend's working set (reads, ops, results)
APPLY_CHUNK = 5000


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
    info: list[str] = []
    if manifest.budgets:
        budgets = resolve_budgets(manifest, brokers if brokers is not None else len(backend.broker_ids()))
        manifest = budgets.manifest
        budget_notes, info = budgets.notes(live), budgets.described()
    the_plan = make_plan(manifest, live, prune=prune, keep_hint=keep_hint)
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
        out["path"] = entity_path_text(diff.entity, quoted=False)
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
