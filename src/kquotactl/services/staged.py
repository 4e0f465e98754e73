"""The staged apply (``apply --stages``): the stage loop over :func:`kquotactl.services.plans.apply`, the check between
stages, its log and where a resumed run starts."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from kquotactl.backends.base import QuotaBackend
from kquotactl.core.entities import Entity
from kquotactl.core.errors import (
    EXIT_INTERRUPTED,
    BackendUnavailable,
    LogMismatch,
    NothingLogged,
    QuotaError,
    UsageError,
)
from kquotactl.core.keys import Number
from kquotactl.services.plans import Applied, apply, open_writable
from kquotactl.services.quotas import load_quota_set
from kquotactl.services.verify import verify_applied

if TYPE_CHECKING:  # types only: the modules load inside the services that use them
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.stages import StagedPlan


@dataclass(frozen=True)
class StepCheck:
    """What the check between two stages found: ``mismatches`` (an entity's live values are not what the stage
    wrote: someone else changed them, or the write did not take) and ``regressions`` (quota-ids throttled worse
    than the stage predicts, :func:`kquotactl.observe.throttled.stage_regressions`). Empty both: go on."""

    mismatches: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    waited: float = 0.0  # seconds the check took (waiting for a restarting broker, one behind)

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.regressions


#: the between-stage check :func:`apply_stages` calls: the backend, and each entity's config the stage leaves
StepChecker = Callable[["QuotaBackend", "Mapping[Entity, Mapping[str, Number]]"], StepCheck]


def live_mismatches(backend: QuotaBackend, expected: Mapping[Entity, Mapping[str, Number]]) -> list[str]:
    """One line per entity whose live config (as describe reads it) is not ``expected``, naming each key."""
    from kquotactl.core.keys import KEYS, human_and_raw
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
                hw = "unset" if h is None else human_and_raw(KEYS[k], h)
                ww = "unset" if w is None else human_and_raw(KEYS[k], w)
                parts.append(f"{k} is {hw} on the cluster, expected {ww}")
        out.append(f"{entity_path_text(entity)}: {', '.join(parts)}")
    return out


def applied_mismatches(
    backend: QuotaBackend, expected: Mapping[Entity, Mapping[str, Number]], timeout: float
) -> tuple[list[str], float]:
    """One line per entity not applied as ``expected``: through the admin API, a broker that does not report it
    within ``timeout`` (:func:`verify_applied`); else the live config as describe reads it
    (:func:`live_mismatches`). And the seconds it took (waiting for a restarting broker, one behind)."""
    import time

    t0 = time.monotonic()
    if not backend.asks_each_broker:
        return live_mismatches(backend, expected), time.monotonic() - t0
    from kquotactl.core.verify import lag_message

    checked = verify_applied(backend, [(e, c) for e, c in expected.items()], timeout=timeout)
    late = [lag_message(c.entity.label(), c.expected, c.lagging, c.waited) for c in checked if not c.converged]
    return late, time.monotonic() - t0


class StageObserver:
    """The quota sensors (as ``kquotactl top`` reads them: a Prometheus server, or the brokers' JMX exporter
    endpoints) before and after each stage, for :func:`check_step`'s regression rule."""

    def __init__(self, prometheus: str | None = None, scrape: Sequence[str] = ()) -> None:
        self.prometheus = prometheus
        self.scrape = list(scrape)
        self.last: list[Any] | None = None  # the rows of the last look (kquotactl.observe.throttled.QuotaIdRow)

    def look(self, backend: QuotaBackend) -> list[Any]:
        """The sensors now, joined with the limits the backend describes now."""
        from kquotactl.observe import prometheus as source
        from kquotactl.observe.throttled import top_rows

        samples = source.fresh_from_prometheus(self.prometheus) if self.prometheus else source.scrape(self.scrape)
        return top_rows(samples, load_quota_set(backend).index)

    def baseline(self, backend: QuotaBackend) -> None:
        self.last = self.look(backend)

    def regressions(self, backend: QuotaBackend) -> list[str]:
        """What got worse since the last look (which this look replaces)."""
        from kquotactl.observe.throttled import stage_regressions

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
    mismatches, waited = applied_mismatches(backend, expected, timeout)
    if mismatches or observer is None:
        return StepCheck(mismatches, waited=waited)
    return StepCheck(regressions=observer.regressions(backend), waited=waited)


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
        except BackendUnavailable as e:  # a broker silent for the whole bound: written, not confirmed
            return stop(k, f"the check after stage {k} could not ask every broker", [str(e)])
        if not found.ok:
            why = "the check after the stage failed"
            return stop(k, why, [*found.mismatches, *found.regressions])
        event("checked", k, seconds=found.waited)
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
    from kquotactl.core.wording import record_problem

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
            raise UsageError(f"{path}:{number}: not a line of a staged apply log ({record_problem(e)})") from None
    if staged is None:
        raise NothingLogged(path, staged=True)
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


