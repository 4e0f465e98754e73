"""Plans: the per-entity, per-key difference between a manifest and the live quotas (pure, no I/O).

- Without ``--prune`` a plan only adds and changes keys; live quotas the manifest does not mention are left
  alone. With ``--prune``, live entities and keys that the manifest does not declare are removed, but only
  inside the manifest's ``prune`` scope, and :func:`check_deletions` caps how many entities may lose quotas.
- Each entity gets exactly one change (its sets and removes in one write), so no entity is ever deleted
  and recreated.
- Order: entities that only gain or change keys first (in ``describe`` order: users before their pairs, which
  spares the ZooKeeper backend creating a user node as a pair's parent and then again as an entity), then
  entities that both set and remove, then entities that only lose keys, both by precedence level, the more
  specific first. So when a limit moves between levels (say from ``users/<default>`` to ``users/alice``),
  the new entry is written before the old one is removed, and no connection is ever left without a limit
  in between.
- A plan carries a fingerprint of the live state it was computed from; ``apply --plan`` refuses when the
  cluster no longer has that fingerprint (stale-plan protection).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from kquotactl.core.changes import EntityChange, QuotaRecord
from kquotactl.core.entities import Entity, EntitySortKey
from kquotactl.core.errors import NotAPlan, QuotaError, TooManyDeletions, UsageError
from kquotactl.core.keys import KEY_ORDER, KEYS, Number, check_number, format_value, lookup_key, not_applied_reason
from kquotactl.core.manifest import Manifest, entity_path_text
from kquotactl.core.precedence import precedence_rank
from kquotactl.core.values import stored_findings
from kquotactl.core.wording import counted, record_problem

PLAN_FORMAT = "kquotactl-plan"
PLAN_VERSION = 1
DEFAULT_MAX_DELETIONS = 50


class Action(StrEnum):
    CREATE = "create"  # the entity has no quotas yet
    UPDATE = "update"
    DELETE = "delete"  # every quota key of the entity goes (prune)


class KeyOp(StrEnum):
    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"


@dataclass(frozen=True, slots=True)
class KeyDiff:
    key: str
    old: Number | None
    new: Number | None

    @property
    def op(self) -> KeyOp:
        if self.old is None:
            return KeyOp.ADD
        if self.new is None:
            return KeyOp.REMOVE
        return KeyOp.CHANGE

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "op": self.op.value, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class EntityDiff:
    """What changes on one entity, with the manifest entry's origin and metadata."""

    entity: Entity
    keys: tuple[KeyDiff, ...]
    before: Mapping[str, Number]
    after: Mapping[str, Number]
    source: str | None = None  # file:line of the manifest entry (None for pruned entities)
    meta: Mapping[str, str] = field(default_factory=dict)

    @property
    def action(self) -> Action:
        if not self.before:
            return Action.CREATE
        if not self.after:
            return Action.DELETE
        return Action.UPDATE

    @property
    def removes(self) -> bool:
        return any(k.new is None for k in self.keys)

    @property
    def sets(self) -> bool:
        return any(k.new is not None for k in self.keys)

    def change(self) -> EntityChange:
        """The one write for this entity: its sets and removes together."""
        return EntityChange(
            self.entity,
            {k.key: k.new for k in self.keys if k.new is not None},
            frozenset(k.key for k in self.keys if k.new is None),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "entity": self.entity.to_json(),
            "path": entity_path_text(self.entity, quoted=False),
            "action": self.action.value,
            "keys": [k.to_json() for k in self.keys],
            "before": dict(self.before),
            "after": dict(self.after),
        }
        if self.source:
            out["source"] = self.source
        out.update(self.meta)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EntityDiff | None:
        entity = Entity.from_json(data["entity"])
        before = _typed(entity, data.get("before") or {})
        after = _typed(entity, data.get("after") or {})
        return diff_entity(
            entity,
            before,
            after,
            source=data.get("source"),
            meta={k: str(data[k]) for k in ("owner", "reason", "ticket") if data.get(k) is not None},
        )  # None when before == after (an edited plan): nothing to do


