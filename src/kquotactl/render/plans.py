"""Render plans: the summary line, the table (or, on a narrow terminal, a block per entity), a staged plan's values
per stage. Plain aligned text, fast for tens of thousands of rows and readable in CI logs; JSON/YAML are the plan's
own ``to_json``. No I/O beyond writing to the given stream."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from kquotactl.core.keys import KEYS, Number, human_and_raw
from kquotactl.core.manifest import entity_path_text
from kquotactl.core.wording import counted
from kquotactl.render.records import dump_json, dump_yaml

if TYPE_CHECKING:
    from kquotactl.core.plan import EntityDiff, Plan
    from kquotactl.core.stages import StagedPlan

PLAN_HEADER = ["ACTION", "ENTITY", "KEY", "OP", "OLD", "NEW", "SOURCE"]


def value_text(key: str, v: Number | None) -> str:
    """``6 MiB/s (6291456)``: the unit the manifest used, and the exact number written."""
    return human_and_raw(KEYS[key], v)


def plan_summary(plan: Plan) -> str:
    """``3 entities to change: 2 to create, 1 to update, 0 to delete; 1 unchanged`` (or ``in sync: ...``)."""
    c = plan.counts()
    other = (
        f"; {counted(c['unmanaged'], 'other live entity', 'other live entities')} left alone" if c["unmanaged"] else ""
    )
    if not plan.diffs:
        return f"in sync: {counted(c['unchanged'], 'entity')} as declared, nothing to change{other}"
    return (
        f"{counted(len(plan.diffs), 'entity')} to change: {c['create']} to create, {c['update']} to update, "
        f"{c['delete']} to delete; {c['unchanged']} unchanged{other}"
    )


def _origin(d: EntityDiff) -> str:
    meta = " ".join(f"{k}={v}" for k, v in d.meta.items())
    return " ".join(x for x in (d.source or "(not in manifest: prune)", meta) if x)


def plan_rows(diffs: Sequence[EntityDiff]) -> list[list[str]]:
    """One row per changed key (:data:`PLAN_HEADER`); the action, entity and source on the entity's first row."""
    rows = []
    for d in diffs:
        origin = _origin(d)
        path = entity_path_text(d.entity)
        for i, k in enumerate(d.keys):
            first = i == 0
            rows.append(
                [
                    d.action.value if first else "",
                    path if first else "",
                    k.key,
                    k.op.value,
                    value_text(k.key, k.old),
                    value_text(k.key, k.new),
                    origin if first else "",
                ]
            )
    return rows


def table_width(header: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    return sum(widths) + 2 * (len(widths) - 1)


def write_table(header: Sequence[str], rows: Sequence[Sequence[str]], out: IO[str]) -> None:
    """A plain aligned table (fast for 10,000s of rows, readable in CI logs)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    out.write("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip() + "\n")
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")


def write_plan_blocks(diffs: Sequence[EntityDiff], out: IO[str], width: int) -> None:
    """The plan for a narrow terminal: per entity a line (action, path, and the source when it fits beside them,
    else on a line of its own) and one indented line per key."""
    for d in diffs:
        origin = _origin(d)
        head = f"{d.action.value} {entity_path_text(d.entity)}"
        out.write(f"{head}  {origin}\n" if len(head) + 2 + len(origin) <= width else f"{head}\n    ({origin})\n")
        for k in d.keys:
            change = (
                value_text(k.key, k.new)
                if k.old is None
                else f"{value_text(k.key, k.old)} -> {value_text(k.key, k.new)}"
            )
            out.write(f"    {k.key} {k.op.value} {change}\n")


def render_plan(
    plan: Plan,
    fmt: str,
    out: IO[str],
    *,
    width: int | None = None,
    target: dict[str, str] | None = None,
    shown: int | None = None,
) -> None:
    """The plan as JSON/YAML, or as a table (every entity, or the first ``shown`` ones followed by counts per
    action) that fits ``width`` columns (a terminal's; None: a pipe or a CI log, any width)."""
    if fmt in ("json", "yaml"):
        (dump_yaml if fmt == "yaml" else dump_json)(plan.to_json(target), out)
        return
    if not plan.diffs:
        return
    cut = shown is not None and len(plan.diffs) > shown
    diffs = plan.diffs[:shown] if cut else plan.diffs
    rows = plan_rows(diffs)
    if width is not None and table_width(PLAN_HEADER, rows) > width:
        write_plan_blocks(diffs, out, width)
    else:
        write_table(PLAN_HEADER, rows, out)
    if not cut or shown is None:
        return
    c = plan.counts()
    per_action = ", ".join(f"{c[a]} to {a}" for a in ("create", "update", "delete") if c[a])
    out.write(
        f"... and {counted(len(plan.diffs) - shown, 'more entity', 'more entities')} (--verbose lists them all)\n"
        f"in all: {per_action}\n"
    )


def render_stages(staged: StagedPlan, out: IO[str]) -> None:
    """Per entity and changed key: the value now and after each stage."""
    from kquotactl.core.stages import stage_rows

    n = staged.count
    header = ["ENTITY", "KEY", "NOW", *[f"STAGE {i}" for i in range(1, n + 1)]]
    rows = [
        [entity_path_text(e), k, value_text(k, old), *[value_text(k, v) for v in values]]
        for e, k, old, values in stage_rows(staged)
    ]
    out.write(f"in {n} stages ({staged.shape.value}):\n")
    write_table(header, rows, out)
