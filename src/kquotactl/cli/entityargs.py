"""kafka-configs' entity options -> entities and filters (pure).

Mirrors ``ConfigCommandOptions.entityTypes`` / ``entityNames``: types from ``--entity-type`` in order,
then the entity flags in Kafka's fixed order (client, user, ip), then the default flags (client-defaults,
user-defaults, ip-defaults); names from every ``--entity-name``/``--entity-default`` occurrence in order
(a default is ``""``), then the flags' values, then one ``""`` per default flag. Types and names pair up
by position (the bootstrap-mode ``zipAll``; ZooKeeper-mode kafka-configs additionally swapped a lone name
for ``--entity-type clients --entity-type users``, which is not reproduced).

Two deliberate departures, so that a typo or an unset shell variable never changes the wrong entity: an empty
name (``--user ''``, ``--entity-name ''``) is refused instead of meaning the default (only ``--*-defaults`` and
``--entity-default`` name a default), and a user or client-id named ``<default>`` is refused as ambiguous unless
``--literal-names`` says it is a real name (kafka-configs writes a user literally named ``<default>``; manifests and
every kquotactl output use ``<default>`` for the default entity). ``--ip '<default>'`` is the default ip, as in
kafka-configs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kquotactl.cli.groups import is_own_option
from kquotactl.core.entities import DEFAULT, DEFAULT_MARKER, Entity, EntityType, Name
from kquotactl.core.errors import InvalidRequest, UsageError
from kquotactl.core.filters import EntityFilter, FilterComponent, MatchType

ENTITY_DEFAULT: str = "\x00entity-default"
"""What ``--entity-default`` puts among the ``--entity-name`` values (NUL cannot be typed in an argument)."""

_FLAG_FOR = {EntityType.USER: "--user", EntityType.CLIENT_ID: "--client-id", EntityType.IP: "--ip"}
_DEFAULTS_FLAG = {
    EntityType.USER: "--user-defaults",
    EntityType.CLIENT_ID: "--client-defaults",
    EntityType.IP: "--ip-defaults",
}


@dataclass
class EntityArgs:
    entity_types: Sequence[str] = ()
    entity_names: Sequence[str] = ()  # ENTITY_DEFAULT is --entity-default
    user: str | None = None
    client: str | None = None
    ip: str | None = None
    user_defaults: bool = False
    client_defaults: bool = False
    ip_defaults: bool = False
    literal_names: bool = False  # "<default>" is a real user/client-id name, not the default entity
    _pairs: list[tuple[EntityType, str | None]] = field(default_factory=list, init=False)

    @classmethod
    def pop_from(cls, kw: dict[str, Any]) -> EntityArgs:
        """The entity options of a click command's keyword arguments (``cli.entity_options``), taken out of ``kw``."""
        return cls(
            entity_types=kw.pop("entity_types"),
            entity_names=kw.pop("entity_names"),
            user=kw.pop("user"),
            client=kw.pop("client"),
            ip=kw.pop("ip"),
            user_defaults=kw.pop("user_defaults"),
            client_defaults=kw.pop("client_defaults"),
            ip_defaults=kw.pop("ip_defaults"),
            literal_names=kw.pop("literal_names", False),
        )

    @property
    def given(self) -> bool:
        return bool(
            self.entity_types
            or self.entity_names
            or self.user is not None
            or self.client is not None
            or self.ip is not None
            or self.user_defaults
            or self.client_defaults
            or self.ip_defaults
        )

    def pairs(self) -> list[tuple[EntityType, str | None]]:
        """(type, name) in Kafka's order; name None = no name given, "" = the default (named explicitly).

        Refuses an empty name: kafka-configs takes it for the default, which turns ``--user "$U"`` with an unset
        variable into a cluster-wide change."""
        flags_used = (
            self.user is not None
            or self.client is not None
            or self.ip is not None
            or self.user_defaults
            or self.client_defaults
            or self.ip_defaults
        )
        plurals = [*self.entity_types]
        plurals += [t.plural for v, t in self._flag_values() if v is not None]
        plurals += [t.plural for flag, t in self._default_flags() if flag]
        # kafka-configs' checkArgs order: duplicate types first (each repeated type once, in the order of its first
        # repeat, as the Java ConfigCommand of 4.2+ lists them), then unknown types
        repeats = list(plurals)
        for t in dict.fromkeys(plurals):
            repeats.remove(t)
        dups = list(dict.fromkeys(repeats))
        if dups:
            raise UsageError(f"Duplicate entity type(s) specified: {','.join(dups)}")
        types = [EntityType.from_plural(t) for t in plurals]
        if flags_used and (self.entity_types or self.entity_names):
            raise UsageError(
                "--entity-{type,name,default} should not be used in conjunction with specific entity flags"
            )
        names: list[str] = []
        for i, n in enumerate(self.entity_names):
            self._check_not_an_option(n, "--entity-name", "an entity")
            if n == "":
                etype = EntityType.from_plural(self.entity_types[i]) if i < len(self.entity_types) else None
                hint = f"--entity-default (or {_DEFAULTS_FLAG[etype]})" if etype else "--entity-default"
                raise UsageError(f"--entity-name is empty (an unset variable?): for the default entity, say {hint}")
            if n == DEFAULT_MARKER and i < len(self.entity_types):
                self._check_marker(EntityType.from_plural(self.entity_types[i]), "--entity-name", "--entity-default")
            names.append("" if n == ENTITY_DEFAULT else n)
        for value, t in self._flag_values():
            if value is not None:
                self._check_not_an_option(value, _FLAG_FOR[t], f"a {t.value}")
                if value == "":
                    raise UsageError(
                        f"{_FLAG_FOR[t]} is empty (an unset variable?): for the default {t.value}, "
                        f"say {_DEFAULTS_FLAG[t]}"
                    )
                if value == DEFAULT_MARKER:
                    self._check_marker(t, _FLAG_FOR[t], _DEFAULTS_FLAG[t])
                names.append(value)
        names += ["" for flag, _ in self._default_flags() if flag]
        if len(names) > len(types):
            raise UsageError("More entity names specified than entity types")
        if EntityType.IP in types and len(types) > 1:
            raise InvalidRequest(
                "Invalid quota entity combination, IP entity should not be used with user/client ID entity."
            )
        return [(t, names[i] if i < len(names) else None) for i, t in enumerate(types)]

    def _check_not_an_option(self, value: str, option: str, what: str) -> None:
        """``--user "$U" --client-defaults`` with ``U`` unset: click gives ``--user`` the next word, one of our own
        options, and kafka-configs would write an entity of that name. Refused; ``--literal-names`` names it."""
        if not self.literal_names and is_own_option(value):
            raise UsageError(
                f"{option} {value!r} is one of kquotactl's options, so {option} has no value (an unset variable?); "
                f"to name {what} {value!r}, add --literal-names"
            )

    def _flag_values(self) -> list[tuple[str | None, EntityType]]:
        """The entity flags' values in kafka-configs' fixed order (client, user, ip), None when absent."""
        return [(self.client, EntityType.CLIENT_ID), (self.user, EntityType.USER), (self.ip, EntityType.IP)]

    def _default_flags(self) -> list[tuple[bool, EntityType]]:
        return [
            (self.client_defaults, EntityType.CLIENT_ID),
            (self.user_defaults, EntityType.USER),
            (self.ip_defaults, EntityType.IP),
        ]

    def _check_marker(self, t: EntityType, option: str, default_option: str) -> None:
        if t is EntityType.IP or self.literal_names:
            return
        raise UsageError(
            f"{option} '<default>' is ambiguous: kafka-configs writes a {t.value} literally named <default>, manifests "
            f"and kquotactl's output mean the default {t.value}. Say {default_option} for the default, or add "
            f"--literal-names for the {t.value} named <default>"
        )