def run_stages(
    backend: QuotaBackend,
    staged: StagedPlan,
    *,
    interval: float,
    done: Mapping[Entity, int] | None = None,
    log: IO[str] | None = None,
    target: Mapping[str, str] | None = None,
    observer: StageObserver | None = None,
    timeout: float = 30.0,
    max_deletions: int | None = None,
    on_event: Callable[[StageEvent], None] | None = None,
) -> StagedApplied:
    """A staged apply as ``apply --stages`` runs it: :func:`apply_stages` with :func:`check_step` between stages
    (each broker reports the stage's values within ``timeout`` seconds; ``observer``: no throttled client got
    worse, against a baseline read first). ``log``: a fresh run (no ``done``) starts it with the schedule
    (:func:`staged_log_header`, with ``target``), so that :func:`resume_staged` needs nothing else."""
    import functools

    if log is not None and not done:
        log.write(staged_log_header(staged, interval, target))
        log.flush()
    if observer is not None:
        observer.baseline(backend)
    return apply_stages(
        backend,
        staged,
        interval=interval,
        done=done,
        check=functools.partial(check_step, observer=observer, timeout=timeout),
        log=log,
        max_deletions=max_deletions,
        on_event=on_event,
    )


@dataclass(frozen=True)
class ResumedStages:
    """Where a logged staged apply resumes (:func:`resume_staged`): the backend, the log read back, ``done`` (entity
    -> the last stage the live values show) and the first stage to write (None: every entity is at its target)."""

    backend: QuotaBackend
    logged: StagedLog
    done: dict[Entity, int]

    @property
    def first(self) -> int | None:
        staged = self.logged.staged
        if all(self.done[e.entity] >= len(e.steps) for e in staged.entities):
            return None
        return min(self.done.values()) + 1


def resume_staged(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    logged: StagedLog,
    *,
    path: str,
    cluster: str,
    manifest: Manifest | None = None,
) -> ResumedStages:
    """Resume the staged apply logged in ``path`` (read by :func:`read_staged_log`) on ``cluster``, from where the
    live values say each entity is (:func:`resume_point`). Refused, nothing written, when ``manifest`` (if given)
    asks for other targets than the logged stages, the log is for another cluster, or the live values are not what
    the log says. Run the rest with :func:`run_stages` (``done``: :attr:`ResumedStages.done`)."""
    from kquotactl.core.manifest import entity_path_text

    if manifest is not None:
        for e in logged.staged.entities:
            entry = manifest.get(e.entity)
            if entry is not None and any(e.steps[-1].get(k) != v for k, v in entry.config.items()):
                raise LogMismatch(str(entry.source), entity_path_text(e.entity), path, staged=True)
    backend = open_writable(backend)
    if logged.target and logged.target.get("cluster") != cluster:
        raise UsageError(f"{path} logs a staged apply to {logged.target.get('cluster')}, not {cluster}")
    return ResumedStages(backend, logged, resume_point(backend, logged))
