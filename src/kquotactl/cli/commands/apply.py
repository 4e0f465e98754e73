"""``kquotactl apply``: make the cluster match the manifests (or a saved plan): show, confirm, apply, report; the
staged apply (``--stages``, ``--resume``) and ``--verify``.

Only click is imported at module level; the manifest, plan and backend modules load inside the command.
Exit status: 0 applied (or nothing to do), 2 ``--dry-run`` with changes / declined / not verified, 1 error,
130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.manifestargs import (
    dump,
    echo_err,
    files_option,
    load,
    max_deletions_option,
    output_format,
    planned_from_args,
    prune_option,
    stage_shape_option,
    stages_option,
    summary,
    terminal_width,
)
from kquotactl.cli.options import principal_rule_options
from kquotactl.cli.signals import stopped_by
from kquotactl.cli.state import AppState, pass_state
from kquotactl.cli.terminal import confirm
from kquotactl.core.errors import EXIT_PENDING, QuotaError, UsageError

if TYPE_CHECKING:
    from kquotactl.core.plan import Plan
    from kquotactl.services.applying import ApplySettings, Committed, PendingApply
    from kquotactl.services.plans import Applied
    from kquotactl.services.staged import StagedApplied, StageEvent

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
    from kquotactl.render.outfiles import open_file
    from kquotactl.services.applying import prepare

    fmt = output_format(state)
    settings = _settings(
        dry_run, max_deletions, log_path, stages, stage_shape, interval, prometheus, scrape_urls, verify, verify_sample
    )
    _refuse_combinations(plan_path, stages, prune, dry_run, log_path, resume_path, prometheus, scrape_urls)
    if resume_path is None:  # (a resumed apply's are refused once its log is read: they depend on its kind)
        _refuse_apply_options(files, plan_path, prune, dry_run, log_path, verify, verify_sample)
    pending = prepare(
        lambda: state.backend(ctx),
        settings,
        cluster=state.conn.with_env().target,
        planner=lambda: planned_from_args(state, ctx, files, prune, (), rule_kw=rule_kw),
        plan_path=plan_path,
        resume_path=resume_path,
        manifest=lambda: load(files) if files else None,
        warn=state.warn,
        say=echo_err,
    )
    if not pending.pending:
        _nothing_to_apply(pending, fmt)
        return
    _show_and_confirm(ctx, state, pending, fmt, yes, verbose)
    with _ProgressBar(pending) as bar:
        committed = pending.commit(
            timeout=state.connection().timeout,
            open_log=lambda path: open_file(path, "--log", "a"),
            progress=bar.advance,
            on_event=lambda event: _stage_event(event, pending.log_path),
            on_applied=lambda result: _applied(bar, pending, result, fmt),
            keep_records=fmt != "table",
        )
    _committed(ctx, pending, committed)


def _settings(
    dry_run: bool,
    max_deletions: int,
    log_path: str | None,
    stages: int | None,
    stage_shape: str,
    interval: str | None,
    prometheus: str | None,
    scrape_urls: Sequence[str],
    verify: bool,
    verify_sample: int | None,
) -> ApplySettings:
    """The apply's settings; ``--interval`` parsed first (before anything is read or written)."""
    from kquotactl.services.applying import ApplySettings

    seconds = _duration(interval)
    scrape = tuple(scrape_urls)
    return ApplySettings(
        dry_run, max_deletions, log_path, stages, stage_shape, seconds, prometheus, scrape, verify, verify_sample
    )


def _nothing_to_apply(pending: PendingApply, fmt: str) -> None:
    """Nothing left to write: a staged apply to resume whose entities are at their targets; or a plan with nothing
    pending: the empty results (-o json/yaml) and the plan's summary line."""
    from kquotactl.render.plans import plan_summary

    if pending.plan is None:
        click.echo(f"nothing to resume: every entity of {pending.log_path} is at its target")
        return
    if fmt in ("json", "yaml"):
        dump({"summary": pending.plan.counts(), "results": []}, fmt, sys.stdout)
    summary(plan_summary(pending.plan), fmt)


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
    prune: bool,
    dry_run: bool,
    log_path: str | None,
    verify: bool,
    verify_sample: int | None,
) -> None:
    """What an apply (not a resumed one) refuses before anything is planned or written (the ``--log`` file too)."""
    if (verify_sample is not None) and not verify:
        raise UsageError("--verify-sample goes with --verify")
    if verify and dry_run:
        raise UsageError("--verify checks what was applied: a --dry-run applies nothing")
    if log_path is not None:
        from kquotactl.render.outfiles import check_file

        check_file(log_path, "--log")  # before anything is planned or written
    if files and plan_path:
        raise UsageError("give the manifests (-f FILE) or a saved plan (--plan FILE), not both")
    if not files and not plan_path:
        raise UsageError("nothing to apply: give the manifests (-f FILE) or a saved plan (--plan FILE)")
    if plan_path and prune:
        raise UsageError("--prune is decided when the plan is made (kquotactl plan --prune --out FILE)")


