"""``--principal`` and the principal rule options -> the user name the brokers derive (thin: the mapping is
:mod:`kquotactl.core.principals`, the rules are found by :func:`kquotactl.services.principals.broker_principals`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from kquotactl.core.errors import UsageError

if TYPE_CHECKING:
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.cli.entityargs import EntityArgs
    from kquotactl.core.principals import BrokerPrincipals, PrincipalMapping, PrincipalType
    from kquotactl.services.principals import PrincipalRuleArgs


#: the rule options' parameter names and flags (:func:`kquotactl.cli.options.principal_rule_options`)
RULE_FLAGS = {
    "ssl_rules": "--ssl-principal-mapping-rules",
    "kerberos_rules": "--kerberos-rules",
    "kerberos_realm": "--kerberos-realm",
}


def pop_rule_args(kw: dict[str, Any]) -> PrincipalRuleArgs:
    from kquotactl.services.principals import PrincipalRuleArgs

    return PrincipalRuleArgs(**{name: kw.pop(name) for name in RULE_FLAGS})


def pop_rules_for(principal: str | None, kw: dict[str, Any]) -> PrincipalRuleArgs | None:
    """describe and alter: the rule options map ``--principal`` and nothing else, so without it they are refused
    (they would change nothing: a forgotten ``--principal``?); None then, and the services stay unloaded."""
    if principal is not None:
        return pop_rule_args(kw)
    given = [flag for name, flag in RULE_FLAGS.items() if kw.pop(name) is not None]
    if given:
        raise UsageError(f"{given[0]} maps a --principal: give --principal, or drop {given[0]}")
    return None


def pop_principal(kw: dict[str, Any]) -> tuple[str | None, PrincipalType | None]:
    principal, kind = kw.pop("principal"), kw.pop("principal_type")
    if kind is not None and principal is None:
        raise UsageError("--principal-type goes with --principal")
    if principal == "":
        raise UsageError("--principal is empty (an unset variable?)")
    return principal, kind


def map_for_user(
    principal: str,
    kind: PrincipalType | None,
    rule_args: PrincipalRuleArgs,
    backend: Callable[[], QuotaBackend] | None,
) -> PrincipalMapping:
    """Map ``principal`` with the given rules, reading the rest from the cluster (``backend`` opens it; None:
    offline, and rules not given are refused when needed)."""
    from kquotactl.core.principals import principal_type
    from kquotactl.services.principals import broker_principals

    kind = principal_type(principal, kind)  # an ambiguous text is refused before connecting
    given = rule_args.ssl_rules if kind == "ssl" else rule_args.kerberos_rules
    return broker_principals(None if given is not None or backend is None else backend(), rule_args).map(
        principal, kind
    )


def principal_as_user(entity_args: EntityArgs, mapping: PrincipalMapping) -> None:
    """Put the mapped user into the entity options, refusing a second way of naming the user."""
    if (
        entity_args.user is not None
        or entity_args.user_defaults
        or entity_args.entity_types
        or entity_args.entity_names
    ):
        raise UsageError("--principal names the user: drop --user/--user-defaults/--entity-type/--entity-name")
    entity_args.user = mapping.user


def echo_mapping(mapping: PrincipalMapping, fmt: str) -> None:
    """The mapping as people read it: on stdout before a table, on stderr otherwise (JSON stays parseable)."""
    click.echo(mapping.describe(), err=fmt != "table")


def given_principals(rule_args: PrincipalRuleArgs, super_users: str | None = None) -> BrokerPrincipals | None:
    """Manifests are read before any cluster: only the rules (and super users) given on the command line."""
    if rule_args.ssl_rules is None and rule_args.kerberos_rules is None and super_users is None:
        return None  # the principal modules stay unloaded
    from kquotactl.core.principals import SUPER_USERS_CONFIG, BrokerPrincipals

    return BrokerPrincipals.of(
        {SUPER_USERS_CONFIG: super_users} if super_users is not None else {},
        None,
        ssl_rules=rule_args.ssl_rules,
        kerberos_rules=rule_args.kerberos_rules,
        kerberos_realm=rule_args.kerberos_realm,
    )
