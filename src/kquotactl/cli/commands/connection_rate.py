"""``kquotactl connection-rate``: broker-level connection-creation rate limits (KIP-612); the work is
:mod:`kquotactl.services.connection_rate` (DescribeConfigs / IncrementalAlterConfigs on BROKER resources, with the
same Kafka client, settings and errors as the quota commands).

Only click is imported at module level; the service and the Kafka client load inside the command.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.state import AppState

if TYPE_CHECKING:  # the Kafka client loads inside the services
    from kquotactl.core.broker_connection_rate import RateSetting
    from kquotactl.services.connection_rate import RateChanged


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
    if set_value is not None or delete:
        from kquotactl.services.connection_rate import change_connection_rate

        changed = change_connection_rate(conn, broker=broker, listener=listener, value=set_value, dry_run=dry_run)
        _said(changed, state)
        return
    from kquotactl.services.connection_rate import connection_rates

    found = connection_rates(conn, broker=broker, cluster_default=broker_defaults, listener=listener)
    _render(found, state.output_format())


def _said(changed: RateChanged, state: AppState) -> None:
    """What was set or removed (or would be, dry run); a change the brokers do not show yet is warned of."""
    from kquotactl.services.connection_rate import where

    if not changed.visible:
        state.warn(f"{where(changed.broker)} does not show the change to {changed.name} yet; describe may lag")
    what = f"{'cluster default' if changed.broker is None else f'broker {changed.broker}'}: {changed.name}"
    value = changed.value
    verb = "would set" if changed.dry_run and value is not None else "would remove" if changed.dry_run else None
    if verb is None:
        verb = "set" if value is not None else "removed"
    click.echo(f"{verb} {what}" + (f" = {value} {_per_s(value)}" if value is not None else ""))


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
