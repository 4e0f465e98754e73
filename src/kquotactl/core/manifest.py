"""The manifest model (pure): entries with their file:line sources, prune rules, and what a manifest
means as quota records. Loading lives in :mod:`kquotactl.manifests.loader`, export in
:mod:`kquotactl.manifests.export`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import DEFAULT, DEFAULT_MARKER, Entity, EntityType, Name, display_name
from kquotactl.core.errors import InvalidValue, QuotaError
from kquotactl.core.keys import KEYS, Number, check_live_key

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
TOP_KEYS = ("prune", "quotas")
ENTRY_KEYS = ("entity", "config", "cluster", "stages", "owner", "reason", "ticket")
META_KEYS = ("owner", "reason", "ticket")
ENTITY_KEYS = {"user": EntityType.USER, "client-id": EntityType.CLIENT_ID, "ip": EntityType.IP}
PRINCIPAL_KEY = "principal"  # instead of user: a DN or Kerberos principal, mapped with the brokers' rules


@dataclass(frozen=True, slots=True)
class Source:
    """Where something was written: ``file:line`` (1-based)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class ManifestError(QuotaError):
    """One or more problems in manifests, each ``file:line: message``; nothing was written."""

    def __init__(self, problems: Sequence[str], more: str = "run kquotactl validate") -> None:
        self.problems = list(problems)
        count = len(self.problems) - 1
        suffix = f" (and {count} more problem{'s' if count > 1 else ''}: {more})" if count else ""
        super().__init__(self.problems[0] + suffix)


@dataclass(frozen=True, slots=True)  # slots: 100,000 entries stay small
class ManifestEntry:
    """One ``quotas`` item: an entity, its validated per-broker config, its cluster-wide budgets (``cluster:``,
    turned into per-broker values by :func:`kquotactl.core.budget.resolve_budgets`), where it came from (``key_sources``
    covers the keys of both), and its metadata."""

    entity: Entity
    config: Mapping[str, Number]
    source: Source
    key_sources: Mapping[str, Source] = field(default_factory=dict)
    owner: str | None = None
    reason: str | None = None
    ticket: str | None = None
    cluster: Mapping[str, Number] = field(default_factory=dict)
    stages: int | None = None  # apply --stages for this entry's lowered limits (kquotactl.core.stages)
    principal: str | None = None  # the entity's user came from this principal (``principal:``)

    def meta(self) -> dict[str, str]:
        """The metadata that is set (owner/reason/ticket), for plans and apply logs."""
        return {k: v for k in META_KEYS if (v := getattr(self, k)) is not None}


@dataclass(frozen=True)
class PruneRule:
    """An entity-path glob naming what a manifest owns, matched on real (unsanitized) names.

    ``users/svc-*`` owns the users whose name matches ``svc-*`` *and* their (user, client-id) pairs;
    ``users/*/clients/*`` owns pairs only; ``clients/*``, ``ips/*`` likewise. Wildcards (``*``, ``?``,
    ``[...]``) match real names only: a default entity is owned only when written literally, as in
    ``users/<default>`` or ``users/*/clients/<default>``.
    """

    pattern: str
    source: Source

    @property
    def segments(self) -> list[str]:
        return self.pattern.split("/")

    def matches(self, entity: Entity) -> bool:
        segs = entity_segments(entity)
        pat = self.segments
        if len(pat) > len(segs):
            return False
        for p, s in zip(pat, segs, strict=False):
            if isinstance(s, str) and s in ("users", "clients", "ips") and p == s:
                continue
            if s is DEFAULT:
                if p != DEFAULT_MARKER:
                    return False
            elif not isinstance(s, str) or not fnmatch.fnmatchcase(s, p):
                return False
        return True


def entity_segments(entity: Entity) -> list[Name]:
    """``['users', 'alice', 'clients', DEFAULT]``: the entity path with real names (not sanitized)."""
    if entity.ip is not None:
        return ["ips", entity.ip]
    if entity.user is not None:
        segs: list[Name] = ["users", entity.user]
        if entity.client_id is not None:
            segs += ["clients", entity.client_id]
        return segs
    assert entity.client_id is not None
    return ["clients", entity.client_id]


def entity_path_text(entity: Entity, quoted: bool = True) -> str:
    """``users/alice/clients/<default>``: a readable path with real names (for messages and prune), each shown as
    :func:`display_name` shows it (``users/' '``); ``quoted=False``: the names as they are (JSON's ``path``)."""
    return "/".join(display_name(s, quoted) for s in entity_segments(entity))


