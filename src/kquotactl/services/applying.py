"""``apply`` as one service in two phases, so that a caller can show what would be written and ask before it is:
:func:`prepare` reads what to apply (a plan made from manifests, a saved plan, or the log of an apply to resume,
staged or not) and refuses what would be refused before anything is written; the :class:`PendingApply` it returns
says what would be written, and :meth:`PendingApply.commit` writes it: in chunks with the log, or stage by stage with
the check between stages, then (``verify``) waits until every broker reports the values.

The pieces are :mod:`kquotactl.services.plans` (plan, apply, resume), :mod:`kquotactl.services.staged` and
:mod:`kquotactl.services.verify`; this module only decides which run, in which order."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from kquotactl.backends.base import ProgressCallback, QuotaBackend, opened
from kquotactl.core.errors import ApplyRefused
from kquotactl.services.plans import (
    Applied,
    apply,
    apply_log_header,
    check_applicable,
    check_fresh,
    open_writable,
    read_apply_log,
    read_plan_file,
    resume,
)

if TYPE_CHECKING:  # types only: the modules load inside the functions that use them
    from kquotactl.core.entities import Entity
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.plan import Plan
    from kquotactl.core.stages import StagedPlan
    from kquotactl.services.staged import StagedApplied, StageEvent
    from kquotactl.services.verify import Converged

#: a line for the person applying: a warning, or where a resume starts
Say = Callable[[str], None]
#: what plans the manifests when neither a saved plan nor a log is given: the backend, the plan, the manifest
Planner = Callable[[], "tuple[QuotaBackend, Plan, Manifest | None]"]


def _ignore(_line: str) -> None:
    return None


def _append(path: str) -> IO[str]:
    return open(path, "a", encoding="utf-8")


@dataclass(frozen=True)
class ApplySettings:
    """How to apply: ``dry_run`` (validated, nothing written), ``max_deletions`` (None: the default limit),
    ``log_path`` (one JSON line per entity, appended), ``stages`` (lowered limits in that many steps, of
    ``stage_shape``; an entry's own ``stages:`` too) with ``interval`` seconds between them and, with ``prometheus``
    or the ``scrape`` URLs, the brokers' sensors checked between them; ``verify``: wait until every broker reports
    what was applied (``verify_sample``: that many entities of it)."""

    dry_run: bool = False
    max_deletions: int | None = None
    log_path: str | None = None
    stages: int | None = None
    stage_shape: str = "geometric"
    interval: float | None = None
    prometheus: str | None = None
    scrape: Sequence[str] = ()
    verify: bool = False
    verify_sample: int | None = None


@dataclass(frozen=True)
class Committed:
    """What :meth:`PendingApply.commit` did: the plain apply's :class:`~kquotactl.services.plans.Applied`, or the
    staged apply's :class:`~kquotactl.services.staged.StagedApplied`; ``verified``: the entities every broker
    reported (None: not asked)."""

    applied: Applied | None = None
    staged: StagedApplied | None = None
    verified: list[Converged] | None = None


@dataclass
class PendingApply:
    """What :func:`prepare` found to apply, nothing written yet: the ``plan`` (None when ``resuming`` a staged
    apply) or its ``staged`` form with the ``interval`` between stages, the cluster it goes to (``target``), the
    log it appends to (``log_path``: a resumed apply's own log), and for a resumed staged apply, the stage each
    entity is at (``done``) and the first stage to write (``resumed_stage``; None: every entity is at its
    target)."""

    backend: QuotaBackend
    plan: Plan | None
    settings: ApplySettings
    target: dict[str, str]
    log_path: str | None = None
    staged: StagedPlan | None = None
    interval: float = 0.0
    resuming: bool = False
    done: dict[Entity, int] = field(default_factory=dict)
    resumed_stage: int | None = None

    @property
    def pending(self) -> bool:
        """Whether anything is left to write."""
        if self.resuming:
            return self.resumed_stage is not None
        return self.plan is not None and self.plan.pending

    def commit(
        self,
        *,
        timeout: float = 30.0,
        open_log: Callable[[str], IO[str]] = _append,
        progress: ProgressCallback | None = None,
        on_event: Callable[[StageEvent], None] | None = None,
        on_applied: Callable[[Applied], None] | None = None,
        keep_records: bool = False,
    ) -> Committed:
        """Write it: stage by stage (``on_event``: each stage applied, checked, waited for; ``timeout``: how long
        the check after a stage waits for every broker), or the plan in chunks (``progress``: the results as they
        land; ``keep_records``: as :func:`kquotactl.services.plans.apply`). ``on_applied`` gets the plain apply's
        result before it is verified (it may raise to stop there); an apply that stopped midway, failed for an
        entity or was a dry run is not verified. ``open_log``: how the log is opened for appending."""
        if self.staged is not None:
            return Committed(staged=self._stages(open_log, on_event, timeout))
        assert self.plan is not None
        s = self.settings
        applied = self._apply(open_log, progress, keep_records)
        if on_applied is not None:
            on_applied(applied)
        if s.dry_run or not s.verify or applied.partial is not None or applied.failed:
            return Committed(applied)
        from kquotactl.services.verify import verify_plan_applied

        checked = verify_plan_applied(self.backend, self.plan, applied.applied, timeout=timeout, sample=s.verify_sample)
        return Committed(applied, verified=checked)

    def _apply(
        self, open_log: Callable[[str], IO[str]], progress: ProgressCallback | None, keep_records: bool
    ) -> Applied:
        """The plain apply, with the log open (a real apply starts it with the plan, so a resume needs nothing
        else)."""
        assert self.plan is not None
        log = None
        if self.log_path is not None:
            log = open_log(self.log_path)
            if not self.settings.dry_run:
                log.write(apply_log_header(self.plan, self.target))
                log.flush()
        try:
            return apply(
                self.backend,
                self.plan,
                dry_run=self.settings.dry_run,
                max_deletions=self.settings.max_deletions,
                log=log,
                keep_records=keep_records,
                progress=progress,
            )
        finally:
            if log is not None:
                with contextlib.suppress(OSError):  # flushed after every write: a failure was reported already
                    log.close()

    def _stages(
        self, open_log: Callable[[str], IO[str]], on_event: Callable[[StageEvent], None] | None, timeout: float
    ) -> StagedApplied:
        """The staged apply (:func:`kquotactl.services.staged.run_stages`), with the log open."""
        from kquotactl.services.staged import StageObserver, run_stages

        assert self.staged is not None
        s = self.settings
        observer = StageObserver(s.prometheus, s.scrape) if (s.prometheus or s.scrape) else None
        log = open_log(self.log_path) if self.log_path is not None else None
        try:
            return run_stages(
                self.backend,
                self.staged,
                interval=self.interval,
                done=self.done,
                log=log,
                target=self.target,
                observer=observer,
                timeout=timeout,
                max_deletions=s.max_deletions,
                on_event=on_event,
            )
        finally:
            if log is not None:
                log.close()


def prepare(
    backend: Callable[[], QuotaBackend],
    settings: ApplySettings,
    *,
    cluster: str,
    planner: Planner | None = None,
    plan_path: str | None = None,
    resume_path: str | None = None,
    manifest: Callable[[], Manifest | None] | None = None,
    warn: Say = _ignore,
    say: Say = _ignore,
) -> PendingApply:
    """What to apply to ``cluster`` (``backend`` opens it), nothing written: the apply logged in ``resume_path``
    (staged or not; ``manifest``, if it gives one, must ask for the logged values), else the saved plan
    ``plan_path`` (refused when the cluster changed since), else what ``planner`` plans. Refused before anything is
    written: a backend that would refuse the writes (not for a dry run), too many deletions and keys no live
    cluster accepts (:func:`kquotactl.services.plans.check_applicable`), settings that do not fit what was read
    (:class:`kquotactl.core.errors.ApplyRefused`). ``warn``: what the person applying should know; ``say``: where
    a resumed apply starts."""
    if resume_path is not None:
        logged = read_apply_log(resume_path)
        if logged is None:  # the last run in the log is a staged apply
            return _resume_staged(backend, settings, resume_path, cluster, manifest)
        if settings.prometheus or settings.scrape or settings.interval is not None:
            raise ApplyRefused("stage-options", path=resume_path)
        if settings.verify_sample is not None and not settings.verify:
            raise ApplyRefused("verify-sample")
        resumed = resume(
            backend, logged, path=resume_path, cluster=cluster, manifest=manifest() if manifest is not None else None
        )
        say(_resume_words(resume_path, resumed.plan.pending, resumed.done, resumed.total))
        return _pending(resumed.backend, resumed.plan, None, settings, cluster, resume_path, warn)
    if plan_path is not None:
        the_backend, the_plan = _saved(backend, plan_path, settings.dry_run, cluster, warn)
        return _pending(the_backend, the_plan, None, settings, cluster, settings.log_path, warn)
    if planner is None:
        raise ValueError("nothing to apply: give a planner, a saved plan or a log to resume")
    if not settings.dry_run:
        open_writable(backend)  # refused before the manifests are planned, shown and confirmed
    the_backend, the_plan, the_manifest = planner()
    return _pending(the_backend, the_plan, the_manifest, settings, cluster, settings.log_path, warn)


def _resume_words(path: str, pending: bool, done: int, total: int) -> str:
    from kquotactl.core.wording import counted

    if pending:
        return f"resuming {path}: {counted(done, 'entity')} of {total} done"
    return f"nothing to resume: every entity of {path} is applied"


def _saved(
    backend: Callable[[], QuotaBackend], path: str, dry_run: bool, cluster: str, warn: Say
) -> tuple[QuotaBackend, Plan]:
    """The saved plan ``path``, refused when the live quotas changed since it was made."""
    from kquotactl.services.quotas import describe

    saved = read_plan_file(path)
    the_backend = opened(backend) if dry_run else open_writable(backend)
    described = describe(the_backend)
    for w in described.warnings:
        warn(w)
    check_fresh(saved, described.records)
    if saved.target and saved.target != cluster:
        warn(f"the plan was made against {saved.target}, applying to {cluster}")
    return the_backend, saved.plan


def _pending(
    backend: QuotaBackend,
    the_plan: Plan,
    manifest: Manifest | None,
    settings: ApplySettings,
    cluster: str,
    log_path: str | None,
    warn: Say,
) -> PendingApply:
    """The plan checked (refused before it is shown and confirmed), cut into stages when asked for."""
    check_applicable(the_plan, settings.max_deletions)
    pending = PendingApply(backend, the_plan, settings, {"backend": backend.name, "cluster": cluster}, log_path)
    if not the_plan.pending:
        return pending
    from kquotactl.core.stages import staged_plan_of

    staged = staged_plan_of(the_plan, manifest, settings.stages, settings.stage_shape)
    pending.interval = _interval(settings.interval, staged)
    if staged is not None and staged.count <= 1:
        warn("no limit is lowered: nothing to stage, applied at once")
        staged = None
    pending.staged = staged
    return pending


def _interval(seconds: float | None, staged: StagedPlan | None) -> float:
    """The wait between stages: needed by a staged apply of more than one stage, refused without one."""
    if staged is None:
        if seconds is not None:
            raise ApplyRefused("interval-unstaged")
        return 0.0
    if seconds is None:
        if staged.count <= 1:
            return 0.0
        raise ApplyRefused("interval-needed", count=str(staged.count))
    return seconds


def _resume_staged(
    backend: Callable[[], QuotaBackend],
    settings: ApplySettings,
    path: str,
    cluster: str,
    manifest: Callable[[], Manifest | None] | None,
) -> PendingApply:
    """The staged apply logged in ``path``, from where the live values say each entity is
    (:func:`kquotactl.services.staged.resume_staged`), at the logged interval unless ``settings`` gives one."""
    from kquotactl.services.staged import read_staged_log, resume_staged

    logged = read_staged_log(path)
    given = manifest() if manifest is not None else None
    resumed = resume_staged(backend, logged, path=path, cluster=cluster, manifest=given)
    return PendingApply(
        resumed.backend,
        None,
        settings,
        {"backend": resumed.backend.name, "cluster": cluster},
        path,
        staged=logged.staged,
        interval=logged.interval if settings.interval is None else settings.interval,
        resuming=True,
        done=resumed.done,
        resumed_stage=resumed.first,
    )