def _show_and_confirm(
    ctx: click.Context, state: AppState, pending: PendingApply, fmt: str, yes: bool, verbose: bool
) -> None:
    """The plan (and its stages) as a table, then the confirmation; a staged dry run and a declined apply end here
    (exit 2: the changes are still pending)."""
    from kquotactl.core.wording import counted
    from kquotactl.render.plans import render_plan, render_stages

    if pending.resuming:
        _confirm_resume(ctx, pending, yes)
        return
    the_plan, staged, dry_run = pending.plan, pending.staged, pending.settings.dry_run
    assert the_plan is not None
    if fmt == "table":
        shown = None if (verbose or state.verbose) else PLAN_SHOWN
        render_plan(the_plan, fmt, sys.stdout, width=terminal_width(), target=pending.target, shown=shown)
        if staged is not None:
            render_stages(staged, sys.stdout)
    if staged is not None and dry_run:
        summary(f"would apply in {staged.count} stages, {pending.interval:g} s apart (dry run, nothing written)", fmt)
        ctx.exit(EXIT_PENDING)
    if not dry_run and not yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so no confirmation possible: pass --yes to apply")
        question = f"Apply changes to {counted(len(the_plan.diffs), 'entity')} on {pending.target['cluster']}?"
        if not confirm(question):
            summary("not applied: nothing was written (changes still pending)", "json")
            ctx.exit(EXIT_PENDING)  # declined: not an error, but the changes are still pending, as after a plan


def _confirm_resume(ctx: click.Context, pending: PendingApply, yes: bool) -> None:
    """``apply --resume LOG`` of a staged apply: the logged schedule, and where it resumes, confirmed."""
    from kquotactl.render.plans import render_stages

    assert pending.staged is not None
    click.echo(f"resuming {pending.log_path} at stage {pending.resumed_stage} of {pending.staged.count}", err=True)
    render_stages(pending.staged, sys.stdout)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so no confirmation possible: pass --yes to apply")
        if not confirm(f"Resume on {pending.target['cluster']}?"):
            ctx.exit(EXIT_PENDING)


class _ProgressBar:
    """A transient bar on stderr while a large plan is applied on a terminal (nothing otherwise)."""

    def __init__(self, pending: PendingApply) -> None:
        self.bar: Any = None
        the_plan = pending.plan
        if pending.staged is not None or the_plan is None or pending.settings.dry_run:
            return
        if sys.stderr.isatty() and len(the_plan.diffs) >= 100:
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("applying", total=len(the_plan.diffs))

    def advance(self, done: Sequence[Any]) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, len(done))

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __enter__(self) -> _ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _applied(bar: _ProgressBar, pending: PendingApply, result: Applied, fmt: str) -> None:
    """A plain apply's result, before it is verified: where it stopped (raised), or the failures and summary."""
    bar.stop()
    dry_run = pending.settings.dry_run
    if result.partial is not None:
        _stopped_report(result, None if dry_run else pending.log_path)
    assert pending.plan is not None
    _finish(result, pending.plan, fmt, dry_run)


def _committed(ctx: click.Context, pending: PendingApply, committed: Committed) -> None:
    """The end of an apply: a staged one's last line or where it stopped (raised); a dry run's exit 2; what
    ``--verify`` checked."""
    from kquotactl.core.wording import counted

    if committed.staged is not None:
        if not committed.staged.finished:
            _stage_report(committed.staged, pending.log_path)
        click.echo(f"applied all {committed.staged.staged.count} stages: every entity is at its target")
        return
    if pending.settings.dry_run:
        ctx.exit(EXIT_PENDING)
    if committed.verified is not None:
        source = committed.verified[0].source if committed.verified else "nothing to check"
        echo_err(f"verified: {counted(len(committed.verified), 'entity')} reported by every broker ({source})")


# -- staged apply ---------------------------------------------------------------------------------------


def _duration(text: str | None) -> float | None:
    """``--interval`` in seconds (checked before anything is read or written)."""
    if text is None:
        return None
    from kquotactl.core.timespec import parse_duration

    return parse_duration(text, "--interval", allow_zero=True)


def _stage_event(event: StageEvent, log_path: str | None) -> None:
    from kquotactl.core.wording import counted

    where = f"stage {event.stage}/{event.count}"
    if event.what == "applied":
        echo_err(f"{where}: applied {counted(event.entities, 'entity')}")
    elif event.what == "checked":
        echo_err(f"{where}: checked in {event.seconds:.1f} s")
    elif event.what == "waiting":
        resume = f"; resume with apply --resume {log_path}" if log_path else ""
        echo_err(f"waiting {event.seconds:g} s before {where} (Ctrl-C stops{resume})")


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
