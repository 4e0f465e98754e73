"""``kquotactl plan``: what ``apply`` would change, per entity and key; writes nothing.

Only click is imported at module level; the manifest, plan and backend modules load inside the command.
Exit status: 0 in sync, 2 changes pending, 1 error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.manifestargs import (
    dump,
    files_option,
    given_rules,
    live_from_option,
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
    write_ci,
)
from kquotactl.cli.options import CI_REPORTS, principal_rule_options
from kquotactl.cli.state import AppState, pass_state
from kquotactl.core.errors import EXIT_PENDING


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

    fmt = output_format(state)
    if out_path is not None:
        check_file(out_path, "--out")  # before the cluster is read
    backend, the_plan, manifest = planned_from_args(
        state, ctx, files, prune, live_from, fmt if fmt in CI_REPORTS else None, brokers=brokers, rule_kw=rule_kw
    )
    check_deletions(the_plan, max_deletions)
    target = target_of(state, backend)
    if out_path is not None:
        with replaced_file(out_path, "--out") as fh:
            dump(the_plan.to_json(target), "json", fh)
    from kquotactl.render.plans import plan_summary, render_plan, render_stages

    staged = staged_plan_of(the_plan, manifest, stages, stage_shape)
    if fmt in CI_REPORTS:
        from kquotactl.core.lint import lint
        from kquotactl.render.ci import plan_report

        write_ci(plan_report(the_plan, manifest, lint(manifest, given_rules(rule_kw)), target), fmt)
    elif fmt in ("json", "yaml") and staged is not None:
        dump({**the_plan.to_json(target), "staged": staged.to_json()}, fmt, sys.stdout)
    else:
        render_plan(the_plan, fmt, sys.stdout, width=terminal_width(), target=target)
        if staged is not None and staged.count > 1:
            render_stages(staged, sys.stdout)
        elif staged is not None and the_plan.pending:
            state.warn("no limit is lowered: nothing to stage, apply would apply it at once")
    summary(plan_summary(the_plan) + (f" (plan saved to {out_path})" if out_path else ""), fmt)
    if the_plan.pending:
        ctx.exit(EXIT_PENDING)
