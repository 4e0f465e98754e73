"""KIP-546 describe filters (exact / default / any components, strict or not), as pure predicates.

Both backends describe through these semantics, so ``describe`` gives identical results everywhere.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import IntEnum

from kquotactl.core.entities import DEFAULT, Entity, EntityType, Name
from kquotactl.core.errors import InvalidRequest
from kquotactl.core.inet import address_key


class MatchType(IntEnum):
    EXACT = 0  # that type, with exactly that name
    DEFAULT = 1  # that type, the default entity
    ANY = 2  # that type, any name including the default ("SPECIFIED")


@dataclass(frozen=True, slots=True)
class FilterComponent:
    entity_type: EntityType
    match_type: MatchType
    name: str | None = None

    def matches(self, value: Name | None) -> bool:
        if value is None:
            return False
        if self.match_type is MatchType.ANY:
            return True
        if self.match_type is MatchType.DEFAULT:
            return value is DEFAULT
        if value is DEFAULT:
            return False
        if self.entity_type is EntityType.IP and self.name is not None and value != self.name:
            return address_key(str(value)) == address_key(self.name)  # brokers key ips by address
        return value == self.name


@dataclass(frozen=True, slots=True)
class EntityFilter:
    components: tuple[FilterComponent, ...] = ()
    strict: bool = False

    @classmethod
    def all(cls) -> EntityFilter:
        return cls((), strict=False)

    @classmethod
    def exact(cls, entity: Entity) -> EntityFilter:
        comps = tuple(
            FilterComponent(t, MatchType.DEFAULT) if n is DEFAULT else FilterComponent(t, MatchType.EXACT, n)  # type: ignore[arg-type]
            for t, n in entity.components().items()
        )
        return cls(comps, strict=True)

    @classmethod
    def covering(cls, entities: Collection[Entity]) -> EntityFilter:
        """The narrowest one filter that matches every one of ``entities`` (one describe request reads them back):
        exact for one entity; for entities of one shape (all users, all pairs...), that shape, exact in the names
        they share; else everything."""
        if len(entities) == 1:
            return cls.exact(next(iter(entities)))
        shapes = {frozenset(e.components()) for e in entities}
        if len(shapes) != 1:
            return cls.all()
        comps = []
        for t in sorted(next(iter(shapes)), key=lambda t: t.value):
            names = {e.components()[t] for e in entities}
            name = next(iter(names))
            if len(names) > 1:
                comps.append(FilterComponent(t, MatchType.ANY))
            elif name is DEFAULT:
                comps.append(FilterComponent(t, MatchType.DEFAULT))
            else:
                comps.append(FilterComponent(t, MatchType.EXACT, str(name)))
        return cls(tuple(comps), strict=True)

    def validate(self) -> EntityFilter:
        seen: set[EntityType] = set()
        for c in self.components:
            if c.entity_type in seen:
                raise InvalidRequest(f"Duplicate {c.entity_type.value} filter component entity type")
            seen.add(c.entity_type)
        if EntityType.IP in seen and (EntityType.USER in seen or EntityType.CLIENT_ID in seen):
            raise InvalidRequest(
                "Invalid entity filter component combination, IP filter component should not be used "
                "with user or clientId filter component."
            )
        return self

    def component(self, t: EntityType) -> FilterComponent | None:
        for c in self.components:
            if c.entity_type is t:
                return c
        return None

    def matches(self, entity: Entity) -> bool:
        values = entity.components()
        for c in self.components:
            if not c.matches(values.get(c.entity_type)):
                return False
        if self.strict:
            constrained = {c.entity_type for c in self.components}
            if any(t not in constrained for t in values):
                return False
        return True

    def exact_entity(self) -> Entity | None:
        """If this filter can only match one entity, that entity (lets backends skip a full scan)."""
        if not self.strict or not self.components:
            return None
        comps: dict[EntityType, Name] = {}
        for c in self.components:
            if c.match_type is MatchType.ANY:
                return None
            comps[c.entity_type] = DEFAULT if c.match_type is MatchType.DEFAULT else c.name  # type: ignore[assignment]
        return Entity.from_components(comps)
