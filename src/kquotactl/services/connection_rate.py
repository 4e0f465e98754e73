"""``connection-rate`` callable from Python: broker-level connection-creation rate limits (KIP-612), read and changed
through DescribeConfigs / IncrementalAlterConfigs on BROKER resources, with the admin backend's client, settings and
errors (one client and one error model for every admin command)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # the Kafka client loads inside the services
    from kquotactl.backends.kafka.client import QuotaWire
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.core.broker_connection_rate import RateSetting

T = TypeVar("T")

#: how long a change may take to show in DescribeConfigs (at most the connection's timeout)
VISIBLE_WITHIN = 10.0


def connection_rates(
    conn: ConnectionOptions, *, broker: str | None = None, cluster_default: bool = False, listener: str | None = None
) -> list[RateSetting]:
    """The dynamic settings, sorted: of ``broker``, or of the cluster-wide default, or (neither) of the default and
    every live broker; ``listener``: that listener's only."""
    from kquotactl.core.broker_connection_rate import config_name, settings_from_configs, sort_settings

    config_name(listener)  # a listener name brokers would refuse is refused before connecting
    with _BrokerConfigs(conn) as brokers:
        resources = [""] if cluster_default else [broker] if broker else ["", *brokers.broker_ids()]
        found: list[RateSetting] = []
        for rid in resources:
            found += settings_from_configs(rid or None, brokers.describe(rid))
    if listener is not None:
        found = [r for r in found if r.listener == listener.lower()]
    return sort_settings(found)


@dataclass(frozen=True)
class RateChanged:
    """One setting set (``value``) or removed (None); ``visible``: DescribeConfigs showed it before the deadline
    (brokers apply a committed change asynchronously), always True for a dry run (nothing was written)."""

    broker: str | None  # None: the cluster-wide default
    name: str
    value: int | None
    dry_run: bool
    visible: bool


def change_connection_rate(
    conn: ConnectionOptions,
    *,
    broker: str | None,
    listener: str | None = None,
    value: int | str | None = None,
    dry_run: bool = False,
) -> RateChanged:
    """Set the limit of ``broker`` (None: the cluster-wide default) to ``value`` new connections per second (a
    number, or as typed), or remove it (None); ``dry_run``: the broker validates, nothing is written. Waits (bounded)
    until DescribeConfigs shows the change, so that what follows sees it."""
    from kquotactl.core.broker_connection_rate import config_name, parse_rate

    name = config_name(listener)
    if isinstance(value, str):
        value = parse_rate(value)
    rid = "" if broker is None else broker
    with _BrokerConfigs(conn) as brokers:
        brokers.alter(rid, name, value, dry_run)
        visible = dry_run or brokers.await_visible(rid, name, value)
    return RateChanged(broker, name, value, dry_run, visible)


def where(broker: str | None) -> str:
    """A BROKER config resource in words."""
    return "the cluster default" if not broker else f"broker {broker}"


class _BrokerConfigs:
    """BROKER config resources (one broker's, ``""``: the cluster-wide default) and the broker ids, through the
    admin backend's connection, opened at first use and closed on leaving."""

    def __init__(self, conn: ConnectionOptions) -> None:
        self.conn = conn
        self._backend: AdminBackend | None = None

    def __enter__(self) -> _BrokerConfigs:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    @property
    def wire(self) -> QuotaWire:
        if self._backend is None:
            from kquotactl.backends.kafka.quotas import open_admin_backend

            self._backend = open_admin_backend(self.conn)
        return self._backend.wire

    def broker_ids(self) -> list[str]:
        return [str(b) for b in self.wire.broker_ids()]

    def describe(self, rid: str) -> dict[str, tuple[str | None, str]]:
        return _prefixed(f"describe configs of {where(rid)}", self.wire.broker_configs, rid)

    def alter(self, rid: str, name: str, value: int | None, dry_run: bool) -> None:
        v = None if value is None else str(value)
        _prefixed(f"alter {name} on {where(rid)}", self.wire.alter_broker_config, rid, name, v, dry_run)

    def await_visible(self, rid: str, name: str, value: int | None) -> bool:
        """Whether DescribeConfigs shows the change before the deadline."""
        wanted = "DYNAMIC_DEFAULT_BROKER_CONFIG" if rid == "" else "DYNAMIC_BROKER_CONFIG"
        deadline = time.monotonic() + min(self.conn.timeout, VISIBLE_WITHIN)
        while True:
            current = self.describe(rid).get(name, (None, ""))
            dynamic = current[1] == wanted
            if (value is not None and dynamic and current[0] == str(value)) or (value is None and not dynamic):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def _prefixed(what: str, call: Callable[..., T], *args: object) -> T:
    """Kafka's answer to a config request; its error (not a connection problem) prefixed with what was asked."""
    from kquotactl.core.errors import BackendUnavailable, QuotaError

    try:
        return call(*args)
    except BackendUnavailable:
        raise
    except QuotaError as e:
        raise type(e)(f"{what}: {e}") from None