@dataclass
class Plan:
    """Changes in apply order, plus what the plan was computed from."""

    diffs: list[EntityDiff]
    #: the digest of the live state the plan was made from, as saved; None: worked out from ``live`` when first
    #: asked for (:attr:`fingerprint`), since a plan that is only shown never needs it
    known_fingerprint: str | None
    prune: bool = False
    unchanged: int = 0  # declared entities already as desired
    unmanaged: int = 0  # live entities the manifest neither declares nor prunes (left alone)
    #: what the live state means to brokers (core.values): values they cannot parse and what the plan does with
    #: them, several stored names for one address, ip names that are not addresses
    notes: list[str] = field(default_factory=list)
    #: the notes (of :attr:`notes`) on a stored value brokers cannot parse that the plan leaves as it is (the
    #: manifest does not set it): a caller may add how to remove it
    kept: frozenset[str] = frozenset()
    live: Sequence[QuotaRecord] = field(default=(), repr=False, compare=False)

    @property
    def fingerprint(self) -> str:
        """The digest of the live state (:func:`fingerprint`) that ``apply --plan`` compares before writing."""
        if self.known_fingerprint is None:
            self.known_fingerprint = fingerprint(self.live)
        return self.known_fingerprint

    @property
    def pending(self) -> bool:
        return bool(self.diffs)

    @property
    def deletions(self) -> int:
        """Entities that lose at least one key (what ``--max-deletions`` caps)."""
        return sum(1 for d in self.diffs if d.removes)

    def counts(self) -> dict[str, int]:
        out = {a.value: 0 for a in Action}
        for d in self.diffs:
            out[d.action.value] += 1
        out["unchanged"] = self.unchanged
        out["unmanaged"] = self.unmanaged
        out["deletions"] = self.deletions
        return out

    def expected(self) -> dict[Entity, Mapping[str, Number]]:
        """Entity -> the live config the plan saw (for the backend's compare-before-write)."""
        return {d.entity: d.before for d in self.diffs}

    def changes(self) -> list[EntityChange]:
        return [d.change() for d in self.diffs]

    def to_json(self, target: Mapping[str, str] | None = None) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "version": PLAN_VERSION,
            **({"target": dict(target)} if target else {}),
            "fingerprint": self.fingerprint,
            "prune": self.prune,
            "summary": self.counts(),
            "changes": [d.to_json() for d in self.diffs],
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    @classmethod
    def from_json(cls, data: Any, name: str = "plan") -> Plan:
        """Read a saved plan; every entity and value is validated again (plans are files people can edit)."""
        if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT:
            raise NotAPlan(name)
        if data.get("version") != PLAN_VERSION:
            raise UsageError(f"{name}: plan version {data.get('version')!r} is not supported (expected {PLAN_VERSION})")
        try:
            diffs = [d for d in (EntityDiff.from_json(c) for c in data["changes"]) if d is not None]
            fingerprint = str(data["fingerprint"])
        except QuotaError as e:
            raise UsageError(f"{name}: {e}") from None
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise UsageError(f"{name}: malformed plan ({record_problem(e)})") from None
        summary = data.get("summary") or {}
        return cls(
            diffs,
            fingerprint,
            prune=bool(data.get("prune")),
            unchanged=int(summary.get("unchanged", 0)),
            unmanaged=int(summary.get("unmanaged", 0)),
        )


def _typed(entity: Entity, config: Mapping[str, Any]) -> dict[str, Number]:
    return {k: check_number(lookup_key(k, entity.kind), v) for k, v in config.items()}


def diff_entity(
    entity: Entity,
    before: Mapping[str, Number],
    after: Mapping[str, Number],
    source: str | None = None,
    meta: Mapping[str, str] | None = None,
) -> EntityDiff | None:
    """The key-level difference, or None when there is none."""
    keys = key_diffs(before, after)
    if not keys:
        return None
    return EntityDiff(entity, keys, dict(before), dict(after), source, dict(meta or {}))


def key_diffs(before: Mapping[str, Number], after: Mapping[str, Number]) -> tuple[KeyDiff, ...]:
    """The keys whose value differs, in key order (none: the entity is as desired)."""
    if before == after:
        return ()
    return tuple(
        KeyDiff(k, before.get(k), after.get(k))
        for k in sorted(set(before) | set(after), key=lambda k: KEY_ORDER.get(k, 99))
        if before.get(k) != after.get(k)
    )


_ABSENT: Final = object()


