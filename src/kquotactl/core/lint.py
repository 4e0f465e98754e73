"""Lint a manifest: quotas that can never take effect, with the entry that hides them (pure).

Whether a quota ever applies is asked of the resolver itself (:class:`kquotactl.core.precedence.QuotaIndex`, the
broker's two phases, checked against Kafka's own quota managers), so lint can never contradict ``explain``:
an entry's key is *dead* when no connection resolves that key at the entry. The classic case: a ``<default>``
user quota hides every client-id quota for that key (a named user resolves it at ``users/<default>``, an
empty user name is left unlimited by it). Not dead, though the 8-level list suggests it: ``users/u`` under
``users/u/clients/<default>`` (a connection of ``u`` with an empty client-id is limited by ``users/u``), and
``clients/c`` under ``users/<default>/clients/c`` (an empty user name with client-id ``c``).

The connections asked are few: for a part the entry names, that name; for a ``<default>`` or absent part, an
empty name and one name no entry mentions. With both names non-empty the first level that sets a key wins, so
a name some entry mentions only adds levels consulted before the entry (or never, once the entry's level is
reached) and reaches nothing an unmentioned name does not. One exception, from the broker's two phases: an
empty user name reaches ``clients/<default>`` through a client-id that ``users/<default>/clients/<c>`` names
(that level sends it to the client-id levels even when ``users/<default>`` would leave it unlimited), so those
client-ids are asked too. The property tests check all of this against every name. About 4 resolutions per
entry and key, so linting 100,000 entries stays fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kquotactl.core.entities import DEFAULT, Entity, Name
from kquotactl.core.keys import KEYS, Number
from kquotactl.core.manifest import Manifest, ManifestEntry, Source, entity_path_text
from kquotactl.core.precedence import QuotaIndex
from kquotactl.core.principals import BrokerPrincipals, PrincipalError, looks_like_dn


@dataclass(frozen=True)
class LintWarning:
    source: Source | None
    entity: Entity
    keys: tuple[str, ...]
    message: str
    code: str  # shadowed | not-enforced | unmapped-dn | captures-super-user

    def __str__(self) -> str:
        return f"{self.source}: warning: {self.message}" if self.source else f"warning: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source) if self.source else None,
            "entity": self.entity.to_json(),
            "keys": list(self.keys),
            "code": self.code,
            "message": self.message,
        }


def unmentioned_name(names: Iterable[object]) -> str:
    """A user or client-id name that none of ``names`` is: it stands for every connection without an entry."""
    taken = {n for n in names if isinstance(n, str)}
    i = 0
    while f"unnamed-{i}" in taken:
        i += 1
    return f"unnamed-{i}"


@dataclass(frozen=True, slots=True)
class Connections:
    """The connection classes that decide whether an entry of a quota set ever applies."""

    other_user: str
    other_client: str
    default_user_clients: tuple[str, ...]  # the client-ids of users/<default>/clients/<c> entries

    @classmethod
    def of(cls, entities: Iterable[Entity]) -> Connections:
        entities = list(entities)
        return cls(
            unmentioned_name(e.user for e in entities),
            unmentioned_name(e.client_id for e in entities),
            tuple(sorted({e.client_id for e in entities if e.user is DEFAULT and isinstance(e.client_id, str)})),
        )

    def _names(self, part: Name | None, other: str) -> tuple[str, ...]:
        return (part,) if isinstance(part, str) else (other, "")

    def matching(self, entity: Entity) -> list[tuple[str, str]]:
        """(user, client-id) of every class of connection the entity's level could match, named ones first."""
        out = [
            (u, c)
            for u in self._names(entity.user, self.other_user)
            for c in self._names(entity.client_id, self.other_client)
        ]
        if entity.user is None and entity.client_id is DEFAULT:
            out += [("", c) for c in self.default_user_clients]
        return out


def hidden_by(index: QuotaIndex, entity: Entity, key: str, connections: Connections) -> tuple[bool, Entity | None]:
    """Whether ``entity``'s ``key`` never applies, and the entry that applies instead (None: nothing does)."""
    if entity.ip is not None:
        return (False, None)  # ips/<ip> before ips/<default>: the default still applies to every other address
    hider: Entity | None = None
    for user, client in connections.matching(entity):
        applied = index.applied_entity(key, user, client)
        if applied == entity:
            return (False, None)
        hider = hider or applied
    return (True, hider)


def shadowing_entity(entity: Entity, key: str, quotas: Mapping[Entity, Mapping[str, Number]]) -> Entity | None:
    """The entry that applies instead of ``entity``'s ``key`` when that key never applies (None when it does)."""
    dead, hider = hidden_by(QuotaIndex(quotas), entity, key, Connections.of(quotas))
    return hider if dead else None


