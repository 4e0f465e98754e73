"""What the manifest commands (``validate``, ``plan``, ``apply``, ``export``) share: their options, the output
format they accept, loading manifests with the principal rules given, the live side (a cluster or ``--live-from``),
and planning with a CI report when the manifest does not load.

Only click is imported at module level; the manifest, plan and backend modules load inside the functions.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Sequence
from typing import IO, TYPE_CHECKING, Any

import click

from kquotactl.cli.collector import collector_paused
from kquotactl.cli.errorwords import KEEP_HINT
from kquotactl.cli.state import AppState
from kquotactl.core.errors import QuotaError, UsageError

if TYPE_CHECKING:
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.changes import QuotaRecord
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.plan import Plan
    from kquotactl.core.principals import BrokerPrincipals
    from kquotactl.core.stages import StagedPlan

FILES_HELP = "A manifest file, a directory of *.yaml/*.yml/*.json files, or - for stdin; repeat to merge."


def files_option(required: bool = True) -> Any:
    return click.option("-f", "--file", "files", multiple=True, required=required, metavar="PATH", help=FILES_HELP)


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


def output_format(state: AppState, default: str = "table") -> str:
    """``-o``: every format but kafka-configs' lines (those are describe's)."""
    fmt = state.output or default
    if fmt == "kafka":
        raise UsageError("-o kafka is for describe; manifest commands print table, json or yaml")
    return fmt


def write_ci(report: Any, fmt: str) -> None:
    """A CI report (:mod:`kquotactl.render.ci`) on stdout."""
    from kquotactl.render.ci import render

    sys.stdout.write(render(report, fmt))


def dump(data: Any, fmt: str, out: IO[str]) -> None:
    from kquotactl.render.records import dump_json, dump_yaml

    (dump_yaml if fmt == "yaml" else dump_json)(data, out)


def echo_err(line: str) -> None:
    from kquotactl.core.errors import one_line

    click.echo(one_line(line), err=True)  # problems quote the manifest: control characters escaped, length capped


def summary(line: str, fmt: str) -> None:
    """The summary line: on stdout for tables, on stderr when stdout carries JSON/YAML."""
    click.echo(line, err=fmt != "table")


def terminal_width() -> int | None:
    """The terminal's columns when stdout is one (tables must fit it), else ``None`` (a pipe, a CI log)."""
    if not sys.stdout.isatty():
        return None
    import shutil

    return shutil.get_terminal_size().columns


def given_rules(rule_kw: dict[str, Any], super_users: str | None = None) -> BrokerPrincipals | None:
    """The rules (and super users) given on the command line: manifests are read before any cluster."""
    from kquotactl.cli.principalargs import given_principals, pop_rule_args

    return given_principals(pop_rule_args(dict(rule_kw)), super_users)


def load(files: Sequence[str], rule_kw: dict[str, Any] | None = None, super_users: str | None = None) -> Manifest:
    """The manifests, ``principal:`` entries mapped with the rules given (``principal_rule_options``)."""
    from kquotactl.manifests.loader import load_manifests

    principals = given_rules(rule_kw, super_users) if rule_kw else None
    with collector_paused():
        return load_manifests(list(files), principals=principals)


def live_backend(state: AppState, ctx: click.Context, live_from: Sequence[str]) -> QuotaBackend:
    """The cluster's backend, or (``--live-from``) the read-only manifest backend over a saved export/manifest."""
    if live_from:
        from kquotactl.backends.manifest import ManifestBackend

        return ManifestBackend.open(list(live_from))
    return state.backend(ctx)


def live_records(
    state: AppState, ctx: click.Context, live_from: Sequence[str]
) -> tuple[QuotaBackend, list[QuotaRecord]]:
    """The backend and every live quota (``--live-from`` reads a saved export/manifest instead of a cluster)."""
    from kquotactl.services.quotas import describe

    backend = live_backend(state, ctx, live_from)
    described = describe(backend)
    for w in described.warnings:
        state.warn(w)
    return backend, described.records


def target_of(state: AppState, backend: QuotaBackend) -> dict[str, str]:
    """Which cluster a plan or log is for (saved with it; a plan for another cluster is warned about)."""
    return {"backend": backend.name, "cluster": state.conn.with_env().target}


def planned_from_args(
    state: AppState,
    ctx: click.Context,
    files: Sequence[str],
    prune: bool,
    live_from: Sequence[str],
    ci_fmt: str | None = None,
    brokers: int | None = None,
    rule_kw: dict[str, Any] | None = None,
) -> tuple[QuotaBackend, Plan, Manifest]:
    """The backend, the plan and the manifest (``ci_fmt``: a CI report format, which renders the manifest's problems
    when it does not load; ``brokers``: the broker count cluster-wide budgets are divided by, else the live one)."""
    from kquotactl.core.manifest import ManifestError
    from kquotactl.core.wording import counted
    from kquotactl.services.plans import plan as plan_service

    # The manifest and the live quotas (many objects, all kept, none in a cycle) read under one pause: resumed
    # between the two, the collector would walk all of the manifest's objects once more.
    with collector_paused():
        try:
            manifest = load(files, rule_kw)  # before connecting: a bad manifest never reaches the cluster
        except ManifestError as e:
            if ci_fmt is None:
                raise
            from kquotactl.render.ci import invalid_report

            problems = counted(len(e.problems), "problem")
            write_ci(invalid_report("plan", e.problems, problems), ci_fmt)
            raise QuotaError(f"{problems} in the manifest; nothing was planned") from None
        if prune and not manifest.prune:
            raise UsageError('--prune needs a prune scope in the manifest (prune: ["users/svc-*", ...])')
        planned = plan_service(
            lambda: live_backend(state, ctx, live_from),
            manifest,
            prune=prune,
            offline=bool(live_from),
            brokers=brokers,
        )
    kept = planned.plan.kept
    planned.plan.notes[:] = [hinted(n, kept) for n in planned.plan.notes]  # as saved, reported and logged
    for line in planned.info:
        click.echo(line, err=True)  # information, as alter --cluster-wide says it
    for line in [*planned.warnings, *(hinted(n, kept) for n in planned.notes)]:
        state.warn(line)
    return planned.backend, planned.plan, planned.manifest


def hinted(note: str, kept: Collection[str]) -> str:
    """A plan's note, with the command that removes the value when the plan keeps one brokers cannot parse."""
    return note + KEEP_HINT if note in kept else note


def staged_plan_of(the_plan: Plan, manifest: Manifest | None, stages: int | None, shape: str) -> StagedPlan | None:
    """The plan cut into stages when ``--stages`` is given or an entry has its own ``stages:`` (else None)."""
    from kquotactl.core.stages import staged_plan_of as cut

    return cut(the_plan, manifest, stages, shape)