def alter_head(args: EntityArgs) -> tuple[EntityType, str]:
    """The first (type, name) of the command line, which kafka-configs names in its alter line ("" = default)."""
    t, n = args.pairs()[0]
    return t, n or ""  # as typed: kafka-configs prints "config for ip <default>" for --ip '<default>'


def _name(t: EntityType, name: str) -> Name:
    """``""`` (a ``--*-defaults`` flag or ``--entity-default``) is the default entity, and so is an ip named
    ``<default>`` (kafka-configs has it so); a user or client-id ``<default>`` got past :meth:`EntityArgs.pairs` only
    with ``--literal-names``, so it is a real name."""
    if name == "" or (t is EntityType.IP and name == DEFAULT_MARKER):
        return DEFAULT
    return name


def entity_for_alter(args: EntityArgs) -> Entity:
    pairs = args.pairs()
    if not pairs:
        raise UsageError("At least one entity type must be specified (e.g. --user NAME or --entity-type users)")
    missing = [t.plural for t, n in pairs if n is None]
    if missing:
        raise UsageError(
            "an entity-name or default entity must be specified with --alter of users, clients or ips "
            f"(missing for: {', '.join(missing)})"
        )
    return Entity.from_components({t: _name(t, n) for t, n in pairs if n is not None})


def filter_for_describe(args: EntityArgs) -> EntityFilter:
    """No entity options: everything. Otherwise a strict KIP-546 filter, as kafka-configs builds it."""
    pairs = args.pairs()
    if not pairs:
        return EntityFilter.all()
    comps = []
    for t, n in pairs:
        if n is None:
            comps.append(FilterComponent(t, MatchType.ANY))
        elif _name(t, n) is DEFAULT:
            comps.append(FilterComponent(t, MatchType.DEFAULT))
        else:
            if t is EntityType.IP:
                from kquotactl.core.entities import canonical_ip

                n = canonical_ip(n)
            comps.append(FilterComponent(t, MatchType.EXACT, n))
    return EntityFilter(tuple(comps), strict=True).validate()
