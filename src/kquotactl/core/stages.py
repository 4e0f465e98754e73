"""Staged tightening (pure): a plan whose lowered limits go down in N steps instead of one.

Rules (``docs/staging.md`` shows them on an example):

- Only a key being *lowered* (its live value is a number above the target) is staged. Everything else in the plan
  (a new key, a raised limit, a removed key, a deleted entity: a removed limit is no limit, so also a raise) is
  applied in the **first** stage: loosening cannot throttle anyone, and after stage 1 every later stage only
  tightens, so a stop between stages leaves the cluster somewhere between the old and the new limits.
- Stage values are geometric by default (each stage lowers by the same factor: ``current * (target/current) **
  (i/N)``), or linear (the same amount each stage). The last stage is exactly the target; no stage goes below it.
- Integral keys (LONG/INT, stored as whole numbers, :func:`kquotactl.core.keys.format_value`) round each stage
  value *up* (``ceil``): never past the geometric/linear curve, so never below the target. DOUBLE keys keep the
  float. Values never rise from one stage to the next; a range too small for N distinct whole numbers repeats a
  value (that stage leaves the key as it is).
- An entry's own ``stages:`` (manifest) overrides the command's N; an entity with fewer stages than the longest
  one reaches its target at its own last stage and stays there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kquotactl.core.entities import Entity
from kquotactl.core.keys import KEY_ORDER, KEYS, Number, QuotaKey, check_number, lookup_key
from kquotactl.core.plan import EntityDiff, Plan, apply_order, diff_entity

if TYPE_CHECKING:
    from kquotactl.core.manifest import Manifest

MAX_STAGES = 100


class StageShape(StrEnum):
    GEOMETRIC = "geometric"
    LINEAR = "linear"


def stage_values(key: QuotaKey, current: Number, target: Number, n: int, shape: StageShape) -> tuple[Number, ...]:
    """The ``n`` values a lowered key takes, stage by stage: non-increasing, never below ``target``, the last one
    exactly ``target``. ``current`` must be above ``target`` (both > 0, as stored values are)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    if not current > target > 0:
        raise ValueError("stage_values lowers: current must be above target, target above 0")
    out: list[Number] = []
    prev: Number = current
    for i in range(1, n):
        f = i / n
        ideal = current * (target / current) ** f if shape is StageShape.GEOMETRIC else current + (target - current) * f
        v: Number = math.ceil(ideal) if key.integral else float(ideal)
        if key.integral:
            v = int(v)
        v = min(max(v, target), prev)
        out.append(v)
        prev = v
    out.append(target)
    return tuple(out)


def is_lowered(old: Number | None, new: Number | None) -> bool:
    """A key the staging lowers step by step: a live limit above a new (smaller) limit."""
    return old is not None and new is not None and new < old