def make_plan(manifest: Manifest, live: Sequence[QuotaRecord], prune: bool = False) -> Plan:
    """Diff desired (manifest) against live; see the module docstring for the rules.

    A note on a stored value brokers cannot parse that the manifest leaves alone is also in :attr:`Plan.kept` (the
    CLI says there which command removes it).

    A manifest ip entity is the live entity that names the same address, whatever its stored spelling
    (``ips/2001:DB8:0::1`` for ``2001:db8::1``): brokers key ip quotas by address, so the plan changes the stored
    node instead of writing a second one. Several stored spellings of one address all get the declared quotas.
    Stored values brokers cannot parse are not live quotas: a declared key rewrites them.
    """
    # entities keyed by their components' tuple: hashed and compared in C, where an Entity's dataclass __hash__ and
    # __eq__ are Python calls (half a million of them in a plan of 100,000 entities)
    live_by_entity = {(r.entity.user, r.entity.client_id, r.entity.ip): r.config for r in live}
    spellings: dict[Entity, list[Entity]] = {}  # ip entities by address (the others are their own key)
    for r in live:
        if r.entity.ip is not None:
            spellings.setdefault(r.entity.address_key(), []).append(r.entity)
    matched: set[Entity] = set()  # live ip spellings the manifest's ip entries stand for
    diffs: list[EntityDiff] = []
    unchanged = unmanaged = 0
    for entry in manifest.entries:
        if entry.entity.ip is None and not prune:  # in sync when each declared key has its live value (the rest
            e = entry.entity  # as below, without two copies and a diff per entity)
            current = live_by_entity.get((e.user, e.client_id, e.ip))
            if current is not None:
                for k, v in entry.config.items():
                    if current.get(k, _ABSENT) != v:
                        break
                else:
                    unchanged += 1
                    continue
        targets = spellings.get(entry.entity.address_key(), [entry.entity]) if entry.entity.ip is not None else []
        for entity in targets or [entry.entity]:
            if entity is not entry.entity:
                matched.add(entity)
            before = dict(live_by_entity.get((entity.user, entity.client_id, entity.ip), {}))
            owned = prune and manifest.owns(entry.entity)
            after = dict(entry.config) if owned else {**before, **entry.config}
            keys = key_diffs(before, after)
            if keys:
                diffs.append(EntityDiff(entity, keys, before, after, str(entry.source), entry.meta()))
            else:
                unchanged += 1
    declared = {(x.entity.user, x.entity.client_id, x.entity.ip) for x in manifest.entries}
    for r in live:
        if (r.entity.user, r.entity.client_id, r.entity.ip) in declared or (matched and r.entity in matched):
            continue
        if prune and manifest.owns(r.entity):
            d = diff_entity(r.entity, r.config, {})
            if d is not None:
                diffs.append(d)
        else:
            unmanaged += 1
    diffs.sort(key=apply_order)
    notes, kept = _unparsed_notes(live, diffs)
    notes += [str(f) for f in stored_findings(live) if f.code != "unparsable-value"]
    return Plan(
        diffs, None, prune=prune, unchanged=unchanged, unmanaged=unmanaged, notes=notes, kept=kept, live=tuple(live)
    )


def _unparsed_notes(live: Sequence[QuotaRecord], diffs: Sequence[EntityDiff]) -> tuple[list[str], frozenset[str]]:
    """A note per stored value brokers cannot parse, and those of the values the plan keeps."""
    sets = {(d.entity, k.key): k.new for d in diffs for k in d.keys if k.new is not None}
    notes, kept = [], set()
    for r in live:
        for k, text in r.unparsed.items():
            new = sets.get((r.entity, k))
            what = (
                f"applying the manifest rewrites it as {format_value(KEYS[k], new)}"
                if new is not None
                else "the manifest does not set it, so it stays"
            )
            why = (
                "which brokers cannot parse"
                if not_applied_reason(KEYS[k], text).startswith("not applied")
                else "no limit"
            )
            notes.append(f"{entity_path_text(r.entity)}: {k} is stored as {text!r}, {why}; {what}")
            if new is None:
                kept.add(notes[-1])
    return notes, frozenset(kept)


def apply_order(d: EntityDiff) -> tuple[int, int, EntitySortKey]:
    if not d.removes:
        return (0, 0, d.entity.sort_key())  # adding limits opens no window: any order is safe
    return (2 if not d.sets else 1, precedence_rank(d.entity), d.entity.sort_key())


def check_deletions(plan: Plan, max_deletions: int) -> None:
    """Refuse (exit 1, nothing written) when pruning would strip more entities than allowed."""
    if plan.deletions > max_deletions:
        raise TooManyDeletions(plan.deletions, max_deletions, counted(plan.deletions, "entity"))


def fingerprint(live: Sequence[QuotaRecord]) -> str:
    """A digest of the live quotas (entities and typed values, order-independent)."""
    items = sorted(
        [
            r.entity.path,
            sorted((k, format_value(KEYS[k], v)) for k, v in r.config.items())
            + sorted(("unparsed:" + k, v) for k, v in r.unparsed.items()),
        ]
        for r in live
    )
    digest = hashlib.sha256(json.dumps(items, separators=(",", ":"), ensure_ascii=False).encode())
    return "sha256:" + digest.hexdigest()
