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

The broker resolves in two phases (``quotaMetricTags`` then ``quotaLimit``), and this module does too,
because the two phases only agree with the simple rule above when both names are non-empty:

- an empty client-id never reaches levels 1, 2, 4, 5, 7 or 8: a (user, client-id) level found first
  gives the tags ``(user, "")``, which are then looked up at levels 3 and 6 only;
- an empty user never reaches levels 3 or 6 (nor 1, 2, 4, 5): its tags have no user part;
- a ≤ 2.8 broker's static ``quota.producer.default`` / ``quota.consumer.default`` is a 9th level, reached
  like levels 7 and 8 (shared per client-id);
- with only one kind of level configured the broker takes a fast path for the tags, which only changes the
  quota-id of an unlimited key.

Lookups are dictionary probes (at most 8 per connection, shared by every key), never scans, so resolving
many connections against many entities stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, Entity, Name
from kquotactl.core.inet import address_key, read_ip_name
from kquotactl.core.keys import CLIENT_KEYS, IP_CONNECTION_KEY, IP_KEYS, KEYS, LONG_MAX, Number
from kquotactl.core.sanitizer import sanitize


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
STATIC_LEVEL = 9  # a <= 2.8 broker's static quota.producer.default / quota.consumer.default


def entity_level(entity: Entity) -> int:
    """The level an entity sits at in its chain: 1 (most specific) .. 8 for user/client entities (:data:`LEVELS`);
    for ips 1 (an address) or 2 (the ip default)."""
    if entity.ip is not None:
        return 2 if entity.ip is DEFAULT else 1
    u = None if entity.user is None else "default" if entity.user is DEFAULT else "name"
    c = None if entity.client_id is None else "default" if entity.client_id is DEFAULT else "name"
    for level in LEVELS:
        if (level.user, level.client) == (u, c):
            return level.number
    raise ValueError(f"not a quota entity: {entity!r}")  # pragma: no cover - Entity forbids it


def precedence_rank(entity: Entity) -> int:
    """One order over both chains, most specific first: user/client levels 1..8, then ips 9 (an address) and 10
    (the ip default). What apply orders its writes by."""
    return entity_level(entity) + (len(LEVELS) if entity.ip is not None else 0)


#: key -> a <= 2.8 broker's static default config for it (the registry's ``static_default``)
STATIC_CONFIGS: dict[str, str] = {k: v.static_default for k, v in KEYS.items() if v.static_default}


class ChainStatus(StrEnum):
    """What one precedence level did for one key of one connection."""

    APPLIED = "applied"
    NOT_SET = "not set"
    SHADOWED = "shadowed"  # set, but a higher-precedence level applied
    IGNORED = "ignored"  # set, but the broker never consults it for this connection (empty user / client-id)


@dataclass(frozen=True, slots=True)
class ChainStep:
    """One level of the precedence chain for one key."""

    level: int
    entity: Entity | None  # None for the static 9th level, or a level the connection cannot have (empty names)
    value: Number | None
    status: ChainStatus

    @property
    def entity_path(self) -> str | None:
        return self.entity.path if self.entity is not None else None


@dataclass(frozen=True, slots=True)
class Resolution:
    """How one quota key resolves for one connection."""

    key: str
    limit: Number | None  # None: unlimited
    level: int | None  # 1..8 (9: static broker default) for user/client keys, 1..2 for ips; None when unlimited
    entity: Entity | None  # the entity that supplied the limit (None for the static level)
    sharing: Sharing
    quota_id_tags: tuple[str, str] | None  # broker metric tags (sanitized user, raw client-id); None for ips

    @property
    def entity_path(self) -> str | None:
        return self.entity.path if self.entity is not None else None


def quota_id_tags(sharing: Sharing, user: str, client_id: str) -> tuple[str, str]:
    """The broker's metric tags (``quotaMetricTags``): user tags are sanitized, client-ids are raw."""
    if sharing is Sharing.PAIR:
        return (sanitize(user), client_id)
    if sharing is Sharing.USER:
        return (sanitize(user), "")
    return ("", client_id)  # client levels, and unlimited


@lru_cache(maxsize=65536)
def _sanitized(user: str) -> str:
    return sanitize(user)


# The broker's ``QuotaTypes`` bits: which kinds of levels have been configured.
_CLIENT_BIT, _USER_BIT, _PAIR_BIT = 1, 2, 4
_EMPTY: Mapping[str, Number] = {}


# The (user, client-id) index key of levels 1..8 for a connection.
_LEVEL_KEY = (
    lambda u, c: (u, c),
    lambda u, c: (u, DEFAULT),
    lambda u, c: (u, None),
    lambda u, c: (DEFAULT, c),
    lambda u, c: (DEFAULT, DEFAULT),
    lambda u, c: (DEFAULT, None),
    lambda u, c: (None, c),
    lambda u, c: (None, DEFAULT),
)


