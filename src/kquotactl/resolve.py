"""Which quota applies to a connection: Kafka's broker-side resolution, as a pure function.

For a connection (user, client-id) each quota key resolves **independently** through the broker's 8
levels (``ClientQuotaManager`` / ``DefaultQuotaCallback``); the first level whose entity sets the key
wins, otherwise the key is unlimited:

    1 users/<u>/clients/<c>   2 users/<u>/clients/<default>   3 users/<u>
    4 users/<default>/clients/<c>   5 users/<default>/clients/<default>   6 users/<default>
    7 clients/<c>   8 clients/<default>

(KIP-55's text lists 7 levels and misses level 2; the broker has 8.) The level also decides who shares
the quota — the broker's metric tags, its *quota-id*: levels 1, 2, 4, 5 are exclusive to the
(user, client-id) pair, levels 3 and 6 are shared by all of the user's clients, and levels 7 and 8 by that
client-id across users. An ip resolves ``ips/<ip>`` then ``ips/<default>``.

Lookups are dictionary probes (at most 8 per key), never scans, so resolving many connections against
many entities stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from kquotactl.entity import DEFAULT, Entity, Name
from kquotactl.keys import CLIENT_KEYS, IP_KEYS, Number
from kquotactl.model import QuotaRecord
from kquotactl.sanitizer import sanitize


class Sharing(StrEnum):
    PAIR = "pair"  # exclusive to the (user, client-id) pair
    USER = "user"  # shared by every client-id of the user
    CLIENT = "client"  # shared by every user's connections with that client-id
    IP = "ip"  # per ip address
    NONE = "none"  # unlimited


@dataclass(frozen=True, slots=True)
class Level:
    """One precedence level: which user/client parts its entity has (a name, the default, or absent)."""

    number: int
    user: str | None  # "name", "default" or None (absent)
    client: str | None
    sharing: Sharing

    def entity(self, user: str, client_id: str) -> Entity:
        def part(kind: str | None, name: str) -> Name | None:
            return None if kind is None else DEFAULT if kind == "default" else name

        return Entity(user=part(self.user, user), client_id=part(self.client, client_id))

    @property
    def pattern(self) -> str:
        """``users/<user>/clients/<default>``-style description of the level."""
        parts = []
        if self.user is not None:
            parts.append("users/" + ("<user>" if self.user == "name" else "<default>"))
        if self.client is not None:
            parts.append("clients/" + ("<client-id>" if self.client == "name" else "<default>"))
        return "/".join(parts)


LEVELS: tuple[Level, ...] = (
    Level(1, "name", "name", Sharing.PAIR),
    Level(2, "name", "default", Sharing.PAIR),
    Level(3, "name", None, Sharing.USER),
    Level(4, "default", "name", Sharing.PAIR),
    Level(5, "default", "default", Sharing.PAIR),
    Level(6, "default", None, Sharing.USER),
    Level(7, None, "name", Sharing.CLIENT),
    Level(8, None, "default", Sharing.CLIENT),
)
IP_LEVELS = ("ip", "default")


@dataclass(frozen=True, slots=True)
class Resolution:
    """How one quota key resolves for one connection."""

    key: str
    limit: Number | None  # None: unlimited
    level: int | None  # 1..8 for user/client keys, 1..2 for ips; None when unlimited
    entity: Entity | None  # the entity that supplied the limit
    sharing: Sharing
    quota_id: tuple[str, str] | None  # broker metric tags (sanitized user, raw client-id); None for ips

    @property
    def entity_path(self) -> str | None:
        return self.entity.path if self.entity is not None else None


def quota_id(sharing: Sharing, user: str, client_id: str) -> tuple[str, str]:
    """The broker's metric tags (``quotaMetricTags``): user tags are sanitized, client-ids are raw."""
    if sharing is Sharing.PAIR:
        return (sanitize(user), client_id)
    if sharing is Sharing.USER:
        return (sanitize(user), "")
    return ("", client_id)  # client levels, and unlimited


class QuotaIndex:
    """Quotas keyed by entity, for constant-time resolution."""

    def __init__(self, records: Iterable[QuotaRecord] | Mapping[Entity, Mapping[str, Number]] = ()) -> None:
        if isinstance(records, Mapping):
            self._by_entity: dict[Entity, Mapping[str, Number]] = dict(records)
        else:
            self._by_entity = {r.entity: r.config for r in records}

    def __len__(self) -> int:
        return len(self._by_entity)

    def get(self, entity: Entity) -> Mapping[str, Number]:
        return self._by_entity.get(entity, {})

    def entities(self) -> Iterable[Entity]:
        return self._by_entity.keys()

    def resolve(self, key: str, user: str = "", client_id: str = "") -> Resolution:
        """Resolve a user/client key for a connection (``""`` for an unauthenticated user is a name too)."""
        for level in LEVELS:
            entity = level.entity(user, client_id)
            value = self._by_entity.get(entity, {}).get(key)
            if value is not None:
                return Resolution(
                    key, value, level.number, entity, level.sharing, quota_id(level.sharing, user, client_id)
                )
        return Resolution(key, None, None, None, Sharing.NONE, quota_id(Sharing.NONE, user, client_id))

    def resolve_ip(self, ip: str, key: str = "connection_creation_rate") -> Resolution:
        for number, name in enumerate((ip, DEFAULT), start=1):
            entity = Entity(ip=name)
            value = self._by_entity.get(entity, {}).get(key)
            if value is not None:
                return Resolution(key, value, number, entity, Sharing.IP, None)
        return Resolution(key, None, None, None, Sharing.NONE, None)

    def resolve_all(self, user: str = "", client_id: str = "") -> list[Resolution]:
        return [self.resolve(k, user, client_id) for k in CLIENT_KEYS]

    def resolve_all_ip(self, ip: str) -> list[Resolution]:
        return [self.resolve_ip(ip, k) for k in IP_KEYS]