@dataclass(frozen=True)
class EntityStages:
    """One entity's configs after each of its stages (``steps[0]`` after stage 1, ``steps[-1]`` the target)."""

    entity: Entity
    before: Mapping[str, Number]
    steps: tuple[Mapping[str, Number], ...]
    source: str | None = None
    meta: Mapping[str, str] = field(default_factory=dict)

    def at(self, stage: int) -> Mapping[str, Number]:
        """The config after ``stage`` (0: before the first; past its last stage: the target)."""
        if stage <= 0:
            return self.before
        return self.steps[min(stage, len(self.steps)) - 1]

    def to_json(self) -> dict[str, Any]:
        return {
            "entity": self.entity.to_json(),
            "before": dict(self.before),
            "steps": [dict(s) for s in self.steps],
            **({"source": self.source} if self.source else {}),
            **dict(self.meta),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EntityStages:
        """Read back what :meth:`to_json` wrote (every value checked again: logs are files people can edit)."""
        entity = Entity.from_json(data["entity"])

        def typed(config: Mapping[str, Any]) -> dict[str, Number]:
            return {k: check_number(lookup_key(k, entity.kind), v) for k, v in config.items()}

        steps = tuple(typed(s) for s in data["steps"])
        if not steps:
            raise ValueError("an entity with no stages")
        meta = {k: str(data[k]) for k in ("owner", "reason", "ticket") if data.get(k) is not None}
        return cls(entity, typed(data.get("before") or {}), steps, data.get("source"), meta)


@dataclass(frozen=True)
class StagedPlan:
    """A plan cut into stages: every entity's config after each stage; :meth:`stage` is stage k's plan."""

    entities: tuple[EntityStages, ...]
    shape: StageShape = StageShape.GEOMETRIC

    @property
    def count(self) -> int:
        """How many stages (the longest entity's)."""
        return max((len(e.steps) for e in self.entities), default=0)

    def expected(self, stage: int) -> dict[Entity, Mapping[str, Number]]:
        """Entity -> the config it has after ``stage`` (what the between-stage check compares the cluster with)."""
        return {e.entity: e.at(stage) for e in self.entities}

    def stage(self, stage: int, done: Mapping[Entity, int] | None = None) -> Plan:
        """Stage ``stage``'s writes: each entity from the config after its last stage done (``done``, default
        ``stage - 1``) to its config after ``stage``, in the plan's order (see :func:`apply_order`)."""
        diffs: list[EntityDiff] = []
        for e in self.entities:
            start = stage - 1 if done is None else done.get(e.entity, 0)
            if start >= stage:
                continue
            d = diff_entity(e.entity, e.at(start), e.at(stage), e.source, e.meta)
            if d is not None:
                diffs.append(d)
        diffs.sort(key=apply_order)
        return Plan(diffs, "")

    def to_json(self) -> dict[str, Any]:
        return {"stages": self.count, "shape": self.shape.value, "entities": [e.to_json() for e in self.entities]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StagedPlan:
        return cls(
            tuple(EntityStages.from_json(e) for e in data["entities"]), StageShape(data.get("shape", "geometric"))
        )


def staged_plan(
    plan: Plan, stages: int, shape: StageShape = StageShape.GEOMETRIC, per_entity: Mapping[Entity, int] | None = None
) -> StagedPlan:
    """Cut ``plan`` into ``stages`` stages (``per_entity``: an entity's own count, from the manifest's ``stages:``);
    see the module docstring for the rules."""
    out: list[EntityStages] = []
    for d in plan.diffs:
        n = (per_entity or {}).get(d.entity, stages)
        lowered = {k.key: k for k in d.keys if is_lowered(k.old, k.new)}
        first = {**d.after, **{k: d.before[k] for k in lowered}}  # everything but the lowered keys, at once
        values = {
            k: stage_values(KEYS[k], kd.old, kd.new, n, shape)  # type: ignore[arg-type]  # is_lowered: both set
            for k, kd in lowered.items()
        }
        count = n if lowered else 1
        steps = []
        for i in range(count):
            step = {**first, **{k: v[i] for k, v in values.items()}}
            steps.append(dict(sorted(step.items(), key=lambda kv: KEY_ORDER.get(kv[0], 99))))
        out.append(EntityStages(d.entity, d.before, tuple(steps), d.source, d.meta))
    return StagedPlan(tuple(out), shape)


def staged_plan_of(
    plan: Plan, manifest: Manifest | None, stages: int | None, shape: StageShape | str = StageShape.GEOMETRIC
) -> StagedPlan | None:
    """``plan`` cut into ``stages`` stages when that is given or an entry of ``manifest`` has its own ``stages:``
    (else None: applied at once)."""
    per_entity = manifest.stages() if manifest is not None else {}
    if stages is None and not any(n > 1 for n in per_entity.values()):
        return None
    return staged_plan(plan, stages or 1, StageShape(shape), per_entity)


def stage_rows(staged: StagedPlan) -> list[tuple[Entity, str, Number | None, Sequence[Number | None]]]:
    """Per entity and changed key: (entity, key, value before, value after each stage) for ``plan --stages``."""
    rows: list[tuple[Entity, str, Number | None, Sequence[Number | None]]] = []
    n = staged.count
    for e in staged.entities:
        keys = sorted(set(e.before) | set(e.steps[-1]), key=lambda k: KEY_ORDER.get(k, 99))
        for k in keys:
            values = [e.at(i).get(k) for i in range(1, n + 1)]
            if all(v == e.before.get(k) for v in values):
                continue
            rows.append((e.entity, k, e.before.get(k), values))
    return rows
