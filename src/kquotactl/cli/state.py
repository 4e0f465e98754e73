"""The application state the group options decide (which cluster, which output), shared with every command, and
the quota set a command resolves connections against. Only click and the connection options at module level, so
``kquotactl --help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import click

from kquotactl.connection.cluster import ConnectionOptions, typed_cluster

if TYPE_CHECKING:  # the backends load lazily: `kquotactl --help` imports none of them
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.core.principals import BrokerPrincipals


@dataclass
class AppState:
    """What the group options decided, shared with every command."""

    conn: ConnectionOptions = field(default_factory=ConnectionOptions)
    output: str | None = None
    color: bool = False
    verbose: bool = False
    kafka_compat: bool = False  # invoked in kafka-configs' flat form (--alter/--describe)
    context_name: str | None = None  # --context (else KQUOTACTL_CONTEXT, else the file's current-context)
    config_path: str | None = None  # --config (else KQUOTACTL_CONFIG, else XDG)
    explicit: frozenset[str] = frozenset()  # connection fields typed on the command line (a context never overrides)
    _backend: QuotaBackend | None = None

    def connection(self) -> ConnectionOptions:
        """The cluster to use: flags > environment > context (see kquotactl.connection.contexts)."""
        typed_only = typed_cluster(self.conn, self.context_name)
        if typed_only is not None:  # no context involved: the contexts module (and pathlib) is not even loaded
            return typed_only
        from kquotactl.connection.contexts import resolve

        return resolve(self.conn, self.context_name, self.config_path, typed=self.explicit)

    def backend(self, ctx: click.Context) -> QuotaBackend:
        if self._backend is None:
            from kquotactl.backends.factory import open_backend

            self._backend = open_backend(self.connection())
            ctx.call_on_close(self._backend.close)
        return self._backend

    def output_format(self) -> str:
        if self.output:
            return self.output
        if self.kafka_compat:
            return "kafka"
        return "table" if sys.stdout.isatty() else "json"

    def warn(self, message: str) -> None:
        click.echo(f"kquotactl: warning: {message}", err=True)


pass_state = click.make_pass_decorator(AppState, ensure=True)


def quota_index(
    ctx: click.Context,
    state: AppState,
    files: Sequence[str],
    statics: Mapping[str, int] | None = None,
    brokers: int | None = None,
    principals: BrokerPrincipals | None = None,
) -> QuotaIndex:
    """The quotas a command resolves connections against (explain, top): manifests given with ``-f`` (offline) or
    the live cluster's whole quota set; what the backend noticed reading it is said once. ``brokers``: what the
    manifests' cluster-wide budgets divide by; ``principals``: the rules their ``principal:`` entries map by."""
    from kquotactl.services.quotas import load_quota_set

    if files and (state.conn.zookeeper or state.conn.bootstrap_server or state.conn.bootstrap_controller):
        from kquotactl.core.errors import UsageError

        raise UsageError("-f reads the quotas from manifests (offline): drop --zookeeper/--bootstrap-server, or -f")
    quota_set = load_quota_set(list(files) if files else state.backend(ctx), statics, brokers, principals=principals)
    for w in quota_set.warnings:
        state.warn(w)
    return quota_set.index
