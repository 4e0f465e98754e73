"""Manifest commands for CI: ``validate``, ``plan``, ``apply`` and ``export``.

Only click is imported at module level; the manifest, plan and backend modules load inside the commands.
Exit status: 0 success / in sync, 2 changes pending (``plan``, ``apply --dry-run``), 1 error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

import click

from kquotactl.cli.errorwords import KEEP_HINT
from kquotactl.cli.kit import CI_REPORTS, AppState, OnceCommand, pass_state
from kquotactl.cli.options import principal_rule_options
from kquotactl.core.errors import EXIT_PENDING, QuotaError, UsageError

if TYPE_CHECKING:
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.model import QuotaRecord
    from kquotactl.core.plan import Plan
    from kquotactl.core.stages import StagedPlan
    from kquotactl.services.plans import Applied
    from kquotactl.services.staged import StagedApplied, StageEvent

FILES_HELP = "A manifest file, a directory of *.yaml/*.yml/*.json files, or - for stdin; repeat to merge."


def files_option(required: bool = True) -> Any:
    return click.option("-f", "--file", "files", multiple=True, required=required, metavar="PATH", help=FILES_HELP)


def _fmt(state: AppState, default: str = "table") -> str:
    fmt = state.output or default
    if fmt == "kafka":
        raise UsageError("-o kafka is for describe; manifest commands print table, json or yaml")
    return fmt


def _ci(report: Any, fmt: str) -> None:
    from kquotactl.render.ci import render

    sys.stdout.write(render(report, fmt))


def _load(files: Sequence[str], rule_kw: dict[str, Any] | None = None, super_users: str | None = None) -> Any:
    """The manifests, ``principal:`` entries mapped with the rules given (``principal_rule_options``)."""
    from kquotactl.manifests.loader import load_manifests

    principals = _principals(rule_kw, super_users) if rule_kw else None
    return load_manifests(list(files), principals=principals)


def _principals(rule_kw: dict[str, Any], super_users: str | None = None) -> Any:
    """The rules (and super users) given on the command line: manifests are read before any cluster."""
    from kquotactl.cli.principalargs import given_principals, pop_rule_args

    return given_principals(pop_rule_args(dict(rule_kw)), super_users)


def _echo_err(line: str) -> None:
    from kquotactl.core.errors import one_line

    click.echo(one_line(line), err=True)  # problems quote the manifest: control characters escaped, length capped


def _dump(data: Any, fmt: str, out: IO[str]) -> None:
    from kquotactl.render.records import dump_json, dump_yaml

    (dump_yaml if fmt == "yaml" else dump_json)(data, out)


def _live(state: AppState, ctx: click.Context, live_from: Sequence[str]) -> tuple[QuotaBackend, list[QuotaRecord]]:
    """The backend and every live quota (``--live-from`` reads a saved export/manifest instead of a cluster)."""
    from kquotactl.services.quotas import describe

    backend = _backend(state, ctx, live_from)
    described = describe(backend)
    for w in described.warnings:
        state.warn(w)
    return backend, described.records


def _backend(state: AppState, ctx: click.Context, live_from: Sequence[str]) -> QuotaBackend:
    """The cluster's backend, or (``--live-from``) the read-only manifest backend over a saved export/manifest."""
    if live_from:
        from kquotactl.backends.manifest import ManifestBackend

        return ManifestBackend.open(list(live_from))
    return state.backend(ctx)


def _target(state: AppState, backend: QuotaBackend) -> dict[str, str]:
    return {"backend": backend.name, "cluster": state.conn.with_env().target}


# -- rendering ------------------------------------------------------------------------------------------


def _num(key: str, v: Any) -> str:
    """``6 MiB/s (6291456)``: the unit the manifest used, and the exact number written."""
    from kquotactl.core.keys import KEYS, human_and_raw

    return human_and_raw(KEYS[key], v)