def lint(manifest: Manifest, principals: BrokerPrincipals | None = None) -> list[LintWarning]:
    """``principals``: what the brokers' configs say (mapping rules, ``super.users``), passed in as data; with it,
    user names that look like certificate DNs and default quotas that capture super users are warned about too
    (a DN-like user name is warned about without it, as the rules are then unknown)."""
    quotas = manifest.config_map()
    index = QuotaIndex(quotas)
    connections = Connections.of(quotas)
    out: list[LintWarning] = []
    for entry in manifest.entries:
        out += _shadowed(entry, index, connections, manifest)
        ignored = [k for k in entry.config if not KEYS[k].enforced]
        if ignored:
            src = entry.key_sources.get(ignored[0], entry.source)
            out.append(
                LintWarning(
                    src,
                    entry.entity,
                    tuple(ignored),
                    f"{entity_path_text(entry.entity)}: {', '.join(ignored)} is not enforced by any Apache Kafka "
                    "broker (they enforce request_percentage); fine offline (explain -f, impact), but plan and apply "
                    "against a cluster refuse it",
                    "not-enforced",
                )
            )
        out += _unmapped_dn(entry, principals)
    if principals is not None:
        out += _captured_super_users(manifest, index, connections, principals)
    return out


def _unmapped_dn(entry: ManifestEntry, principals: BrokerPrincipals | None) -> list[LintWarning]:
    """A user name written like a certificate DN: the broker's quota user is what its mapping rules make of the
    DN, which is the DN itself only with ``DEFAULT`` and the exact RFC 2253 spelling."""
    user = entry.entity.user
    if not isinstance(user, str) or entry.principal is not None or not looks_like_dn(user):
        return []
    path = entity_path_text(entry.entity)
    hint = f"write principal: {user!r} to have it mapped"
    if principals is None or not principals.ssl_source:
        why = "the brokers' ssl.principal.mapping.rules are not known here, so whether they map it elsewhere is not"
        return [_dn_warning(entry, f"{path}: the user looks like a certificate DN; {why} checked ({hint})")]
    try:
        mapped = principals.map(user, "ssl").user
    except PrincipalError as e:
        return [
            _dn_warning(
                entry,
                f"{path}: the user looks like a certificate DN, which the brokers' rules cannot "
                f"map as written ({e}); {hint}",
            )
        ]
    if mapped == user:
        return []
    return [
        _dn_warning(
            entry,
            f"{path}: the user looks like a certificate DN, but the brokers' rules ({principals.ssl_source}) map "
            f"that DN to the user {mapped!r}: this quota never applies to it; write user: {mapped!r} or {hint}",
        )
    ]


def _dn_warning(entry: ManifestEntry, message: str) -> LintWarning:
    return LintWarning(entry.source, entry.entity, tuple(entry.config), message, "unmapped-dn")


def _captured_super_users(
    manifest: Manifest, index: QuotaIndex, connections: Connections, principals: BrokerPrincipals
) -> list[LintWarning]:
    """Default user quotas (``users/<default>``, ``users/<default>/clients/...``) that a super user's or the
    brokers' own connections resolve to: those are throttled like any client."""
    out = []
    protected = principals.protected_users()
    for entry in manifest.entries:
        if entry.entity.user is not DEFAULT:
            continue
        clients = (
            (entry.entity.client_id,) if isinstance(entry.entity.client_id, str) else (connections.other_client, "")
        )
        captured = [
            u
            for u in protected
            if any(index.applied_entity(k, u, c) == entry.entity for k in entry.config for c in clients)
        ]
        if captured:
            names = ", ".join(repr(u) for u in captured)
            where = principals.super_users_source or "super.users as given"
            out.append(
                LintWarning(
                    entry.source,
                    entry.entity,
                    tuple(entry.config),
                    f"{entity_path_text(entry.entity)} applies to {names} (super.users, from "
                    f"{where}): they are throttled like any "
                    "client; give them their own entry (e.g. users/<name> with a high limit)",
                    "captures-super-user",
                )
            )
    return out


def _shadowed(
    entry: ManifestEntry, index: QuotaIndex, connections: Connections, manifest: Manifest
) -> list[LintWarning]:
    by_shadow: dict[Entity | None, list[str]] = {}
    for k in entry.config:
        dead, hider = hidden_by(index, entry.entity, k, connections)
        if dead:
            by_shadow.setdefault(hider, []).append(k)
    if not by_shadow:
        return []
    out = []
    n_dead = sum(len(v) for v in by_shadow.values())
    for shadow, keys in by_shadow.items():
        what = "never applies" if n_dead == len(entry.config) else f"{', '.join(keys)} never applies"
        if shadow is None:
            why = "the broker never consults it for any connection it could match"
        else:
            where = manifest.get(shadow)
            at = f" ({where.source})" if where is not None else ""
            why = f"every connection it could match resolves {', '.join(keys)} at {entity_path_text(shadow)}{at} first"
        out.append(
            LintWarning(
                entry.key_sources.get(keys[0], entry.source),
                entry.entity,
                tuple(keys),
                f"{entity_path_text(entry.entity)} {what}: {why}",
                "shadowed",
            )
        )
    return out
