"""The brokers' principal rules and super users: given on the command line, or read from a broker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kquotactl.backends.base import QuotaBackend

if TYPE_CHECKING:  # types only: the modules load inside the services that use them
    from kquotactl.core.principals import BrokerPrincipals


@dataclass(frozen=True)
class PrincipalRuleArgs:
    """What the user said about the brokers' principal rules (None: not given; read from the cluster if any)."""

    ssl_rules: str | None = None
    kerberos_rules: str | None = None
    kerberos_realm: str | None = None

    @property
    def all_given(self) -> bool:
        return self.ssl_rules is not None and self.kerberos_rules is not None


def broker_principals(
    backend: QuotaBackend | None, args: PrincipalRuleArgs, *, read_super_users: bool = False
) -> BrokerPrincipals:
    """The brokers' principal rules and super users: given ones win; the rest are read from ``backend`` (the
    admin API: a broker's DescribeConfigs; ZooKeeper: the cluster-wide dynamic configs only) when it can tell."""
    from kquotactl.core.principals import PRINCIPAL_CONFIGS, BrokerPrincipals

    configs: dict[str, str | None] = {}
    where: str | None = None
    read = None
    if backend is not None and (read_super_users or not args.all_given):
        read = backend.broker_settings(PRINCIPAL_CONFIGS)
    if read is not None:
        configs, where = read
    return BrokerPrincipals.of(
        configs,
        where,
        ssl_rules=args.ssl_rules,
        kerberos_rules=args.kerberos_rules,
        kerberos_realm=args.kerberos_realm,
    )