def plan_rows(plan: Plan) -> list[list[str]]:
    rows = []
    for d in plan.diffs:
        meta = " ".join(f"{k}={v}" for k, v in d.meta.items())
        origin = " ".join(x for x in (d.source or "(not in manifest: prune)", meta) if x)
        from kquotactl.core.manifest import entity_path_text

        path = entity_path_text(d.entity)
        for i, k in enumerate(d.keys):
            rows.append(
                [
                    d.action.value if i == 0 else "",
                    path if i == 0 else "",
                    k.key,
                    k.op.value,
                    _num(k.key, k.old),
                    _num(k.key, k.new),
                    origin if i == 0 else "",
                ]
            )
    return rows


def terminal_width() -> int | None:
    """The terminal's columns when stdout is one (tables must fit it), else ``None`` (a pipe, a CI log)."""
    if not sys.stdout.isatty():
        return None
    import shutil

    return shutil.get_terminal_size().columns


def table_width(header: list[str], rows: list[list[str]]) -> int:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    return sum(widths) + 2 * (len(widths) - 1)


def write_plan_blocks(plan: Plan, out: IO[str], width: int) -> None:
    """The plan for a narrow terminal: per entity a line (action, path, and the source when it fits beside them,
    else on a line of its own) and one indented line per key."""
    from kquotactl.core.manifest import entity_path_text

    for d in plan.diffs:
        meta = " ".join(f"{k}={v}" for k, v in d.meta.items())
        origin = " ".join(x for x in (d.source or "(not in manifest: prune)", meta) if x)
        head = f"{d.action.value} {entity_path_text(d.entity)}"
        out.write(f"{head}  {origin}\n" if len(head) + 2 + len(origin) <= width else f"{head}\n    ({origin})\n")
        for k in d.keys:
            change = _num(k.key, k.new) if k.old is None else f"{_num(k.key, k.old)} -> {_num(k.key, k.new)}"
            out.write(f"    {k.key} {k.op.value} {change}\n")


