"""Manifest commands for CI: ``validate``, ``plan``, ``apply`` and ``export``.

Only click is imported at module level; the manifest, plan and backend modules load inside the commands.
Exit status: 0 success / in sync, 2 changes pending (``plan``, ``apply --dry-run``), 1 error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import IO, Any

import click

from kquotactl.cli.errorwords import KEEP_HINT
from kquotactl.cli.kit import CI_REPORTS, AppState, OnceCommand, pass_state
from kquotactl.core.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_PENDING, QuotaError, UsageError

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


def _load(files: Sequence[str]) -> Any:
    from kquotactl.manifests.loader import load_manifests

    return load_manifests(list(files))


def _echo_err(line: str) -> None:
    from kquotactl.core.errors import one_line

    click.echo(one_line(line), err=True)  # problems quote the manifest: control characters escaped, length capped


def _dump(data: Any, fmt: str, out: IO[str]) -> None:
    from kquotactl.render.records import dump_json, dump_yaml

    (dump_yaml if fmt == "yaml" else dump_json)(data, out)


def _live(state: AppState, ctx: click.Context, live_from: Sequence[str]) -> tuple[Any, list[Any]]:
    """The backend and every live quota (``--live-from`` reads a saved export/manifest instead of a cluster)."""
    if live_from:
        from kquotactl.backends.manifest import ManifestBackend

        backend: Any = ManifestBackend.open(list(live_from))
    else:
        backend = state.backend(ctx)
    records = backend.describe()
    for w in getattr(backend, "warnings", []):
        state.warn(w)
    return backend, records


def _target(state: AppState, backend: Any) -> dict[str, str]:
    return {"backend": getattr(backend, "name", "?"), "cluster": state.conn.with_env().target}


# -- rendering ------------------------------------------------------------------------------------------


def _num(key: str, v: Any) -> str:
    """``6 MiB/s (6291456)``: the unit the manifest used, and the exact number written."""
    from kquotactl.core.keys import KEYS, human_and_raw

    return human_and_raw(KEYS[key], v)


def plan_rows(plan: Any) -> list[list[str]]:
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


def write_plan_blocks(plan: Any, out: IO[str], width: int) -> None:
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
    plan: Any, fmt: str, out: IO[str], target: dict[str, str] | None = None, shown: int | None = None
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
    if head is plan:
        return
    from kquotactl.render.records import counted

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
@pass_state
def validate(state: AppState, files: Sequence[str], strict: bool) -> None:
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
        manifest = _load(files)
    except ManifestError as e:
        n = len(e.problems)
        from kquotactl.render.records import counted

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
    warnings = lint(manifest)
    kinds = _kinds(manifest)
    from kquotactl.render.records import counted

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


def _kinds(manifest: Any) -> dict[str, int]:
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
) -> Any:
    """The backend, the plan and the manifest (``ci_fmt``: a CI report format, which renders the manifest's problems
    when it does not load)."""
    from kquotactl.core.manifest import ManifestError, live_problems
    from kquotactl.core.plan import make_plan

    try:
        manifest = _load(files)  # before connecting: a bad manifest never reaches the cluster
    except ManifestError as e:
        if ci_fmt is None:
            raise
        from kquotactl.render.ci import invalid_report

        n = len(e.problems)
        _ci(invalid_report("plan", e.problems, f"{n} problem{'s' if n != 1 else ''}"), ci_fmt)
        raise QuotaError(f"{n} problem{'s' if n != 1 else ''} in the manifest; nothing was planned") from None
    if not live_from and (problems := live_problems(manifest)):
        raise ManifestError(problems)
    if prune and not manifest.prune:
        raise UsageError('--prune needs a prune scope in the manifest (prune: ["users/svc-*", ...])')
    backend, live = _live(state, ctx, live_from)
    the_plan = make_plan(manifest, live, prune=prune, keep_hint=KEEP_HINT)
    shown = set(getattr(backend, "warnings", []))  # the backend's own reading of the same state, already printed
    for note in the_plan.notes:
        if note not in shown:
            state.warn(note)
    return backend, the_plan, manifest


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
    """
    from kquotactl.core.plan import check_deletions
    from kquotactl.render.outfiles import check_file, replaced_file

    fmt = _fmt(state)
    if out_path is not None:
        check_file(out_path, "--out")  # before the cluster is read
    backend, the_plan, manifest = _plan(state, ctx, files, prune, live_from, fmt if fmt in CI_REPORTS else None)
    check_deletions(the_plan, max_deletions)
    target = _target(state, backend)
    if out_path is not None:
        with replaced_file(out_path, "--out") as fh:
            _dump(the_plan.to_json(target), "json", fh)
    from kquotactl.render.records import plan_summary

    if fmt in CI_REPORTS:
        from kquotactl.core.lint import lint
        from kquotactl.render.ci import plan_report

        _ci(plan_report(the_plan, manifest, lint(manifest), target), fmt)
    else:
        render_plan(the_plan, fmt, sys.stdout, target)
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
    """
    from kquotactl.core.model import check_live_changes
    from kquotactl.core.plan import Plan, check_deletions, fingerprint
    from kquotactl.render.records import counted, plan_summary

    fmt = _fmt(state)
    if log_path is not None:
        from kquotactl.render.outfiles import check_file

        check_file(log_path, "--log")  # before anything is planned or written
    if files and plan_path:
        raise UsageError("give the manifests (-f FILE) or a saved plan (--plan FILE), not both")
    if not files and not plan_path:
        raise UsageError("nothing to apply: give the manifests (-f FILE) or a saved plan (--plan FILE)")
    if plan_path:
        if prune:
            raise UsageError("--prune is decided when the plan is made (kquotactl plan --prune --out FILE)")
        try:
            with open(plan_path, encoding="utf-8") as fh:
                data = json.load(fh)
        except OSError as e:
            raise UsageError(f"cannot read the plan {plan_path}: {e.strerror or e}") from None
        except json.JSONDecodeError as e:
            raise UsageError(f"cannot read the plan {plan_path}: {e}") from None
        the_plan = Plan.from_json(data, plan_path)
        if not dry_run:
            _check_writable(state, ctx)
        backend, live = _live(state, ctx, ())
        now = fingerprint(live)
        if now != the_plan.fingerprint:
            raise QuotaError(
                f"the cluster changed since the plan {plan_path} was made (stale plan): nothing was written; "
                "run plan again"
            )
        saved = (data.get("target") or {}).get("cluster")
        if saved and saved != state.conn.with_env().target:
            state.warn(f"the plan was made against {saved}, applying to {state.conn.with_env().target}")
    else:
        if not dry_run:
            _check_writable(state, ctx)
        backend, the_plan, _ = _plan(state, ctx, files, prune, ())
    check_deletions(the_plan, max_deletions)
    check_live_changes(d.change() for d in the_plan.diffs)  # a saved plan too: refused before any chunk is written
    target = _target(state, backend)
    if not the_plan.pending:
        if fmt in ("json", "yaml"):
            _dump({"summary": the_plan.counts(), "results": []}, fmt, sys.stdout)
        _summary(plan_summary(the_plan), fmt)
        return
    if fmt == "table":
        render_plan(the_plan, fmt, sys.stdout, target, shown=None if (verbose or state.verbose) else PLAN_SHOWN)
    if not dry_run and not yes:
        if not sys.stdin.isatty():
            raise UsageError("not a terminal, so no confirmation possible: pass --yes to apply")
        if not click.confirm(
            f"Apply changes to {counted(len(the_plan.diffs), 'entity')} on {target['cluster']}?", err=True
        ):
            _summary("not applied: nothing was written (changes still pending)", "json")
            ctx.exit(EXIT_PENDING)  # declined: not an error, but the changes are still pending, as after a plan
    collector = _Collector(the_plan, fmt, log_path, dry_run)
    _apply_in_chunks(backend, the_plan, collector, dry_run)
    collector.finish()
    if dry_run:
        ctx.exit(EXIT_PENDING)


def _check_writable(state: AppState, ctx: click.Context) -> None:
    """Whatever the backend would refuse to write, refused before the plan is shown and confirmed."""
    check = getattr(state.backend(ctx), "check_writable", None)
    if check is not None:
        check()


APPLY_CHUNK = 5000  # entities per backend call: bounds the backend's working set (reads, ops, results)


def _apply_in_chunks(backend: Any, the_plan: Any, collector: _Collector, dry_run: bool) -> None:
    """Hand the plan to the backend in order, a chunk at a time; on a failure say exactly what was applied."""
    from kquotactl.core.errors import PartialFailure

    diffs = the_plan.diffs
    progress_bar = None
    if sys.stderr.isatty() and len(diffs) >= 100 and not dry_run:
        from rich.console import Console
        from rich.progress import Progress

        progress_bar = Progress(console=Console(stderr=True), transient=True)
        progress_bar.start()
    task = progress_bar.add_task("applying", total=len(diffs)) if progress_bar else None
    advance = (lambda n: progress_bar.advance(task, n)) if progress_bar else None  # type: ignore[union-attr,arg-type]
    try:
        for start in range(0, len(diffs), APPLY_CHUNK):
            chunk = diffs[start : start + APPLY_CHUNK]
            try:
                results = backend.alter(
                    [d.change() for d in chunk],
                    validate_only=dry_run,
                    expected={d.entity: d.before for d in chunk},
                    progress=advance,
                )
            except PartialFailure as e:  # Interrupted (Ctrl-C in the backend) included: exit 130
                later = [d.entity.label() for d in diffs[start + len(chunk) :]]
                _partial_report(e, collector.applied_labels + e.applied, e.not_applied + later, e.unknown, e.exit_code)
            except KeyboardInterrupt:  # Ctrl-C outside a backend's own bookkeeping: this chunk's fate is unknown
                later = [d.entity.label() for d in diffs[start + len(chunk) :]]
                unknown = [d.entity.label() for d in chunk]
                _partial_report(QuotaError("interrupted"), collector.applied_labels, later, unknown, EXIT_INTERRUPTED)
            except QuotaError as e:
                if not collector.applied_labels:
                    raise QuotaError(f"{e}; nothing was applied") from None
                _partial_report(e, collector.applied_labels, [d.entity.label() for d in diffs[start:]])
            collector.add(results)
    finally:
        if progress_bar is not None:
            progress_bar.stop()


def _partial_report(
    error: QuotaError,
    applied: list[str],
    not_applied: list[str],
    unknown: Sequence[str] = (),
    exit_code: int = EXIT_ERROR,
) -> None:
    """``unknown``: entities of the transaction or request in flight when the connection died or Ctrl-C came (all
    or none). The summary line is the error; exit 130 after Ctrl-C."""
    _echo_err(f"kquotactl: error: {error}")
    for label in applied:
        _echo_err(f"applied: {label}")
    for label in not_applied:
        _echo_err(f"not applied: {label}")
    for label in unknown:
        _echo_err(f"outcome unknown: {label}")
    from kquotactl.render.records import counted

    final = QuotaError(
        f"{'interrupted' if exit_code == EXIT_INTERRUPTED else 'partial'} apply: {counted(len(applied), 'entity')} "
        "applied, "
        f"{len(not_applied)} not applied"
        + (f", {len(unknown)} unknown (one transaction: all or none of them)" if unknown else "")
        + " (listed above); re-run apply to converge"
    )
    final.exit_code = exit_code
    raise final from None


class _Collector:
    """Per-entity results as they come (with the manifest entry's source and metadata): counts, failures,
    the ``--log`` lines, and the full records only when ``-o json/yaml`` asks for them."""

    def __init__(self, the_plan: Any, fmt: str, log_path: str | None, dry_run: bool) -> None:
        from kquotactl.core.model import Outcome

        self.by_entity = {d.entity: d for d in the_plan.diffs}
        self.fmt = fmt
        self.dry_run = dry_run
        self.counts = {o.value: 0 for o in Outcome}
        self.failed: list[Any] = []
        self.rows: list[dict[str, Any]] = []
        self.applied_labels: list[str] = []
        from kquotactl.render.outfiles import open_file

        self.log = open_file(log_path, "--log", "a") if log_path is not None else None
        import datetime

        self.stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

    def enrich(self, r: Any) -> dict[str, Any]:
        from kquotactl.core.manifest import entity_path_text

        out = r.to_json()
        d = self.by_entity.get(r.entity)
        if d is not None:
            out["path"] = entity_path_text(d.entity)
            if d.source:
                out["source"] = d.source
            out.update(d.meta)
        return out

    def add(self, results: list[Any]) -> None:
        from kquotactl.core.model import Outcome

        for r in results:
            self.counts[r.outcome.value] += 1
            if r.outcome in (Outcome.REJECTED, Outcome.NOT_ATTEMPTED):
                self.failed.append(r)
            elif r.outcome is Outcome.APPLIED:
                self.applied_labels.append(r.entity.label())
            if self.log is not None or self.fmt != "table":
                row = self.enrich(r)
                if self.log is not None:
                    self.log.write(json.dumps({"time": self.stamp, **row}, ensure_ascii=False) + "\n")
                if self.fmt != "table":
                    self.rows.append(row)
        if self.log is not None:
            self.log.flush()

    def finish(self) -> None:
        from kquotactl.render.records import result_line

        if self.log is not None:
            self.log.close()
        if self.fmt in ("json", "yaml"):
            _dump({"summary": self.counts, "results": self.rows}, self.fmt, sys.stdout)
        if self.fmt == "table":
            for r in self.failed:
                meta = self.by_entity[r.entity].meta if r.entity in self.by_entity else {}
                extra = f" [{' '.join(f'{k}={v}' for k, v in meta.items())}]" if meta else ""
                _echo_err(result_line(r) + extra)
        from kquotactl.render.records import counted

        c = self.counts
        word = "would apply" if self.dry_run else "applied"
        line = (
            f"{word} {counted(c['validated' if self.dry_run else 'applied'], 'entity')}, "
            f"{c['unchanged']} already as desired, {len(self.failed)} failed"
        )
        _summary(line + (" (dry run, nothing written)" if self.dry_run else ""), self.fmt)
        if self.failed:
            done = sum(c.values()) - len(self.failed)
            labels = ", ".join(r.entity.label() for r in self.failed[:5]) + (" ..." if len(self.failed) > 5 else "")
            raise QuotaError(
                f"{counted(len(self.failed), 'entity')} not applied ({labels}); {counted(done, 'entity')} "
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
    from kquotactl.render.records import counted

    click.echo(f"exported {counted(len(records), 'entity')}", err=True)


def register(group: click.Group) -> None:
    for cmd in (validate, plan, apply, export):
        group.add_command(cmd)
