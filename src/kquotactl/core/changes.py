"""The data that flows between the core, the backends and the renderers, and the pure change logic."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from kquotactl.core.entities import Entity
from kquotactl.core.errors import InvalidConfigs, InvalidValue, NothingToChange, QuotaError, UsageError
from kquotactl.core.keys import (
    IP_CONNECTION_KEY,
    KEYS,
    Number,
    check_live_key,
    check_number,
    lookup_key,
    not_applied_reason,
    parse_value,
)

QuotaConfig = dict[str, Number]


class WireEntry(NamedTuple):
    """A record as one DescribeClientQuotas response carried it (admin API backend).

    kafka-configs prints a response in the iteration order of the Java hash maps its client fills from it, so
    reproducing its output needs the broker's order, names and doubles as they came. (A named tuple: one per
    entity of a describe, made three times faster than a frozen dataclass.)
    """

    position: int  # in the response
    entries: int  # entries in the response (the initial capacity of the client's HashMap)
    entity: tuple[tuple[str, str | None], ...]  # (entity type, name or None for the default), as sent
    values: tuple[tuple[str, float], ...]  # every key with its double, in response order


@dataclass(frozen=True)
class QuotaRecord:
    """One entity's quotas as read from a cluster. ``raw`` keeps the stored strings (ZooKeeper)."""

    entity: Entity
    config: Mapping[str, Number]
    raw: Mapping[str, str] | None = None
    version: int | None = None  # backend-specific (ZooKeeper znode version), for compare-and-set
    #: stored values that are no limit (key -> stored text, ZooKeeper): brokers cannot parse them, or parse them
    #: as NaN/Infinity (see :func:`kquotactl.core.keys.not_applied_reason`); not in ``config``
    unparsed: Mapping[str, str] = field(default_factory=dict)
    wire: WireEntry | None = field(default=None, compare=False)  # admin API: the response as it came

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"entity": self.entity.to_json(), "config": dict(self.config)}
        if self.unparsed:
            out["not_applied"] = {
                k: {"stored": v, "reason": not_applied_reason(KEYS[k], v)} for k, v in self.unparsed.items()
            }
        return out


@dataclass(frozen=True)
class EntityChange:
    """Set some keys and remove others on one entity, in one write."""

    entity: Entity
    set: Mapping[str, Number] = field(default_factory=dict)
    remove: frozenset[str] = frozenset()
    if_exists: bool = False  # removing a key that is not set is not an error

    @property
    def empty(self) -> bool:
        return not self.set and not self.remove


def build_change(
    entity: Entity,
    add: Mapping[str, str | Number],
    delete: Iterable[str] = (),
    if_exists: bool = False,
) -> EntityChange:
    """Validate keys and values for the entity's kind and build the change; nothing is written here."""
    kind = entity.kind
    typed: QuotaConfig = {}
    for k, v in add.items():
        key = lookup_key(k, kind)
        typed[k] = parse_value(key, v) if isinstance(v, str) else check_number(key, v)
    removes = []
    for k in delete:
        lookup_key(k, kind)
        removes.append(k)
    both = sorted(set(typed) & set(removes))
    if both:
        raise UsageError(f"{', '.join(both)} both added and deleted in one command; pick one")
    if not typed and not removes:
        raise NothingToChange()
    return EntityChange(entity, typed, frozenset(removes), if_exists)


def check_live_changes(changes: Iterable[EntityChange]) -> None:
    """Before anything is written to a live cluster: refuse setting a key no Apache Kafka release knows.

    Removing such a key (stored by some other tool) stays allowed.
    """
    for ch in changes:
        for k in ch.set:
            try:
                check_live_key(KEYS[k])
            except InvalidValue as e:
                raise InvalidValue(f"{ch.entity.label()}: {e}") from None


def release_refusal(entity: Entity, keys: Iterable[str], release: tuple[int, int]) -> str | None:
    """Why brokers of Kafka ``release`` refuse to store quotas on ``entity`` or any of ``keys`` (None: they know
    them all). Keys came with releases (:attr:`QuotaKey.arrived_with`, in the release table), ip entities with
    their key: an older broker answers ``Invalid configuration key`` or ``Custom entity type 'ip' not supported``."""
    from kquotactl.core.kafkaversions import behaviour, since

    known = behaviour(release)
    ip_change = KEYS[IP_CONNECTION_KEY].arrived_with
    if entity.ip is not None and not known.has(ip_change):
        return f"ip quotas need Kafka {release_text(since(ip_change))} or later"
    for k in keys:
        spec = KEYS.get(k)
        if spec is not None and spec.arrived_with and not known.has(spec.arrived_with):
            return f"{k} needs Kafka {release_text(since(spec.arrived_with))} or later"
    return None


def release_text(release: tuple[int, int]) -> str:
    return ".".join(map(str, release))


def check_one_change_per_entity(changes: Iterable[EntityChange]) -> None:
    """A batch carries each entity at most once: its sets and removes go in one write."""
    seen: set[Entity] = set()
    for ch in changes:
        if ch.entity in seen:
            raise UsageError(f"entity {ch.entity.label()} appears twice in one alter")
        seen.add(ch.entity)


def apply_change(current: Mapping[str, Number], change: EntityChange) -> QuotaConfig:
    """The entity's config after the change; deleting an unset key fails unless ``if_exists``."""
    missing = sorted(k for k in change.remove if k not in current)
    if missing and not change.if_exists:
        raise InvalidConfigs(missing, change.entity.label())
    new: QuotaConfig = {k: v for k, v in current.items() if k not in change.remove}
    new.update(change.set)
    return new


class Outcome(StrEnum):
    APPLIED = "applied"
    UNCHANGED = "unchanged"  # already in the desired state: nothing written, no notification
    VALIDATED = "validated"  # dry run / validate-only: would apply
    REJECTED = "rejected"
    NOT_ATTEMPTED = "not-attempted"


@dataclass(frozen=True)
class EntityResult:
    entity: Entity
    outcome: Outcome
    before: Mapping[str, Number] = field(default_factory=dict)
    after: Mapping[str, Number] = field(default_factory=dict)
    message: str = ""
    error: QuotaError | None = field(default=None, compare=False, repr=False)  # why it was rejected, as data

    def to_json(self) -> dict[str, Any]:
        return {
            "entity": self.entity.to_json(),
            "outcome": self.outcome.value,
            "before": dict(self.before),
            "after": dict(self.after),
            **({"message": self.message} if self.message else {}),
        }


def stale_plan_result(
    entity: Entity, expected: Mapping[Entity, Mapping[str, Number]] | None, before: Mapping[str, Number]
) -> EntityResult | None:
    """The rejection of an entity whose live config is no longer what the plan saw (``expected``), else None: every
    backend refuses to overwrite a change made since the plan (a stale plan)."""
    if expected is None or entity not in expected or dict(expected[entity]) == before:
        return None
    return EntityResult(
        entity, Outcome.REJECTED, before, before, message="changed since the plan was made (stale plan); re-run plan"
    )