def live_problems(manifest: Manifest) -> list[str]:
    """``file:line: ...`` for each key a live cluster must not be given (see :func:`keys.check_live_key`)."""
    used: set[str] = set()
    for entry in manifest.entries:
        used.update(entry.config, entry.cluster)
    refused: dict[str, InvalidValue] = {}
    for k in used:  # each key once: the entries are looked through only when one is refused
        try:
            check_live_key(KEYS[k])
        except InvalidValue as e:
            refused[k] = e
    if not refused:
        return []
    return [
        f"{entry.key_sources.get(k, entry.source)}: {entity_path_text(entry.entity)}: {refused[k]}"
        for entry in manifest.entries
        for k in [*entry.config, *entry.cluster]
        if k in refused
    ]


def release_problems(manifest: Manifest, refusal: Callable[[Entity, Sequence[str]], str | None]) -> list[str]:
    """``file:line: ...`` for each entity and key the brokers would refuse as newer than their release
    (``refusal``: the backend's :meth:`~kquotactl.backends.base.QuotaBackend.release_refusal`). One question for
    the brokers first: where they know every key and ip entities (every current release), no entry is looked at."""
    if not manifest.entries or refusal(Entity(ip=DEFAULT), tuple(KEYS)) is None:
        return []
    problems = []
    for entry in manifest.entries:
        if (why := refusal(entry.entity, ())) is not None:
            problems.append(f"{entry.source}: {entity_path_text(entry.entity)}: {why}")
            continue
        for k in (*entry.config, *entry.cluster):
            if (why := refusal(entry.entity, (k,))) is not None:
                problems.append(f"{entry.key_sources.get(k, entry.source)}: {entity_path_text(entry.entity)}: {why}")
    return problems


def check_prune_pattern(pattern: str) -> str | None:
    """Why a prune pattern is malformed, or None."""
    segs = pattern.split("/")
    shapes = ("users/NAME", "users/NAME/clients/NAME", "clients/NAME", "ips/NAME")
    ok = (
        (segs[0] == "users" and len(segs) in (2, 4) and (len(segs) == 2 or segs[2] == "clients"))
        or (segs[0] in ("clients", "ips") and len(segs) == 2)
    ) and all(segs)
    if not ok:
        return f"prune pattern {pattern!r} must look like {', '.join(shapes)} (NAME a glob or <default>)"
    return None


#: the kinds :meth:`Manifest.kinds` counts, in the order reports list them
ENTITY_KINDS = ("users", "pairs", "clients", "ips")


@dataclass
class Manifest:
    """Desired quotas merged from one or more files."""

    entries: list[ManifestEntry] = field(default_factory=list)
    prune: list[PruneRule] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    _by_entity: dict[Entity, ManifestEntry] = field(default_factory=dict, repr=False)

    def add(self, entry: ManifestEntry) -> None:
        self.entries.append(entry)
        self._by_entity[entry.entity] = entry

    def get(self, entity: Entity) -> ManifestEntry | None:
        return self._by_entity.get(entity)

    def __contains__(self, entity: object) -> bool:
        return entity in self._by_entity

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def budgets(self) -> bool:
        """Does any entry declare a cluster-wide budget (so planning needs the broker count)?"""
        return any(e.cluster for e in self.entries)

    def config_map(self) -> dict[Entity, Mapping[str, Number]]:
        """Entity -> desired per-broker config (what the resolver's :class:`QuotaIndex` takes); cluster-wide budgets
        count once resolved for a broker count."""
        return {e.entity: e.config for e in self.entries if e.config}

    def records(self) -> list[QuotaRecord]:
        """The desired per-broker state as records, sorted like ``describe`` output."""
        entries = sorted((e for e in self.entries if e.config), key=lambda e: e.entity.sort_key())
        return [QuotaRecord(e.entity, dict(e.config)) for e in entries]

    def stages(self) -> dict[Entity, int]:
        """Entity -> its entry's own ``stages:`` (entries that give one)."""
        return {e.entity: e.stages for e in self.entries if e.stages is not None}

    def kinds(self) -> dict[str, int]:
        """Entries per kind of entity: ``users``, ``pairs`` (user and client-id), ``clients``, ``ips``."""
        out = dict.fromkeys(ENTITY_KINDS, 0)
        for e in self.entries:
            ent = e.entity
            if ent.ip is not None:
                out["ips"] += 1
            elif ent.user is not None:
                out["pairs" if ent.client_id is not None else "users"] += 1
            else:
                out["clients"] += 1
        return out

    def owns(self, entity: Entity) -> bool:
        """Is the entity inside this manifest's prune scope?"""
        return any(r.matches(entity) for r in self.prune)