def _ip_key(name: Name) -> Name:
    """How brokers key ip quotas: by address (canonical form), whatever spelling the znode has (a host name or a
    malformed name keys by itself, so it never matches an address)."""
    return name if name is DEFAULT else address_key(name)  # type: ignore[arg-type]


def _bit(entity: Entity) -> int:
    if entity.user is not None:
        return _PAIR_BIT if entity.client_id is not None else _USER_BIT
    return _CLIENT_BIT


class QuotaIndex:
    """Quotas keyed by entity, for constant-time resolution.

    ``static_defaults`` holds a <= 2.8 broker's static ``quota.producer.default`` /
    ``quota.consumer.default`` (by key name), the 9th level. ``per_key_levels`` chooses how the broker
    learned which kinds of levels exist (its fast path for the tags): a ZooKeeper-mode broker hears of
    every entity in every quota manager (False, the default); a KRaft broker only of entities that set
    that manager's key (True). It only changes the quota-id shown for an unlimited key.
    """

    def __init__(
        self,
        records: Iterable[QuotaRecord] | Mapping[Entity, Mapping[str, Number]] = (),
        *,
        static_defaults: Mapping[str, Number] | None = None,
        per_key_levels: bool = False,
    ) -> None:
        #: entity -> stored values brokers cannot parse (key -> stored text); never part of a resolution
        self.unparsed: dict[Entity, Mapping[str, str]] = {}
        if isinstance(records, Mapping):
            self._by_entity: dict[Entity, Mapping[str, Number]] = dict(records)
        else:
            records = list(records)
            self._by_entity = {r.entity: r.config for r in records}
            self.unparsed = {r.entity: r.unparsed for r in records if r.unparsed}
        for k in static_defaults or {}:
            if k not in STATIC_CONFIGS:
                raise ValueError(f"{k} has no static broker default (only {', '.join(STATIC_CONFIGS)})")
        # Long.MAX_VALUE is the static setting's own default: a broker cannot tell it from "not set" (it neither
        # enables the client-id level for the tags nor limits anything), so neither does the index.
        self.static_defaults: dict[str, Number] = {k: v for k, v in (static_defaults or {}).items() if v != LONG_MAX}
        self.per_key_levels = per_key_levels
        # (user, client_id) -> config, with DEFAULT/None as in Entity: the probes build no Entity objects.
        self._pairs: dict[tuple[Name | None, Name | None], Mapping[str, Number]] = {}
        self._pair_entity: dict[tuple[Name | None, Name | None], Entity] = {}
        self._paths: dict[Entity, str] = {}
        self._ips: dict[Name, Mapping[str, Number]] = {}
        self._ip_entity: dict[Name, Entity] = {}
        self._ip_spellings: dict[Name, list[Entity]] = {}  # address -> every stored spelling of it
        self._ip_names: list[Entity] | None = None
        self._last: tuple[str | None, str | None, tuple[Mapping[str, Number], ...] | None] = (None, None, None)
        all_bits = 0
        key_bits: dict[str, int] = {}
        for e, cfg in self._by_entity.items():
            if e.ip is not None:
                ipk = _ip_key(e.ip)
                self._ips[ipk] = cfg
                self._ip_entity[ipk] = e
                self._ip_spellings.setdefault(ipk, []).append(e)
                continue
            self._pairs[(e.user, e.client_id)] = cfg
            self._pair_entity[(e.user, e.client_id)] = e
            b = _bit(e)
            all_bits |= b
            for k in cfg:
                key_bits[k] = key_bits.get(k, 0) | b
        self._bits = {
            k: (key_bits.get(k, 0) if per_key_levels else all_bits) | (_CLIENT_BIT if k in self.static_defaults else 0)
            for k in CLIENT_KEYS
        }

    def __len__(self) -> int:
        return len(self._by_entity)

    def get(self, entity: Entity) -> Mapping[str, Number]:
        return self._by_entity.get(entity, {})

    def entities(self) -> Iterable[Entity]:
        return self._by_entity.keys()

    # -- user / client-id keys -------------------------------------------------------------------

    def _configs(self, user: str, client_id: str) -> tuple[Mapping[str, Number], ...]:
        """The configs of levels 1..8 for one connection (8 dict probes; empty names have no entity).

        The last connection's answer is kept: callers resolving key by key probe once per connection.
        """
        last = self._last
        if last[0] == user and last[1] == client_id and last[2] is not None:
            return last[2]
        p = self._pairs
        u: Name | None = user if user != "" else _NO_ENTITY
        c: Name | None = client_id if client_id != "" else _NO_ENTITY
        cfgs = (
            p.get((u, c), _EMPTY),
            p.get((u, DEFAULT), _EMPTY),
            p.get((u, None), _EMPTY),
            p.get((DEFAULT, c), _EMPTY),
            p.get((DEFAULT, DEFAULT), _EMPTY),
            p.get((DEFAULT, None), _EMPTY),
            p.get((None, c), _EMPTY),
            p.get((None, DEFAULT), _EMPTY),
        )
        self._last = (user, client_id, cfgs)
        return cfgs

    def _tags(self, key: str, user: str, client_id: str, cfgs: tuple[Mapping[str, Number], ...]) -> tuple[str, str]:
        """Phase A (``quotaMetricTags``): the sensor's (sanitized user, client-id) tags."""
        bits = self._bits.get(key, 0)
        if bits in (0, _CLIENT_BIT):
            return ("", client_id)
        su = _sanitized(user)
        if bits == _USER_BIT:
            return (su, "")
        if bits == _PAIR_BIT:
            return (su, client_id)
        for i in range(6):  # levels 1..6: 1, 2, 4, 5 give (user, client); 3, 6 give (user, "")
            if key in cfgs[i]:
                return (su, "") if i in (2, 5) else (su, client_id)
        return ("", client_id)

    def _limit(self, key: str, tags: tuple[str, str], cfgs: tuple[Mapping[str, Number], ...]) -> int | None:
        """Phase B (``quotaLimit``): the level (1..9) whose value the tags reach, or None."""
        tu, tc = tags
        if tu and tc:
            order: tuple[int, ...] = (1, 2, 4, 5)
        elif tu:
            order = (3, 6)
        elif tc:
            order = (7, 8)
        else:
            return None
        for lv in order:
            if key in cfgs[lv - 1]:
                return lv
        if not tu and tc and key in self.static_defaults:
            return STATIC_LEVEL
        return None

    def _raw(
        self, key: str, user: str, client_id: str, cfgs: tuple[Mapping[str, Number], ...]
    ) -> tuple[Number | None, int | None, Entity | None, Sharing, tuple[str, str]]:
        """(limit, level, entity, sharing, tags) without building a :class:`Resolution` (bulk paths)."""
        tags = self._tags(key, user, client_id, cfgs)
        lv = self._limit(key, tags, cfgs)
        if lv is None:
            return (None, None, None, Sharing.NONE, tags)
        if lv == STATIC_LEVEL:
            return (self.static_defaults[key], lv, None, Sharing.CLIENT, tags)
        level = LEVELS[lv - 1]
        return (cfgs[lv - 1][key], lv, self._level_entity(level, user, client_id), level.sharing, tags)

    def _level_entity(self, level: Level, user: str, client_id: str) -> Entity:
        u = DEFAULT if level.user == "default" else None if level.user is None else user
        c = DEFAULT if level.client == "default" else None if level.client is None else client_id
        return self._pair_entity[(u, c)]

    def _resolve(self, key: str, user: str, client_id: str, cfgs: tuple[Mapping[str, Number], ...]) -> Resolution:
        return Resolution(key, *self._raw(key, user, client_id, cfgs))

    def resolve(self, key: str, user: str = "", client_id: str = "") -> Resolution:
        """Resolve a user/client key for a connection, exactly as the broker does (empty names included)."""
        return self._resolve(key, user, client_id, self._configs(user, client_id))

    def applied_entity(self, key: str, user: str = "", client_id: str = "") -> Entity | None:
        """The entity whose ``key`` applies to the connection (None: the static level, or unlimited); for lint."""
        cfgs = self._configs(user, client_id)
        lv = self._limit(key, self._tags(key, user, client_id, cfgs), cfgs)
        if lv is None or lv == STATIC_LEVEL:
            return None
        return self._level_entity(LEVELS[lv - 1], user, client_id)

    def resolve_all(self, user: str = "", client_id: str = "") -> list[Resolution]:
        """Every user/client key for one connection (the 8 probes are shared by all keys)."""
        cfgs = self._configs(user, client_id)
        return [self._resolve(k, user, client_id, cfgs) for k in CLIENT_KEYS]

    def resolve_all_raw(
        self, user: str = "", client_id: str = ""
    ) -> list[tuple[str, Number | None, int | None, Entity | None, Sharing, tuple[str, str]]]:
        """:meth:`resolve_all` as plain tuples ``(key, limit, level, entity, sharing, quota_id_tags)``: for bulk use.

        With both names non-empty the broker's two phases reduce to "the first level that sets the key"
        (the tags follow from that level), which is computed here from the few levels that exist.
        """
        cfgs = self._configs(user, client_id)
        if not user or not client_id:
            return [(k, *self._raw(k, user, client_id, cfgs)) for k in CLIENT_KEYS]
        present = [(i, cfg) for i, cfg in enumerate(cfgs) if cfg]
        su = _sanitized(user)
        out: list[tuple[str, Number | None, int | None, Entity | None, Sharing, tuple[str, str]]] = []
        for key in CLIENT_KEYS:
            for i, cfg in present:
                if key in cfg:
                    level = LEVELS[i]
                    sharing = level.sharing
                    tags = (
                        (su, client_id)
                        if sharing is Sharing.PAIR
                        else (su, "")
                        if sharing is Sharing.USER
                        else ("", client_id)
                    )
                    out.append((key, cfg[key], i + 1, self._pair_entity[_LEVEL_KEY[i](user, client_id)], sharing, tags))
                    break
            else:
                if key in self.static_defaults:
                    out.append((key, self.static_defaults[key], STATIC_LEVEL, None, Sharing.CLIENT, ("", client_id)))
                else:
                    out.append((key, None, None, None, Sharing.NONE, self._tags(key, user, client_id, cfgs)))
        return out

    def path(self, entity: Entity) -> str:
        """``entity.path``, cached (sanitizing names is the costly part of explaining many connections)."""
        p = self._paths.get(entity)
        if p is None:
            p = self._paths[entity] = entity.path
        return p

    def chain(
        self, key: str, user: str = "", client_id: str = "", resolution: Resolution | None = None
    ) -> list[ChainStep]:
        """Every level for one key, marked applied / not set / shadowed / ignored (9 only with a static default)."""
        cfgs = self._configs(user, client_id)
        res = resolution or self._resolve(key, user, client_id, cfgs)
        steps = []
        for i, level in enumerate(LEVELS):
            value = cfgs[i].get(key)
            possible = not ((level.user == "name" and user == "") or (level.client == "name" and client_id == ""))
            entity = level.entity(user, client_id) if possible else None
            steps.append(ChainStep(level.number, entity, value, _status(level.number, value, res.level)))
        if key in self.static_defaults:
            value = self.static_defaults[key]
            steps.append(ChainStep(STATIC_LEVEL, None, value, _status(STATIC_LEVEL, value, res.level)))
        return steps

    # -- ips -------------------------------------------------------------------------------------

    def resolve_ip(self, ip: str, key: str = IP_CONNECTION_KEY) -> Resolution:
        """``ips/<ip>``, then ``ips/<default>``, then unlimited (KIP-612). Addresses match as brokers match them,
        by address: ``2001:DB8:0::1`` is ``2001:db8::1``, and a broker-written ``%3A%3A1`` node is ``::1``."""
        k = _ip_key(ip)
        cfg = self._ips.get(k, _EMPTY)
        if key in cfg:
            return Resolution(key, cfg[key], 1, self._ip_entity[k], Sharing.IP, None)
        cfg = self._ips.get(DEFAULT, _EMPTY)
        if key in cfg:
            return Resolution(key, cfg[key], 2, Entity(ip=DEFAULT), Sharing.IP, None)
        return Resolution(key, None, None, None, Sharing.NONE, None)

    def ip_spellings(self, ip: Name) -> list[Entity]:
        """Every stored entity that names the address ``ip`` (more than one: the broker keeps whichever it applied
        last, see :func:`kquotactl.core.values.stored_findings`)."""
        return list(self._ip_spellings.get(_ip_key(ip), ()))

    def ip_names(self) -> list[Entity]:
        """Stored ip entities that are not address literals (host names, malformed names)."""
        if self._ip_names is None:
            self._ip_names = [
                es[0] for k, es in self._ip_spellings.items() if k is not DEFAULT and read_ip_name(str(k)).key is None
            ]
        return self._ip_names

    def resolve_all_ip(self, ip: str) -> list[Resolution]:
        return [self.resolve_ip(ip, k) for k in IP_KEYS]

    def chain_ip(self, ip: str, key: str = IP_CONNECTION_KEY, resolution: Resolution | None = None) -> list[ChainStep]:
        res = resolution or self.resolve_ip(ip, key)
        steps = []
        for number, name in ((1, _ip_key(ip)), (2, DEFAULT)):
            value = self._ips.get(name, _EMPTY).get(key)
            entity = self._ip_entity.get(name) or Entity(ip=name)
            steps.append(ChainStep(number, entity, value, _status(number, value, res.level)))
        return steps


class _NoEntity:
    """Stands for an empty name in probes: no entity can have it, so every probe with it misses."""


_NO_ENTITY: Name = _NoEntity()  # type: ignore[assignment]


def _status(level: int, value: Number | None, applied: int | None) -> ChainStatus:
    if value is None:
        return ChainStatus.NOT_SET
    if level == applied:
        return ChainStatus.APPLIED
    if applied is not None and level > applied:
        return ChainStatus.SHADOWED
    return ChainStatus.IGNORED
