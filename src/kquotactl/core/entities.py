"""Quota entities: users, client-ids, (user, client-id) pairs and ips, each a name or the default.

An :class:`Entity` is the KIP-546 ``ClientQuotaEntity``: a set of typed components. A user and a
client-id may combine into a pair (all 8 user/client combinations); an ip stands alone. The ZooKeeper
path mapping (Kafka's ``ConfigEntityName`` + ``Sanitizer`` rules) lives here too because it *is* the
entity's identity on a ZooKeeper cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from kquotactl.core.errors import InvalidRequest, InvalidValue
from kquotactl.core.inet import IpKind, address_key, read_ip_name
from kquotactl.core.keys import KeyScope
from kquotactl.core.sanitizer import desanitize, sanitize
from kquotactl.core.wording import escaped, not_utf8, shown_name

DEFAULT_MARKER: Final = "<default>"
MAX_NAME_BYTES: Final = 4096  # far above any real principal; keeps znode paths and requests small


class _Default:
    """The default entity of a type (``<default>`` in ZooKeeper, ``null`` in KIP-546)."""

    _instance: _Default | None = None

    def __new__(cls) -> _Default:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DEFAULT"

    def __reduce__(self) -> str:
        return "DEFAULT"


DEFAULT: Final = _Default()
Name = str | _Default
#: :meth:`Entity.sort_key`: the kind rank, then (presence, name) of the user, the client-id and the ip
EntitySortKey = tuple[int, tuple[int, str], tuple[int, str], tuple[int, str]]


class EntityType(StrEnum):
    """Component types, with their KIP-546 names as values."""

    USER = "user"
    CLIENT_ID = "client-id"
    IP = "ip"

    @property
    def plural(self) -> str:
        """The kafka-configs ``--entity-type`` word (and ZooKeeper directory)."""
        return _PLURAL[self]

    @property
    def principal_word(self) -> str:
        return {EntityType.USER: "user-principal", EntityType.CLIENT_ID: "client-id", EntityType.IP: "ip"}[self]

    @classmethod
    def from_plural(cls, word: str) -> EntityType:
        for t, p in _PLURAL.items():
            if p == word:
                return t
        raise InvalidValue(f"invalid entity type {word!r}: must be one of users, clients, ips")

    @classmethod
    def from_name(cls, word: str) -> EntityType:
        """Accept the KIP-546 name (``user``, ``client-id``, ``ip``) or the plural."""
        for t in cls:
            if word == t.value or word == _PLURAL[t]:
                return t
        raise InvalidValue(f"invalid entity type {word!r}: must be one of user, client-id, ip")


_PLURAL = {EntityType.USER: "users", EntityType.CLIENT_ID: "clients", EntityType.IP: "ips"}


def check_name(etype: EntityType, name: str) -> str:
    """Validate a real (non-default) name; return it, canonical for ips."""
    if name == "":
        raise InvalidRequest(f"Empty {etype.value} not supported (use the default entity instead)")
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:  # a byte that was not UTF-8 (surrogateescape), or a lone surrogate
        where = not_utf8(name) or "it holds a lone surrogate, which UTF-8 cannot encode"
        raise InvalidValue(f"{etype.value} name {shown_name(name[:40])} is not UTF-8: {where}") from None
    if len(encoded) > MAX_NAME_BYTES:
        raise InvalidValue(f"{etype.value} name is {len(encoded)} bytes long; the limit is {MAX_NAME_BYTES}")
    if etype is EntityType.IP:
        return canonical_ip(name)
    return name


def canonical_ip(name: str) -> str:
    """An address literal as a broker reads it (``InetAddress.getByName``), in canonical form: ``2001:DB8:0::1`` is
    ``2001:db8::1``, ``::ffff:1.2.3.4`` is ``1.2.3.4``, ``1.2.3`` is ``1.2.0.3`` (see :mod:`kquotactl.core.inet`).

    Host names are refused: a broker would resolve them through its own resolver, which kquotactl cannot see.
    """
    parsed = read_ip_name(name)
    if parsed.kind is IpKind.ADDRESS and parsed.key is not None and name:
        return parsed.key
    why = {
        IpKind.RESOLVER: "not an address literal (a broker would resolve it through its own resolver)",
        IpKind.INTERFACE: "scoped by a network interface name, which depends on the broker host",
        IpKind.INVALID: "a malformed address literal",
        IpKind.ADDRESS: "empty (the default ip is <default>)",
    }[parsed.kind]
    raise InvalidValue(f"the entity name for ips must be a valid IP address, but it is: {name!r} ({why})")


@dataclass(frozen=True, slots=True)
class Entity:
    """A quota entity. ``None`` means the component is absent; :data:`DEFAULT` the default entity."""

    user: Name | None = None
    client_id: Name | None = None
    ip: Name | None = None

    @classmethod
    def of(cls, user: Name | None = None, client_id: Name | None = None, ip: Name | None = None) -> Entity:
        """Build and validate (names checked, ip canonicalised, combinations checked)."""
        if ip is not None and (user is not None or client_id is not None):
            raise InvalidRequest(
                "Invalid quota entity combination, IP entity should not be used with user/client ID entity."
            )
        if user is None and client_id is None and ip is None:
            raise InvalidRequest("Invalid empty client quota entity")
        return cls(
            user=user if user is None or isinstance(user, _Default) else check_name(EntityType.USER, user),
            client_id=client_id
            if client_id is None or isinstance(client_id, _Default)
            else check_name(EntityType.CLIENT_ID, client_id),
            ip=ip if ip is None or isinstance(ip, _Default) else check_name(EntityType.IP, ip),
        )

    @classmethod
    def from_components(cls, components: dict[EntityType, Name]) -> Entity:
        return cls.of(
            user=components.get(EntityType.USER),
            client_id=components.get(EntityType.CLIENT_ID),
            ip=components.get(EntityType.IP),
        )

    # -- views -----------------------------------------------------------------------------------

    @property
    def kind(self) -> KeyScope:
        return KeyScope.IP if self.ip is not None else KeyScope.CLIENT

    def components(self) -> dict[EntityType, Name]:
        out: dict[EntityType, Name] = {}
        if self.user is not None:
            out[EntityType.USER] = self.user
        if self.client_id is not None:
            out[EntityType.CLIENT_ID] = self.client_id
        if self.ip is not None:
            out[EntityType.IP] = self.ip
        return out

    def to_json(self) -> dict[str, str | None]:
        """The KIP-546 view: ``{"user": "alice", "client-id": null}`` (null is the default); written out rather than
        through :meth:`components`, whose enum keys cost a look-up each (a third of a large describe's rendering)."""
        out: dict[str, str | None] = {}
        if self.user is not None:
            out["user"] = None if self.user is DEFAULT else self.user  # type: ignore[assignment]
        if self.client_id is not None:
            out["client-id"] = None if self.client_id is DEFAULT else self.client_id  # type: ignore[assignment]
        if self.ip is not None:
            out["ip"] = None if self.ip is DEFAULT else self.ip  # type: ignore[assignment]
        return out

    @classmethod
    def from_json(cls, data: dict[str, str | None]) -> Entity:
        comps: dict[EntityType, Name] = {}
        for k, v in data.items():
            comps[EntityType.from_name(k)] = DEFAULT if v is None else v
        return cls.from_components(comps)

    @property
    def path(self) -> str:
        """The ZooKeeper entity path under ``/config`` (also the v2 notification ``entity_path``)."""
        if self.ip is not None:
            return "ips/" + _zk_name(self.ip, sanitized=False)
        if self.user is not None:
            p = "users/" + _zk_name(self.user)
            if self.client_id is not None:
                p += "/clients/" + _zk_name(self.client_id)
            return p
        assert self.client_id is not None
        return "clients/" + _zk_name(self.client_id)

    @classmethod
    def from_path(cls, path: str) -> Entity:
        """Parse a ZooKeeper entity path as a broker does; raises :class:`InvalidValue` if malformed."""
        parts = path.strip("/").split("/")
        try:
            if parts[0] == "users" and len(parts) == 2:
                return cls(user=_from_zk_name(parts[1]))
            if parts[0] == "users" and len(parts) == 4 and parts[2] == "clients":
                return cls(user=_from_zk_name(parts[1]), client_id=_from_zk_name(parts[3]))
            if parts[0] == "clients" and len(parts) == 2:
                return cls(client_id=_from_zk_name(parts[1]))
            if parts[0] == "ips" and len(parts) == 2:
                return cls(ip=DEFAULT if parts[1] == DEFAULT_MARKER else parts[1])
        except ValueError as e:
            raise InvalidValue(f"invalid quota entity path {path!r}: {e}") from None
        raise InvalidValue(f"invalid quota entity path {path!r}")

    def address_key(self) -> Entity:
        """The entity as a broker keys it: an ip entity by its address (``ips/2001:DB8:0::1`` and
        ``ips/2001:db8::1`` are one entry), every other entity by itself."""
        if self.ip is None or self.ip is DEFAULT:
            return self
        key = address_key(str(self.ip))
        return self if key == self.ip else Entity(ip=key)

    def words(self) -> str:
        """``user-principal 'alice', default client-id``: kafka-configs' ZooKeeper-mode wording (a name's control
        characters escaped)."""
        parts = []
        for t, n in self.components().items():
            word = t.principal_word if t is not EntityType.IP else "ips"
            parts.append(f"default {word}" if n is DEFAULT else f"{word} '{escaped(str(n))}'")
        return ", ".join(parts)

    def label(self) -> str:
        """Short human label: ``user=alice client-id=<default>``."""
        return " ".join(f"{t.value}={display_name(n)}" for t, n in self.components().items())

    def sort_key(self) -> EntitySortKey:
        """Users, then pairs, then clients, then ips; the default before names."""
        rank = 3 if self.ip is not None else 0 if self.client_id is None else 1 if self.user is not None else 2
        return (rank, _name_order(self.user), _name_order(self.client_id), _name_order(self.ip))

    def __str__(self) -> str:
        return self.label()


_ABSENT: Final = (0, "")
_DEFAULT_FIRST: Final = (1, "")


def _name_order(n: Name | None) -> tuple[int, str]:
    """An absent component first, then the default, then names (:meth:`Entity.sort_key`)."""
    return _ABSENT if n is None else _DEFAULT_FIRST if n is DEFAULT else (2, str(n))


def _zk_name(name: Name, sanitized: bool = True) -> str:
    if name is DEFAULT:
        return DEFAULT_MARKER
    assert isinstance(name, str)
    return sanitize(name) if sanitized else name


def _from_zk_name(zk_name: str) -> Name:
    if zk_name == DEFAULT_MARKER:
        return DEFAULT
    return desanitize(zk_name)


def display_name(name: Name, quoted: bool = True) -> str:
    """A name as every output shows it: ``<default>`` for the default entity, ``{name:<default>}`` for a real
    user or client-id spelled ``<default>`` (the manifest spelling of that name), anything else as
    :func:`~kquotactl.core.wording.shown_name` shows it (quoted and escaped when it is blank, holds whitespace or
    control characters). ``quoted=False``: the name as it is, for JSON, which escapes it itself."""
    if name is DEFAULT:
        return DEFAULT_MARKER
    if name == DEFAULT_MARKER:
        return "{name:<default>}"
    return shown_name(str(name)) if quoted else str(name)
