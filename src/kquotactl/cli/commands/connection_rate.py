"""``kquotactl connection-rate``: broker-level connection-creation rate limits (KIP-612), through
DescribeConfigs / IncrementalAlterConfigs on BROKER resources, with the same Kafka client, settings and errors
as the quota commands (:mod:`kquotactl.backends.kafka.client`).

Only click is imported at module level; the Kafka client loads inside the command.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from kquotactl.cli.kit import AppState, OnceCommand

if TYPE_CHECKING:  # the Kafka client loads inside the command
    from kquotactl.backends.kafka.client import QuotaWire
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.config.cluster import ConnectionOptions
    from kquotactl.core.broker_connection_rate import RateSetting

T = TypeVar("T")


@click.command(cls=OnceCommand, name="connection-rate")
@click.option("--broker", metavar="ID", help="One broker (default: the cluster-wide default and every broker).")
@click.option("--broker-defaults", is_flag=True, help="The cluster-wide default for all brokers.")
@click.option("--listener", metavar="NAME", help="A listener (listener.name.<NAME>.max.connection.creation.rate).")
@click.option("--set", "set_value", metavar="N", help="Set the limit to N new connections per second.")
@click.option("--delete", "delete", is_flag=True, help="Remove the dynamic setting (back to server.properties).")
@click.option("--dry-run", is_flag=True, help="Let the broker validate the change; write nothing.")
@click.pass_context
def connection_rate(
    ctx: click.Context,
    broker: str | None,
    broker_defaults: bool,
    listener: str | None,
    set_value: str | None,
    delete: bool,
    dry_run: bool,
) -> None:
    """Show or change broker-level connection-creation rate limits (KIP-612).

    max.connection.creation.rate caps new connections per second on a broker, as a whole or per listener;
    per-ip limits are the connection_creation_rate quota on ips (alter --ip). Needs --bootstrap-server;
    --command-config works as for quotas. Without --set/--delete, lists the dynamic settings.

    \b
    Examples:
      kquotactl --bootstrap-server b:9092 connection-rate
      kquotactl --bootstrap-server b:9092 connection-rate --broker-defaults --set 50
      kquotactl --bootstrap-server b:9092 connection-rate --broker 1 --listener EXTERNAL --set 20
      kquotactl --bootstrap-server b:9092 connection-rate --broker 1 --listener EXTERNAL --delete
    """
    from kquotactl.core.broker_connection_rate import (
        config_name,
        parse_rate,
        settings_from_configs,
        sort_settings,
    )
    from kquotactl.core.errors import UsageError

    state: AppState = ctx.obj  # the group's AppState
    conn = state.connection()  # flags > environment > context
    if not conn.bootstrap_server:
        raise UsageError(
            "connection-rate needs --bootstrap-server (broker configs are not managed through ZooKeeper here)"
        )
    if broker is not None and broker_defaults:
        raise UsageError("give --broker ID or --broker-defaults, not both")
    if broker is not None and not broker.isdigit():
        raise UsageError(f"--broker must be a broker id (an integer), got {broker!r}")
    if set_value is not None and delete:
        raise UsageError("give --set N or --delete, not both")
    if (set_value is not None or delete) and broker is None and not broker_defaults:
        raise UsageError("say which broker to change: --broker ID or --broker-defaults")
    name = config_name(listener)
    value = parse_rate(set_value) if set_value is not None else None
    brokers = _Brokers(conn)
    ctx.call_on_close(brokers.close)
    if value is not None or delete:
        rid = "" if broker_defaults else str(broker)
        brokers.alter(rid, name, value, dry_run)
        if not dry_run:
            brokers.await_visible(rid, name, value, state)
        what = f"{'cluster default' if broker_defaults else f'broker {broker}'}: {name}"
        verb = "would set" if dry_run and value is not None else "would remove" if dry_run else None
        if verb is None:
            verb = "set" if value is not None else "removed"
        click.echo(f"{verb} {what}" + (f" = {value} {_per_s(value)}" if value is not None else ""))
        return
    resources = [""] if broker_defaults else [str(broker)] if broker else ["", *brokers.broker_ids()]
    found: list[RateSetting] = []
    for rid in resources:
        found += settings_from_configs(rid or None, brokers.describe(rid))
    if listener is not None:
        found = [r for r in found if r.listener == listener.lower()]
    _render(sort_settings(found), state.output_format())


class _Brokers:
    """BROKER config resources (one broker's, or the cluster-wide default) and the broker ids, through the
    admin backend's connection: one client, one settings mapping, one error model for every admin command."""

    def __init__(self, conn: ConnectionOptions) -> None:
        self.conn = conn
        self._backend: AdminBackend | None = None

    @property
    def wire(self) -> QuotaWire:
        if self._backend is None:
            from kquotactl.backends.kafka.quotas import open_admin_backend

            self._backend = open_admin_backend(self.conn)
        return self._backend.wire

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def broker_ids(self) -> list[str]:
        return [str(b) for b in self.wire.broker_ids()]

    def describe(self, rid: str) -> dict[str, tuple[str | None, str]]:
        return _prefixed(f"describe configs of {_where(rid)}", self.wire.broker_configs, rid)

    def alter(self, rid: str, name: str, value: int | None, dry_run: bool) -> None:
        v = None if value is None else str(value)
        _prefixed(f"alter {name} on {_where(rid)}", self.wire.alter_broker_config, rid, name, v, dry_run)

    def await_visible(self, rid: str, name: str, value: int | None, state: AppState) -> None:
        """Brokers apply committed config changes asynchronously: wait (bounded) until DescribeConfigs shows
        the change, so that a command that follows sees it."""
        import time

        wanted = "DYNAMIC_DEFAULT_BROKER_CONFIG" if rid == "" else "DYNAMIC_BROKER_CONFIG"
        deadline = time.monotonic() + min(self.conn.timeout, 10.0)
        while True:
            current = self.describe(rid).get(name, (None, ""))
            dynamic = current[1] == wanted
            if (value is not None and dynamic and current[0] == str(value)) or (value is None and not dynamic):
                return
            if time.monotonic() >= deadline:
                state.warn(f"{_where(rid)} does not show the change to {name} yet; describe may lag")
                return
            time.sleep(0.05)


def _where(rid: str) -> str:
    return "the cluster default" if rid == "" else f"broker {rid}"


def _prefixed(what: str, call: Callable[..., T], *args: object) -> T:
    """Kafka's answer to a config request; its error (not a connection problem) prefixed with what was asked."""
    from kquotactl.core.errors import BackendUnavailable, QuotaError

    try:
        return call(*args)
    except BackendUnavailable:
        raise
    except QuotaError as e:
        raise type(e)(f"{what}: {e}") from None


def _render(settings: list[RateSetting], fmt: str) -> None:
    from kquotactl.render.records import dump_json, dump_yaml

    data = [s.to_json() for s in settings]
    if fmt == "json":
        dump_json(data, sys.stdout)
    elif fmt == "yaml":
        dump_yaml(data, sys.stdout)
    else:
        if not settings:
            click.echo("No dynamic connection-rate settings.")
        for s in settings:
            where = "cluster default" if s.broker is None else f"broker {s.broker}"
            lst = f" listener {s.listener}" if s.listener else ""
            click.echo(f"{where}{lst}: max.connection.creation.rate={s.value} {_per_s(s.value)} ({s.source})")


def _per_s(value: object) -> str:
    """The unit of a connection rate: ``connections/s`` (``connection/s`` for 1)."""
    return "connection/s" if str(value) == "1" else "connections/s"