def write_table(header: list[str], rows: list[list[str]], out: IO[str]) -> None:
    """A plain aligned table (fast for 10,000s of rows, readable in CI logs)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    out.write("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip() + "\n")
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


PLAN_SHOWN = 20  # entities a large plan shows before apply summarises it (--verbose: all of them)


def render_plan(
    plan: Plan, fmt: str, out: IO[str], target: dict[str, str] | None = None, shown: int | None = None
) -> None:
    """The plan as a table (every entity, or the first ``shown`` ones followed by counts per action)."""
    if fmt in ("json", "yaml"):
        _dump(plan.to_json(target), fmt, out)
        return
    if not plan.diffs:
        return
    header = ["ACTION", "ENTITY", "KEY", "OP", "OLD", "NEW", "SOURCE"]
    head = plan if shown is None or len(plan.diffs) <= shown else type(plan)(plan.diffs[:shown], plan.fingerprint)
    rows = plan_rows(head)
    width = terminal_width()
    if width is not None and table_width(header, rows) > width:
        write_plan_blocks(head, out, width)
    else:
        write_table(header, rows, out)
    if head is plan or shown is None:
        return
    from kquotactl.core.wording import counted

    c = plan.counts()
    per_action = ", ".join(f"{c[a]} to {a}" for a in ("create", "update", "delete") if c[a])
    out.write(
        f"... and {counted(len(plan.diffs) - shown, 'more entity', 'more entities')} (--verbose lists them all)\n"
        f"in all: {per_action}\n"
    )


def _summary(line: str, fmt: str) -> None:
    """The summary line: on stdout for tables, on stderr when stdout carries JSON/YAML."""
    click.echo(line, err=fmt != "table")


# -- commands -------------------------------------------------------------------------------------------


@click.command(cls=OnceCommand)
@files_option()
@click.option("--strict", is_flag=True, help="Treat lint warnings as errors (exit 1).")
@principal_rule_options
@click.option(
    "--super-users",
    metavar="User:A;User:B",
    help="The brokers' super.users: lint warns about default quotas that would throttle them.",
)
@pass_state
def validate(state: AppState, files: Sequence[str], strict: bool, super_users: str | None, **rule_kw: Any) -> None:
    """Check manifests offline: structure, every key and value, entities, and lint.

    Errors are printed as FILE:LINE: MESSAGE, the line being that of the offending value or key. Lint
    warnings name quotas that can never apply (for example a client-id quota hidden by a <default> user
    quota, with the entry that hides it) and keys stock brokers do not enforce. Nothing is contacted.

    -o json/yaml prints one object, valid or not: valid, entities, kinds (users, pairs, clients, ips),
    prune, errors and warnings. Every error and warning is an object with source (FILE:LINE, or null)
    and message; warnings add entity, keys and code.

    \b
    Examples:
      kquotactl validate -f quotas.yaml
      kquotactl validate -f quotas/ -f team-b.yaml --strict
      kquotactl validate -f quotas.yaml -o json
    """
    from kquotactl.core.lint import lint
    from kquotactl.core.manifest import ManifestError

    fmt = _fmt(state)
    try:
        manifest = _load(files, rule_kw, super_users)
    except ManifestError as e:
        n = len(e.problems)
        from kquotactl.core.wording import counted

        if fmt in CI_REPORTS:
            from kquotactl.render.ci import invalid_report

            _ci(invalid_report("validate", e.problems, counted(n, "problem")), fmt)
        elif fmt in ("json", "yaml"):
            _dump(
                {
                    "valid": False,
                    "entities": 0,
                    "kinds": {"users": 0, "pairs": 0, "clients": 0, "ips": 0},
                    "prune": [],
                    "errors": [problem_json(p) for p in e.problems],
                    "warnings": [],
                },
                fmt,
                sys.stdout,
            )
        else:
            for p in e.problems:
                _echo_err(p)
        raise QuotaError(f"{counted(n, 'problem')} in the manifest; nothing was written") from None
    warnings = lint(manifest, _principals(rule_kw, super_users))
    kinds = _kinds(manifest)
    from kquotactl.core.wording import counted

    words = {
        "users": ("user", "users"),
        "pairs": ("pair", "pairs"),
        "clients": ("client", "clients"),
        "ips": ("ip", "ips"),
    }
    counts = ", ".join(counted(v, *words[k]) for k, v in kinds.items() if v)
    summary = (
        f"valid: {counted(len(manifest), 'entity')} ({counts or 'none'}) in {counted(len(manifest.files), 'file')}, "
        f"{counted(len(warnings), 'warning')}"
    )
    if fmt in CI_REPORTS:
        from kquotactl.render.ci import validate_report

        _ci(validate_report(manifest, warnings, strict, summary), fmt)
    elif fmt in ("json", "yaml"):
        _dump(
            {
                "valid": not (strict and warnings),
                "entities": len(manifest),
                "kinds": kinds,
                "prune": [r.pattern for r in manifest.prune],
                "errors": [],
                "warnings": [w.to_json() for w in warnings],
            },
            fmt,
            sys.stdout,
        )
    else:
        for w in warnings:
            _echo_err(str(w))
    _summary(summary, fmt)
    if strict and warnings:
        raise QuotaError(f"{counted(len(warnings), 'lint warning')} and --strict")


def problem_json(problem: str) -> dict[str, str | None]:
    """A manifest problem (``FILE:LINE: MESSAGE``) as ``validate -o json`` gives it: ``{source, message}``."""
    import re

    m = re.match(r"^(.*?:\d+): (.*)$", problem, re.S)
    return {"source": m.group(1), "message": m.group(2)} if m else {"source": None, "message": problem}


def _kinds(manifest: Manifest) -> dict[str, int]:
    out = {"users": 0, "pairs": 0, "clients": 0, "ips": 0}
    for e in manifest.entries:
        ent = e.entity
        key = (
            "ips"
            if ent.ip is not None
            else "pairs"
            if ent.user is not None and ent.client_id is not None
            else ("users" if ent.user is not None else "clients")
        )
        out[key] += 1
    return out


def _plan(
    state: AppState,
    ctx: click.Context,
    files: Sequence[str],
    prune: bool,
    live_from: Sequence[str],
    ci_fmt: str | None = None,
    brokers: int | None = None,
    rule_kw: dict[str, Any] | None = None,
) -> Any:
    """The backend, the plan and the manifest (``ci_fmt``: a CI report format, which renders the manifest's problems
    when it does not load; ``brokers``: the broker count cluster-wide budgets are divided by, else the live one)."""
    from kquotactl.core.manifest import ManifestError
    from kquotactl.services.plans import plan as plan_service

    try:
        manifest = _load(files, rule_kw)  # before connecting: a bad manifest never reaches the cluster
    except ManifestError as e:
        if ci_fmt is None:
            raise
        from kquotactl.render.ci import invalid_report

        n = len(e.problems)
        _ci(invalid_report("plan", e.problems, f"{n} problem{'s' if n != 1 else ''}"), ci_fmt)
        raise QuotaError(f"{n} problem{'s' if n != 1 else ''} in the manifest; nothing was planned") from None
    if prune and not manifest.prune:
        raise UsageError('--prune needs a prune scope in the manifest (prune: ["users/svc-*", ...])')
    planned = plan_service(
        lambda: _backend(state, ctx, live_from),
        manifest,
        prune=prune,
        offline=bool(live_from),
        keep_hint=KEEP_HINT,
        brokers=brokers,
    )
    for line in [*planned.warnings, *planned.notes]:
        state.warn(line)
    return planned.backend, planned.plan, planned.manifest


prune_option = click.option(
    "--prune",
    is_flag=True,
    help="Also remove live quota entities and keys the manifest does not declare, inside its prune scope.",
)
max_deletions_option = click.option(
    "--max-deletions",
    type=click.IntRange(0),
    default=50,  # core.plan.DEFAULT_MAX_DELETIONS (tests/test_services.py checks; not imported: --help stays light)
    show_default=True,
    metavar="N",
    help="Refuse (nothing written) when more than N entities would lose quotas.",
)
stages_option = click.option(
    "--stages",
    type=click.IntRange(1, 100),
    metavar="N",
    help="Lower limits in N steps (raises, new and removed keys go in the first); an entry's stages: overrides it.",
)
stage_shape_option = click.option(
    "--stage-shape",
    type=click.Choice(["geometric", "linear"]),
    default="geometric",
    show_default=True,
    help="--stages: each step lowers by the same factor (geometric) or the same amount (linear).",
)
live_from_option = click.option(
    "--live-from",
    multiple=True,
    metavar="PATH",
    help="Compare against a saved export/manifest instead of a cluster (offline planning).",
)


@click.command(cls=OnceCommand)
@files_option()
@prune_option
@max_deletions_option
@click.option("--out", "out_path", metavar="FILE", type=click.Path(dir_okay=False), help="Save the plan (JSON).")
@live_from_option
@stages_option
@stage_shape_option
@click.option(
    "--brokers",
    type=click.IntRange(1),
    metavar="N",
    help="Divide cluster-wide budgets (cluster:) by N brokers instead of the live broker count (with --live-from).",
)
@principal_rule_options
@pass_state
@click.pass_context
def plan(
    ctx: click.Context,
    state: AppState,
    files: Sequence[str],
    prune: bool,
    max_deletions: int,
    out_path: str | None,
    live_from: Sequence[str],
    stages: int | None,
    stage_shape: str,
    brokers: int | None,
    **rule_kw: Any,
) -> None:
    """Show what apply would change: per entity and key, add / change old -> new / remove.

    Writes nothing. Exit status 0 when the cluster is in sync, 2 when changes are pending, 1 on error.
    --out saves the plan with a fingerprint of the live state; apply --plan refuses it if the cluster
    changed since.

    \b
    Examples:
      kquotactl --zookeeper zk:2181/kafka plan -f quotas.yaml
      kquotactl --zookeeper zk:2181/kafka plan -f quotas/ --prune -o json --out plan.json
      kquotactl plan -f quotas.yaml --live-from exported.yaml
      kquotactl --bootstrap-server b:9092 plan -f quotas.yaml --stages 4
    """
    from kquotactl.core.plan import check_deletions
    from kquotactl.render.outfiles import check_file, replaced_file

    fmt = _fmt(state)
    if out_path is not None:
        check_file(out_path, "--out")  # before the cluster is read
    backend, the_plan, manifest = _plan(
        state, ctx, files, prune, live_from, fmt if fmt in CI_REPORTS else None, brokers=brokers, rule_kw=rule_kw
    )
    check_deletions(the_plan, max_deletions)
    target = _target(state, backend)
    if out_path is not None:
        with replaced_file(out_path, "--out") as fh:
            _dump(the_plan.to_json(target), "json", fh)
    from kquotactl.render.records import plan_summary

    staged = _staged(the_plan, manifest, stages, stage_shape)
    if fmt in CI_REPORTS:
        from kquotactl.core.lint import lint
        from kquotactl.render.ci import plan_report

        _ci(plan_report(the_plan, manifest, lint(manifest, _principals(rule_kw)), target), fmt)
    elif fmt in ("json", "yaml") and staged is not None:
        _dump({**the_plan.to_json(target), "staged": staged.to_json()}, fmt, sys.stdout)
    else:
        render_plan(the_plan, fmt, sys.stdout, target)
        if staged is not None and staged.count > 1:
            render_stages(staged, sys.stdout)
        elif staged is not None and the_plan.pending:
            state.warn("no limit is lowered: nothing to stage, apply would apply it at once")
    _summary(plan_summary(the_plan) + (f" (plan saved to {out_path})" if out_path else ""), fmt)
    if the_plan.pending:
        ctx.exit(EXIT_PENDING)


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
    help="Continue the staged apply logged in LOG (--log) from where it stopped.",
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
    from kquotactl.core.wording import counted
    from kquotactl.render.records import plan_summary
    from kquotactl.services.plans import check_fresh, read_plan_file

    fmt = _fmt(state)
    interval_seconds = _duration(interval)
    if (prometheus or scrape_urls) and not (stages or resume_path):
        raise UsageError("--prometheus and --scrape check between stages: they go with --stages N or --resume LOG")
    if prometheus and scrape_urls:
        raise UsageError("give either --prometheus URL or --scrape URL (one per broker), not both")
    if resume_path is not None:
        if plan_path or stages or prune or dry_run:
            raise UsageError(
                "--resume LOG continues the logged stages: --plan, --stages, --prune, --dry-run do not apply"
            )
        _resume(ctx, state, files, resume_path, interval_seconds, yes, prometheus, scrape_urls, max_deletions)
        return
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
    manifest = None
    if plan_path:
        if prune:
            raise UsageError("--prune is decided when the plan is made (kquotactl plan --prune --out FILE)")
        saved = read_plan_file(plan_path)
        if not dry_run:
            _check_writable(state, ctx)
        backend, live = _live(state, ctx, ())
        check_fresh(saved, live)
        the_plan = saved.plan
        if saved.target and saved.target != state.conn.with_env().target:
            state.warn(f"the plan was made against {saved.target}, applying to {state.conn.with_env().target}")
    else:
        if not dry_run:
            _check_writable(state, ctx)
        backend, the_plan, manifest = _plan(state, ctx, files, prune, (), rule_kw=rule_kw)
    from kquotactl.core.model import check_live_changes
    from kquotactl.core.plan import check_deletions

    check_deletions(the_plan, max_deletions)  # refused before the plan is shown and confirmed (apply checks again)
    check_live_changes(d.change() for d in the_plan.diffs)
    target = _target(state, backend)
    if not the_plan.pending:
        if fmt in ("json", "yaml"):
            _dump({"summary": the_plan.counts(), "results": []}, fmt, sys.stdout)
        _summary(plan_summary(the_plan), fmt)
        return
    staged = _staged(the_plan, manifest, stages, stage_shape)
    seconds = _interval(interval_seconds, staged)
    if staged is not None and staged.count <= 1:
        state.warn("no limit is lowered: nothing to stage, applied at once")
        staged = None
    if fmt == "table":
        render_plan(the_plan, fmt, sys.stdout, target, shown=None if (verbose or state.verbose) else PLAN_SHOWN)
        if staged is not None:
            render_stages(staged, sys.stdout)
    if staged is not None and dry_run:
        _summary(f"would apply in {staged.count} stages, {seconds:g} s apart (dry run, nothing written)", fmt)
        ctx.exit(EXIT_PENDING)
    if not dry_run and not yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so no confirmation possible: pass --yes to apply")
        if not click.confirm(
            f"Apply changes to {counted(len(the_plan.diffs), 'entity')} on {target['cluster']}?", err=True
        ):
            _summary("not applied: nothing was written (changes still pending)", "json")
            ctx.exit(EXIT_PENDING)  # declined: not an error, but the changes are still pending, as after a plan
    if staged is not None:
        _run_stages(
            backend,
            staged,
            {},
            seconds,
            log_path,
            max_deletions,
            prometheus,
            scrape_urls,
            target,
            state.connection().timeout,
        )
        return
    result = _apply_with_progress(backend, the_plan, dry_run, max_deletions, log_path, keep_records=fmt != "table")
    if result.partial is not None:
        from kquotactl.render.records import partial_report

        lines, final = partial_report(result.partial)
        for line in lines:
            _echo_err(line)
        raise final from None
    _finish(result, the_plan, fmt, dry_run)
    if dry_run:
        ctx.exit(EXIT_PENDING)
    if verify:
        _verify_applied(backend, the_plan, result, verify_sample, state.connection().timeout)


def _verify_applied(backend: QuotaBackend, the_plan: Plan, result: Applied, sample: int | None, timeout: float) -> None:
    """``apply --verify``: every applied entity (or a sample) reported by every broker, else exit 2."""
    from kquotactl.core.verify import NotVerified, lag_message
    from kquotactl.core.wording import counted
    from kquotactl.services.verify import verify_applied

    applied = set(result.applied)
    wanted = [(d.entity, d.after) for d in the_plan.diffs if d.entity.label() in applied]
    checked = verify_applied(backend, wanted, timeout=timeout, sample=sample)
    late = [c for c in checked if not c.converged]
    if late:
        first = late[0]
        more = f" (and {counted(len(late) - 1, 'more entity', 'more entities')})" if len(late) > 1 else ""
        raise NotVerified(lag_message(first.entity.label(), first.expected, first.lagging, first.waited) + more)
    source = checked[0].source if checked else "nothing to check"
    _echo_err(f"verified: {counted(len(checked), 'entity')} reported by every broker ({source})")


# -- staged apply ---------------------------------------------------------------------------------------


def _staged(the_plan: Plan, manifest: Manifest | None, stages: int | None, shape: str) -> StagedPlan | None:
    """The plan cut into stages when ``--stages`` is given or an entry has its own ``stages:`` (else None)."""
    per_entity = manifest.stages() if manifest is not None else {}
    if stages is None and not any(n > 1 for n in per_entity.values()):
        return None
    from kquotactl.core.stages import StageShape, staged_plan

    return staged_plan(the_plan, stages or 1, StageShape(shape), per_entity)


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


def render_stages(staged: StagedPlan, out: IO[str]) -> None:
    """Per entity and changed key: the value now and after each stage."""
    from kquotactl.core.manifest import entity_path_text
    from kquotactl.core.stages import stage_rows

    n = staged.count
    header = ["ENTITY", "KEY", "NOW", *[f"STAGE {i}" for i in range(1, n + 1)]]
    rows = [
        [entity_path_text(e), k, _num(k, old), *[_num(k, v) for v in values]]
        for e, k, old, values in stage_rows(staged)
    ]
    out.write(f"in {n} stages ({staged.shape.value}):\n")
    write_table(header, rows, out)


def _stage_event(event: StageEvent, log_path: str | None) -> None:
    from kquotactl.core.wording import counted

    where = f"stage {event.stage}/{event.count}"
    if event.what == "applied":
        _echo_err(f"{where}: applied {counted(event.entities, 'entity')}")
    elif event.what == "checked":
        _echo_err(f"{where}: checked")
    elif event.what == "waiting":
        resume = f"; resume with apply --resume {log_path}" if log_path else ""
        _echo_err(f"waiting {event.seconds:g} s before {where} (Ctrl-C stops{resume})")


def _run_stages(
    backend: QuotaBackend,
    staged: StagedPlan,
    done: dict[Any, int],
    seconds: float,
    log_path: str | None,
    max_deletions: int,
    prometheus: str | None,
    scrape_urls: Sequence[str],
    target: dict[str, str] | None,
    timeout: float,
) -> None:
    """Run :func:`kquotactl.services.staged.apply_stages` with the ``--log`` open (a fresh run starts it with the
    schedule), progress on stderr, and the report of where it stopped. ``timeout``: how long the check after each
    stage waits for every broker to report the stage's values."""
    import functools

    from kquotactl.services.staged import StageObserver, apply_stages, check_step, staged_log_header

    observer = StageObserver(prometheus, scrape_urls) if (prometheus or scrape_urls) else None
    log = None
    if log_path is not None:
        from kquotactl.render.outfiles import open_file

        log = open_file(log_path, "--log", "a")
        if not done:
            log.write(staged_log_header(staged, seconds, target))
            log.flush()
    try:
        if observer is not None:
            observer.baseline(backend)
        result = apply_stages(
            backend,
            staged,
            interval=seconds,
            done=done,
            check=functools.partial(check_step, observer=observer, timeout=timeout),
            log=log,
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
    from kquotactl.core.keys import KEYS, format_value
    from kquotactl.core.manifest import entity_path_text

    n = result.staged.count
    _echo_err(f"kquotactl: stopped at stage {result.stopped_at} of {n}: {result.stopped}")
    for line in result.details:
        _echo_err(f"  {line}")
    for e in result.staged.entities:
        k = result.done[e.entity]
        values = ", ".join(f"{key}={format_value(KEYS[key], v)}" for key, v in e.at(k).items()) or "no quota"
        total = len(e.steps)
        state = "done" if k >= total else f"stage {k} of {total}"
        _echo_err(f"{entity_path_text(e.entity)}: {state} ({values})")
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
    """``apply --resume LOG``: the logged schedule, from where the live values say each entity is (refused when they
    are not what the log says); with ``-f``, the manifests must still ask for the logged targets."""
    from kquotactl.core.manifest import entity_path_text
    from kquotactl.services.staged import read_staged_log, resume_point

    logged = read_staged_log(resume_path)
    staged = logged.staged
    if files:
        manifest = _load(files)
        for e in staged.entities:
            entry = manifest.get(e.entity)
            if entry is not None and any(e.steps[-1].get(k) != v for k, v in entry.config.items()):
                raise UsageError(
                    f"{entry.source}: {entity_path_text(e.entity)} asks for other values than the logged stages "
                    f"in {resume_path}: not resumed, nothing written (plan and apply --stages again)"
                )
    _check_writable(state, ctx)
    backend = state.backend(ctx)
    if logged.target and logged.target.get("cluster") != state.conn.with_env().target:
        raise UsageError(
            f"{resume_path} logs a staged apply to {logged.target.get('cluster')}, not {state.conn.with_env().target}"
        )
    done = resume_point(backend, logged)
    remaining = [e for e in staged.entities if done[e.entity] < len(e.steps)]
    if not remaining:
        click.echo(f"nothing to resume: every entity of {resume_path} is at its target")
        return
    seconds = logged.interval if interval is None else _interval(interval, staged)
    first = min(done.values()) + 1
    click.echo(f"resuming {resume_path} at stage {first} of {staged.count}", err=True)
    render_stages(staged, sys.stdout)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so no confirmation possible: pass --yes to apply")
        if not click.confirm(f"Resume on {state.conn.with_env().target}?", err=True):
            ctx.exit(EXIT_PENDING)
    target = _target(state, backend)
    timeout = state.connection().timeout
    _run_stages(backend, staged, done, seconds, resume_path, max_deletions, prometheus, scrape_urls, target, timeout)


def _check_writable(state: AppState, ctx: click.Context) -> None:
    """Whatever the backend would refuse to write, refused before the plan is shown and confirmed."""
    check = getattr(state.backend(ctx), "check_writable", None)
    if check is not None:
        check()


def _apply_with_progress(
    backend: QuotaBackend, the_plan: Plan, dry_run: bool, max_deletions: int, log_path: str | None, keep_records: bool
) -> Applied:
    """:func:`kquotactl.services.plans.apply`, with a progress bar on a terminal and the ``--log`` file open."""
    from kquotactl.services.plans import apply as apply_service

    progress_bar = None
    if sys.stderr.isatty() and len(the_plan.diffs) >= 100 and not dry_run:
        from rich.console import Console
        from rich.progress import Progress

        progress_bar = Progress(console=Console(stderr=True), transient=True)
        progress_bar.start()
    task = progress_bar.add_task("applying", total=len(the_plan.diffs)) if progress_bar else None
    advance = (lambda n: progress_bar.advance(task, n)) if progress_bar else None  # type: ignore[arg-type]
    log = None
    if log_path is not None:
        from kquotactl.render.outfiles import open_file

        log = open_file(log_path, "--log", "a")
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
            log.close()
        if progress_bar is not None:
            progress_bar.stop()


def _finish(result: Applied, the_plan: Plan, fmt: str, dry_run: bool) -> None:
    """The per-entity failures, the summary line and (``-o json/yaml``) the records of an apply."""
    from kquotactl.core.wording import counted
    from kquotactl.render.records import result_line

    if fmt in ("json", "yaml"):
        _dump({"summary": result.counts, "results": result.records}, fmt, sys.stdout)
    if fmt == "table":
        by_entity = {d.entity: d for d in the_plan.diffs}
        for r in result.failed:
            meta = by_entity[r.entity].meta if r.entity in by_entity else {}
            extra = f" [{' '.join(f'{k}={v}' for k, v in meta.items())}]" if meta else ""
            _echo_err(result_line(r) + extra)
    c = result.counts
    word = "would apply" if dry_run else "applied"
    line = (
        f"{word} {counted(c['validated' if dry_run else 'applied'], 'entity')}, "
        f"{c['unchanged']} already as desired, {len(result.failed)} failed"
    )
    _summary(line + (" (dry run, nothing written)" if dry_run else ""), fmt)
    if result.failed:
        done = sum(c.values()) - len(result.failed)
        labels = ", ".join(r.entity.label() for r in result.failed[:5]) + (" ..." if len(result.failed) > 5 else "")
        raise QuotaError(
            f"{counted(len(result.failed), 'entity')} not applied ({labels}); {counted(done, 'entity')} "
            "as planned; "
            "fix the cause and re-run apply"
        )


@click.command(cls=OnceCommand)
@click.option("--out", "out_path", metavar="FILE", type=click.Path(dir_okay=False), help="Write to FILE.")
@click.option(
    "--units",
    is_flag=True,
    help="Write byte rates with the largest exact IEC unit (5242880 -> 5MiB); still lossless.",
)
@pass_state
@click.pass_context
def export(ctx: click.Context, state: AppState, out_path: str | None, units: bool) -> None:
    """Print the live quotas as a manifest (YAML by default, -o json).

    Lossless and deterministic: defaults, (user, client-id) pairs, ips and real (unsanitized) names, in
    describe order, integers for LONG/INT keys. Applying an export is a no-op; exporting from one backend
    and applying to another migrates quotas (for example from a ZooKeeper cluster to a KRaft cluster).

    \b
    Examples:
      kquotactl --zookeeper zk:2181/kafka export > quotas.yaml
      kquotactl --zookeeper old-zk:2181/kafka export | kquotactl --bootstrap-server kraft:9092 apply -f - --yes
      kquotactl --zookeeper zk:2181/kafka export -o json --out quotas.json
      kquotactl --zookeeper zk:2181/kafka export --units
    """
    from kquotactl.manifests.export import dump_manifest_yaml, export_document
    from kquotactl.render.outfiles import check_file, replaced_file
    from kquotactl.render.records import dump_json

    fmt = state.output or "yaml"
    if fmt not in ("yaml", "json"):
        raise UsageError(f"export writes yaml or json, not {fmt}")
    if out_path is not None:
        check_file(out_path, "--out")  # before the cluster is read
    _, records = _live(state, ctx, ())
    doc = export_document(records, units=units)
    dump = dump_json if fmt == "json" else dump_manifest_yaml
    if out_path is None:
        dump(doc, sys.stdout)
    else:
        with replaced_file(out_path, "--out") as out:
            dump(doc, out)
    from kquotactl.core.wording import counted

    click.echo(f"exported {counted(len(records), 'entity')}", err=True)


def register(group: click.Group) -> None:
    for cmd in (validate, plan, apply, export):
        group.add_command(cmd)
