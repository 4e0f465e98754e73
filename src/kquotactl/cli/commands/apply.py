"""``kquotactl apply``: make the cluster match the manifests (or a saved plan): show, confirm, apply, report; the
staged apply (``--stages``, ``--resume``) and ``--verify``.

Only click is imported at module level; the manifest, plan and backend modules load inside the command.
Exit status: 0 applied (or nothing to do), 2 ``--dry-run`` with changes / declined / not verified, 1 error,
130 interrupted.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.manifestargs import (
    dump,
    echo_err,
    files_option,
    live_records,
    load,
    max_deletions_option,
    output_format,
    planned_from_args,
    prune_option,
    stage_shape_option,
    staged_plan_of,
    stages_option,
    summary,
    target_of,
    terminal_width,
)
from kquotactl.cli.options import principal_rule_options
from kquotactl.cli.signals import stopped_by
from kquotactl.cli.state import AppState, pass_state
from kquotactl.cli.terminal import confirm
from kquotactl.core.errors import EXIT_PENDING, QuotaError, UsageError

if TYPE_CHECKING:
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.plan import Plan
    from kquotactl.core.stages import StagedPlan
    from kquotactl.services.plans import Applied, LoggedApply
    from kquotactl.services.staged import StagedApplied, StageEvent, StageObserver

#: entities a large plan shows before apply summarises it (--verbose: all of them)
PLAN_SHOWN = 20


@click.command(cls=OnceCommand)
@files_option(required=False)
@click.option("--plan", "plan_path", metavar="FILE", type=click.Path(dir_okay=False), help="Apply a saved plan.")
@prune_option
@max_deletions_option
@click.option("--dry-run", is_flag=True, help="Show and check the changes; write nothing (exit 2 if any).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (needed when not on a terminal).")
@click.option(
    "--verbose",
    "verbose",
    is_flag=True,
    help=f"List every entity of the plan (a plan of more than {PLAN_SHOWN} entities is otherwise summarised).",
)
@click.option(
    "--log", "log_path", metavar="FILE", type=click.Path(dir_okay=False), help="Append one JSON line per entity."
)
@stages_option
@stage_shape_option
@click.option(
    "--interval",
    metavar="DURATION",
    help="--stages: wait this long between stages (5m, 90s, 1h, or seconds), after each stage's check "
    "(--resume: the logged one unless given).",
)
@click.option(
    "--resume",
    "resume_path",
    metavar="LOG",
    type=click.Path(dir_okay=False),
    help="Continue the apply logged in LOG (--log), staged or not, from where it stopped (appends to LOG).",
)
@click.option(
    "--prometheus", metavar="URL", help="--stages: also check the brokers' quota sensors (as top) between stages."
)
@click.option("--scrape", "scrape_urls", metavar="URL", multiple=True, help="--stages: as --prometheus, per broker.")
@click.option(
    "--verify",
    "verify",
    is_flag=True,
    help="After applying, wait until every broker reports each changed entity's values (as kquotactl verify; "
    "exit 2 if one does not within --timeout). A staged apply (--stages) does so after every stage.",
)
@click.option(
    "--verify-sample",
    type=click.IntRange(min=1),
    metavar="N",
    help="--verify: check N of the changed entities (evenly spread), not all.",
)
@principal_rule_options
@pass_state
@click.pass_context
def apply(
    ctx: click.Context,
    state: AppState,
    files: Sequence[str],
    plan_path: str | None,
    prune: bool,
    max_deletions: int,
    dry_run: bool,
    yes: bool,
    verbose: bool,
    log_path: str | None,
    stages: int | None,
    stage_shape: str,
    interval: str | None,
    resume_path: str | None,
    prometheus: str | None,
    scrape_urls: Sequence[str],
    verify: bool,
    verify_sample: int | None,
    **rule_kw: Any,
) -> None:
    """Make the cluster match the manifests: show the plan, confirm, apply.

    Each entity's sets and removes go in one write; when a limit moves between precedence levels the
    more specific entry is written before the general one is removed. A second apply is a no-op (no
    writes, no notifications). If something fails midway, the entities applied and not applied are
    listed; re-running converges.

    \b
    Examples:
      kquotactl --zookeeper zk:2181/kafka apply -f quotas.yaml
      kquotactl --zookeeper zk:2181/kafka apply -f quotas/ --prune --yes
      kquotactl --zookeeper zk:2181/kafka apply --plan plan.json --yes
      kquotactl --zookeeper zk:2181/kafka apply -f quotas.yaml --dry-run
      kquotactl --bootstrap-server b:9092 apply -f quotas.yaml --stages 4 --interval 5m --log stages.log
      kquotactl --bootstrap-server b:9092 apply --resume stages.log --yes

    With --stages N (or an entry's stages:), each lowered limit goes down in N steps (geometric by default):
    stage by stage, the values are read back (and with --prometheus/--scrape, no throttled client may get
    worse than the stage predicts), then apply waits --interval. A failed check or Ctrl-C stops it and
    says which stage each entity is at; --resume LOG continues from there.
    """
    fmt = output_format(state)
    interval_seconds = _duration(interval)
    observe = bool(prometheus or scrape_urls)
    _refuse_combinations(plan_path, stages, prune, dry_run, log_path, resume_path, prometheus, scrape_urls)
    resumed = None
    if resume_path is not None:
        from kquotactl.services.plans import read_apply_log

        resumed = read_apply_log(resume_path)
        if resumed is None:  # the last run in the log is a staged apply
            _resume(ctx, state, files, resume_path, interval_seconds, yes, prometheus, scrape_urls, max_deletions)
            return
        if observe or interval_seconds is not None:
            raise UsageError(
                f"{resume_path} logs an apply without stages: --interval, --prometheus, --scrape do not apply"
            )
    _refuse_apply_options(files, plan_path, dry_run, log_path, verify, verify_sample, resumed is not None)
    if resumed is not None and resume_path is not None:
        backend, the_plan = _resume_plain(state, ctx, files, resume_path, resumed)
        manifest = None
        log_path = resume_path
    else:
        backend, the_plan, manifest = _plan_to_apply(state, ctx, files, plan_path, prune, dry_run, rule_kw)
    from kquotactl.services.plans import check_applicable

    check_applicable(the_plan, max_deletions)  # refused before the plan is shown and confirmed
    target = target_of(state, backend)
    if not the_plan.pending:
        _nothing_to_apply(the_plan, fmt)
        return
    staged = staged_plan_of(the_plan, manifest, stages, stage_shape)
    seconds = _interval(interval_seconds, staged)
    if staged is not None and staged.count <= 1:
        state.warn("no limit is lowered: nothing to stage, applied at once")
        staged = None
    _show_and_confirm(ctx, state, the_plan, staged, fmt, target, seconds, dry_run, yes, verbose)
    timeout = state.connection().timeout
    if staged is not None:
        observer = _observer(prometheus, scrape_urls)
        _run_stages(backend, staged, {}, seconds, log_path, max_deletions, observer, target, timeout)
        return
    result = _apply_with_progress(
        backend, the_plan, dry_run, max_deletions, log_path, keep_records=fmt != "table", target=target
    )
    if result.partial is not None:
        _stopped_report(result, None if dry_run else log_path)
    _finish(result, the_plan, fmt, dry_run)
    if dry_run:
        ctx.exit(EXIT_PENDING)
    if verify:
        _verify_applied(backend, the_plan, result, verify_sample, timeout)


def _nothing_to_apply(the_plan: Plan, fmt: str) -> None:
    """A plan with nothing pending: the empty results (-o json/yaml) and the plan's summary line."""
    from kquotactl.render.plans import plan_summary

    if fmt in ("json", "yaml"):
        dump({"summary": the_plan.counts(), "results": []}, fmt, sys.stdout)
    summary(plan_summary(the_plan), fmt)


def _verify_applied(backend: QuotaBackend, the_plan: Plan, result: Applied, sample: int | None, timeout: float) -> None:
    """``apply --verify`` (:func:`kquotactl.services.verify.verify_plan_applied`): exit 2 unless every applied
    entity (or a sample) is reported by every broker."""
    from kquotactl.core.wording import counted
    from kquotactl.services.verify import verify_plan_applied

    checked = verify_plan_applied(backend, the_plan, result.applied, timeout=timeout, sample=sample)
    source = checked[0].source if checked else "nothing to check"
    echo_err(f"verified: {counted(len(checked), 'entity')} reported by every broker ({source})")


def _refuse_combinations(
    plan_path: str | None,
    stages: int | None,
    prune: bool,
    dry_run: bool,
    log_path: str | None,
    resume_path: str | None,
    prometheus: str | None,
    scrape_urls: Sequence[str],
) -> None:
    """The options that do not go together, refused before any file is read."""
    if (prometheus or scrape_urls) and not (stages or resume_path):
        raise UsageError("--prometheus and --scrape check between stages: they go with --stages N or --resume LOG")
    if prometheus and scrape_urls:
        raise UsageError("give either --prometheus URL or --scrape URL (one per broker), not both")
    if resume_path is not None:
        if plan_path or stages or prune or dry_run:
            raise UsageError(
                "--resume LOG continues the logged apply: --plan, --stages, --prune, --dry-run do not apply"
            )
        if log_path is not None:
            raise UsageError("--resume LOG appends to LOG: --log does not apply")


def _refuse_apply_options(
    files: Sequence[str],
    plan_path: str | None,
    dry_run: bool,
    log_path: str | None,
    verify: bool,
    verify_sample: int | None,
    resuming: bool,
) -> None:
    """What an apply without stages refuses before anything is planned or written (the ``--log`` file too)."""
    if (verify_sample is not None) and not verify:
        raise UsageError("--verify-sample goes with --verify")
    if verify and dry_run:
        raise UsageError("--verify checks what was applied: a --dry-run applies nothing")
    if log_path is not None:
        from kquotactl.render.outfiles import check_file

        check_file(log_path, "--log")  # before anything is planned or written
    if files and plan_path:
        raise UsageError("give the manifests (-f FILE) or a saved plan (--plan FILE), not both")
    if not files and not plan_path and not resuming:
        raise UsageError("nothing to apply: give the manifests (-f FILE) or a saved plan (--plan FILE)")


def _plan_to_apply(
    state: AppState,
    ctx: click.Context,
    files: Sequence[str],
    plan_path: str | None,
    prune: bool,
    dry_run: bool,
    rule_kw: dict[str, Any],
) -> tuple[QuotaBackend, Plan, Manifest | None]:
    """The backend, the plan and its manifest: a saved plan (``--plan``, refused when stale) or one made from the
    manifests; a backend that would refuse the writes is refused first (not for a dry run)."""
    from kquotactl.services.plans import check_fresh, open_writable, read_plan_file

    if not plan_path:
        if not dry_run:
            open_writable(state.backend(ctx))
        return planned_from_args(state, ctx, files, prune, (), rule_kw=rule_kw)
    if prune:
        raise UsageError("--prune is decided when the plan is made (kquotactl plan --prune --out FILE)")
    saved = read_plan_file(plan_path)
    if not dry_run:
        open_writable(state.backend(ctx))
    backend, live = live_records(state, ctx, ())
    check_fresh(saved, live)
    if saved.target and saved.target != state.conn.with_env().target:
        state.warn(f"the plan was made against {saved.target}, applying to {state.conn.with_env().target}")
    return backend, saved.plan, None


def _show_and_confirm(
    ctx: click.Context,
    state: AppState,
    the_plan: Plan,
    staged: StagedPlan | None,
    fmt: str,
    target: dict[str, str],
    seconds: float,
    dry_run: bool,
    yes: bool,
    verbose: bool,
) -> None:
    """The plan (and its stages) as a table, then the confirmation; a staged dry run and a declined apply end here
    (exit 2: the changes are still pending)."""
    from kquotactl.core.wording import counted
    from kquotactl.render.plans import render_plan, render_stages

    if fmt == "table":
        shown = None if (verbose or state.verbose) else PLAN_SHOWN
        render_plan(the_plan, fmt, sys.stdout, width=terminal_width(), target=target, shown=shown)
        if staged is not None:
            render_stages(staged, sys.stdout)
    if staged is not None and dry_run:
        summary(f"would apply in {staged.count} stages, {seconds:g} s apart (dry run, nothing written)", fmt)
        ctx.exit(EXIT_PENDING)
    if not dry_run and not yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so no confirmation possible: pass --yes to apply")
        if not confirm(f"Apply changes to {counted(len(the_plan.diffs), 'entity')} on {target['cluster']}?"):
            summary("not applied: nothing was written (changes still pending)", "json")
            ctx.exit(EXIT_PENDING)  # declined: not an error, but the changes are still pending, as after a plan


# -- staged apply ---------------------------------------------------------------------------------------


def _duration(text: str | None) -> float | None:
    """``--interval`` in seconds (checked before anything is read or written)."""
    if text is None:
        return None
    from kquotactl.core.timespec import parse_duration

    return parse_duration(text, "--interval", allow_zero=True)


def _interval(seconds: float | None, staged: StagedPlan | None) -> float:
    """The wait between stages: needed by a staged apply of more than one stage, refused without one."""
    if staged is None:
        if seconds is not None:
            raise UsageError("--interval is the wait between stages: it goes with --stages N (or --resume LOG)")
        return 0.0
    if seconds is None:
        if staged.count <= 1:
            return 0.0
        raise UsageError(f"a staged apply ({staged.count} stages) needs --interval DURATION (5m, 90s, 1h)")
    return seconds


def _stage_event(event: StageEvent, log_path: str | None) -> None:
    from kquotactl.core.wording import counted

    where = f"stage {event.stage}/{event.count}"
    if event.what == "applied":
        echo_err(f"{where}: applied {counted(event.entities, 'entity')}")
    elif event.what == "checked":
        echo_err(f"{where}: checked")
    elif event.what == "waiting":
        resume = f"; resume with apply --resume {log_path}" if log_path else ""
        echo_err(f"waiting {event.seconds:g} s before {where} (Ctrl-C stops{resume})")


def _observer(prometheus: str | None, scrape_urls: Sequence[str]) -> StageObserver | None:
    """The brokers' sensors checked between stages (``--prometheus``/``--scrape``), or None."""
    from kquotactl.services.staged import StageObserver

    return StageObserver(prometheus, scrape_urls) if (prometheus or scrape_urls) else None


def _run_stages(
    backend: QuotaBackend,
    staged: StagedPlan,
    done: dict[Any, int],
    seconds: float,
    log_path: str | None,
    max_deletions: int,
    observer: StageObserver | None,
    target: dict[str, str] | None,
    timeout: float,
) -> None:
    """Run :func:`kquotactl.services.staged.run_stages` with the ``--log`` open, progress on stderr, and the report
    of where it stopped. ``timeout``: how long the check after each stage waits for every broker to report the
    stage's values."""
    from kquotactl.services.staged import run_stages

    log = None
    if log_path is not None:
        from kquotactl.render.outfiles import open_file

        log = open_file(log_path, "--log", "a")
    try:
        result = run_stages(
            backend,
            staged,
            interval=seconds,
            done=done,
            log=log,
            target=target,
            observer=observer,
            timeout=timeout,
            max_deletions=max_deletions,
            on_event=lambda ev: _stage_event(ev, log_path),
        )
    finally:
        if log is not None:
            log.close()
    if result.finished:
        click.echo(f"applied all {staged.count} stages: every entity is at its target")
        return
    _stage_report(result, log_path)


def _stage_report(result: StagedApplied, log_path: str | None) -> None:
    """Where a stopped staged apply is: why, then per entity its stage and the values written, then how to resume."""
    from kquotactl.core.keys import KEYS, human_and_raw
    from kquotactl.core.manifest import entity_path_text

    n = result.staged.count
    echo_err(f"kquotactl: stopped at stage {result.stopped_at} of {n}: {result.stopped}")
    for line in result.details:
        echo_err(f"  {line}")
    for e in result.staged.entities:
        k = result.done[e.entity]
        values = ", ".join(f"{key} {human_and_raw(KEYS[key], v)}" for key, v in e.at(k).items()) or "no quota"
        total = len(e.steps)
        state = "done" if k >= total else f"stage {k} of {total}"
        echo_err(f"{entity_path_text(e.entity)}: {state} ({values})")
    how = f"kquotactl apply --resume {log_path}" if log_path else "re-run apply (no --log: the stages start again)"
    error = QuotaError(f"staged apply stopped at stage {result.stopped_at} of {n} (listed above); to continue: {how}")
    if result.interrupted:
        from kquotactl.core.errors import EXIT_INTERRUPTED

        error.exit_code = EXIT_INTERRUPTED
    raise error


def _resume(
    ctx: click.Context,
    state: AppState,
    files: Sequence[str],
    resume_path: str,
    interval: float | None,
    yes: bool,
    prometheus: str | None,
    scrape_urls: Sequence[str],
    max_deletions: int,
) -> None:
    """``apply --resume LOG`` of a staged apply (:func:`kquotactl.services.staged.resume_staged`): the logged
    schedule, shown and confirmed, then run from where the live values say each entity is."""
    from kquotactl.render.plans import render_stages
    from kquotactl.services.staged import read_staged_log, resume_staged

    logged = read_staged_log(resume_path)
    manifest = load(files) if files else None
    cluster = state.conn.with_env().target
    resumed = resume_staged(lambda: state.backend(ctx), logged, path=resume_path, cluster=cluster, manifest=manifest)
    staged = logged.staged
    if resumed.first is None:
        click.echo(f"nothing to resume: every entity of {resume_path} is at its target")
        return
    seconds = logged.interval if interval is None else _interval(interval, staged)
    click.echo(f"resuming {resume_path} at stage {resumed.first} of {staged.count}", err=True)
    render_stages(staged, sys.stdout)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so no confirmation possible: pass --yes to apply")
        if not confirm(f"Resume on {cluster}?"):
            ctx.exit(EXIT_PENDING)
    target = target_of(state, resumed.backend)
    timeout = state.connection().timeout
    observer = _observer(prometheus, scrape_urls)
    _run_stages(resumed.backend, staged, resumed.done, seconds, resume_path, max_deletions, observer, target, timeout)


def _resume_plain(
    state: AppState, ctx: click.Context, files: Sequence[str], resume_path: str, logged: LoggedApply
) -> tuple[QuotaBackend, Plan]:
    """``apply --resume LOG`` of an apply without stages (:func:`kquotactl.services.plans.resume`): the logged
    plan's entities still to do."""
    from kquotactl.core.wording import counted
    from kquotactl.services.plans import resume

    manifest = load(files) if files else None
    cluster = state.conn.with_env().target
    resumed = resume(lambda: state.backend(ctx), logged, path=resume_path, cluster=cluster, manifest=manifest)
    if resumed.plan.pending:
        echo_err(f"resuming {resume_path}: {counted(resumed.done, 'entity')} of {resumed.total} done")
    else:
        echo_err(f"nothing to resume: every entity of {resume_path} is applied")
    return resumed.backend, resumed.plan


def _stopped_report(result: Applied, log_path: str | None) -> None:
    """An apply that stopped midway: the summary, then at most a screenful of entities (every one in a report
    file), then the error line with how to continue; raises it (exit 1, 130 Ctrl-C, 143 SIGTERM)."""
    import shlex

    from kquotactl.core.errors import EXIT_INTERRUPTED
    from kquotactl.render.records import PARTIAL_SHOWN, partial_lines, partial_report

    failure = result.partial
    assert failure is not None
    notes = [result.read_back] if result.read_back else []
    if log_path is not None:
        notes.append(f"{log_path} logs every entity applied, one JSON line each")
    every = partial_lines(failure)
    report = _write_report(every, notes) if len(every) > PARTIAL_SHOWN else None
    how = f"to continue: kquotactl apply --resume {shlex.quote(log_path)}" if log_path else "re-run apply to converge"
    stopped = stopped_by() if failure.exit_code == EXIT_INTERRUPTED else None
    lines, final = partial_report(failure, how=how, notes=notes, report=report, stopped=stopped)
    for line in lines:
        echo_err(line)
    raise final from None


def _write_report(lines: Sequence[str], notes: list[str]) -> str | None:
    """Every entity of a stopped apply, one line each, in a new file in the temporary directory: its path (None and
    a note saying why when it cannot be written)."""
    import datetime
    import os
    import tempfile

    stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
    try:
        fd, path = tempfile.mkstemp(prefix=f"kquotactl-apply-{stamp}-", suffix=".txt", text=True)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
    except OSError as e:
        notes.append(f"could not write the full report: {e.strerror or e}")
        return None
    return path


def _apply_with_progress(
    backend: QuotaBackend,
    the_plan: Plan,
    dry_run: bool,
    max_deletions: int,
    log_path: str | None,
    keep_records: bool,
    target: dict[str, str] | None = None,
) -> Applied:
    """:func:`kquotactl.services.plans.apply`, with a progress bar on a terminal and the ``--log`` file open (a real
    apply starts it with the plan, :func:`kquotactl.services.plans.apply_log_header`)."""
    from kquotactl.services.plans import apply as apply_service
    from kquotactl.services.plans import apply_log_header

    progress_bar = None
    if sys.stderr.isatty() and len(the_plan.diffs) >= 100 and not dry_run:
        from rich.console import Console
        from rich.progress import Progress

        progress_bar = Progress(console=Console(stderr=True), transient=True)
        progress_bar.start()
    task = progress_bar.add_task("applying", total=len(the_plan.diffs)) if progress_bar else None
    advance = (lambda done: progress_bar.advance(task, len(done))) if progress_bar else None  # type: ignore[arg-type]
    log = None
    if log_path is not None:
        from kquotactl.render.outfiles import open_file

        log = open_file(log_path, "--log", "a")
        if not dry_run:
            log.write(apply_log_header(the_plan, target))
            log.flush()
    try:
        return apply_service(
            backend,
            the_plan,
            dry_run=dry_run,
            max_deletions=max_deletions,
            log=log,
            keep_records=keep_records,
            progress=advance,
        )
    finally:
        if log is not None:
            with contextlib.suppress(OSError):  # flushed after every write: a failure was reported already
                log.close()
        if progress_bar is not None:
            progress_bar.stop()


def _finish(result: Applied, the_plan: Plan, fmt: str, dry_run: bool) -> None:
    """The per-entity failures, the summary line and (``-o json/yaml``) the records of an apply."""
    from kquotactl.core.wording import counted
    from kquotactl.render.records import result_line

    if fmt in ("json", "yaml"):
        dump({"summary": result.counts, "results": result.records}, fmt, sys.stdout)
    if fmt == "table":
        by_entity = {d.entity: d for d in the_plan.diffs}
        for r in result.failed:
            meta = by_entity[r.entity].meta if r.entity in by_entity else {}
            extra = f" [{' '.join(f'{k}={v}' for k, v in meta.items())}]" if meta else ""
            echo_err(result_line(r) + extra)
    c = result.counts
    word = "would apply" if dry_run else "applied"
    line = (
        f"{word} {counted(c['validated' if dry_run else 'applied'], 'entity')}, "
        f"{c['unchanged']} already as desired, {len(result.failed)} failed"
    )
    summary(line + (" (dry run, nothing written)" if dry_run else ""), fmt)
    if result.failed:
        done = sum(c.values()) - len(result.failed)
        labels = ", ".join(r.entity.label() for r in result.failed[:5]) + (" ..." if len(result.failed) > 5 else "")
        raise QuotaError(
            f"{counted(len(result.failed), 'entity')} not applied ({labels}); {counted(done, 'entity')} "
            "as planned; "
            "fix the cause and re-run apply"
        )
