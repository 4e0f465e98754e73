"""``kquotactl connection-rate``: broker-level connection-creation rate limits (KIP-612), through
confluent-kafka's DescribeConfigs / IncrementalAlterConfigs on BROKER resources.

Only click is imported at module level; confluent-kafka loads inside the command.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from kquotactl.cli import OnceCommand


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
    from kquotactl.brokerrate import RateSetting, config_name, parse_rate, settings_from_configs, sort_settings
    from kquotactl.errors import UsageError

    state = ctx.obj  # the group's AppState
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
        click.echo(f"{verb} {what}" + (f" = {value}" if value is not None else ""))
        return
    resources = [""] if broker_defaults else [str(broker)] if broker else ["", *brokers.broker_ids()]
    found: list[RateSetting] = []
    for rid in resources:
        found += settings_from_configs(rid or None, brokers.describe(rid))
    if listener is not None:
        found = [r for r in found if r.listener == listener.lower()]
    _render(sort_settings(found), state.output_format())


class _Brokers:
    """BROKER config resources: one broker through confluent-kafka (librdkafka); the cluster-wide default
    (an empty resource name, which librdkafka refuses to address) through the admin backend's wire."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._admin: Any = None
        self._backend: Any = None

    @property
    def admin(self) -> Any:
        if self._admin is None:
            self._admin = _admin(self.conn)
        return self._admin

    @property
    def wire(self) -> Any:
        if self._backend is None:
            from kquotactl.backends.admin import open_admin_backend

            self._backend = open_admin_backend(self.conn)
        return self._backend.wire

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def broker_ids(self) -> list[str]:
        t = self.conn.timeout
        desc = _result(self.admin.describe_cluster(request_timeout=t), "describe cluster", t)
        return [str(n.id) for n in sorted(desc.nodes, key=lambda n: n.id)]

    def describe(self, rid: str) -> dict[str, tuple[str | None, str]]:
        if rid == "":
            return self.wire.broker_configs("")
        return _describe(self.admin, rid, self.conn.timeout)

    def alter(self, rid: str, name: str, value: int | None, dry_run: bool) -> None:
        if rid == "":
            from kquotactl.errors import QuotaError

            try:
                self.wire.alter_broker_config("", name, None if value is None else str(value), dry_run)
            except QuotaError as e:
                raise QuotaError(f"alter {name} on the cluster default: {e}") from None
            return
        _alter(self.admin, rid, name, value, self.conn.timeout, dry_run)

    def await_visible(self, rid: str, name: str, value: int | None, state: Any) -> None:
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
                where = "the cluster default" if rid == "" else f"broker {rid}"
                state.warn(f"{where} does not show the change to {name} yet; describe may lag")
                return
            time.sleep(0.05)


def _admin(conn: Any) -> Any:
    from confluent_kafka.admin import AdminClient

    from kquotactl.brokerrate import librdkafka_config
    from kquotactl.clientprops import ClientSettings, load_client_settings

    settings = load_client_settings(conn.command_config)[0] if conn.command_config else ClientSettings()
    return AdminClient(librdkafka_config(conn.bootstrap_server, settings, conn.timeout))


def _result(future: Any, what: str, timeout: float) -> Any:
    import concurrent.futures

    from confluent_kafka import KafkaException

    from kquotactl.errors import BackendUnavailable, QuotaError

    try:
        return future.result(timeout=timeout + 1)
    except concurrent.futures.TimeoutError:
        raise BackendUnavailable(f"{what}: no answer within {timeout:g}s") from None
    except KafkaException as e:
        err = e.args[0] if e.args else None
        name = err.name() if hasattr(err, "name") else type(e).__name__
        text = err.str() if hasattr(err, "str") else str(e)
        if name.startswith("_"):  # librdkafka's own: transport, timeout, authentication
            raise BackendUnavailable(f"{what}: {text}") from None
        raise QuotaError(f"{what}: {name}: {text}") from None


def _describe(admin: Any, rid: str, timeout: float) -> dict[str, tuple[str | None, str]]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    res = ConfigResource(ResourceType.BROKER, rid)
    [fut] = admin.describe_configs([res], request_timeout=timeout).values()
    entries = _result(fut, f"describe configs of broker {rid or '<default>'}", timeout)
    return {name: (e.value, _source_name(e.source)) for name, e in entries.items()}


def _source_name(source: Any) -> str:
    """confluent-kafka reports a ConfigEntry's source as a plain int: name it (DYNAMIC_BROKER_CONFIG...)."""
    from confluent_kafka.admin import ConfigSource

    try:
        return ConfigSource(int(source)).name
    except (TypeError, ValueError):
        return getattr(source, "name", str(source))


def _alter(admin: Any, rid: str, name: str, value: int | None, timeout: float, dry_run: bool) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry(name, str(value) if value is not None else None, incremental_operation=op)
    res = ConfigResource(ResourceType.BROKER, rid, incremental_configs=[entry])
    [fut] = admin.incremental_alter_configs([res], request_timeout=timeout, validate_only=dry_run).values()
    _result(fut, f"alter {name} on broker {rid or '<default>'}", timeout)


def _render(settings: list, fmt: str) -> None:
    from kquotactl.render import dump_json, dump_yaml

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
            click.echo(f"{where}{lst}: max.connection.creation.rate={s.value} ({s.source})")


def register(group: click.Group) -> None:
    group.add_command(connection_rate)
