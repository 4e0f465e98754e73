"""Broker-level connection-creation rate limits (KIP-612): ``max.connection.creation.rate`` for a whole broker
and ``listener.name.<listener>.max.connection.creation.rate`` per listener, per broker or as the cluster-wide
default. These are dynamic broker configs, not client quotas: they are read and changed with DescribeConfigs /
IncrementalAlterConfigs on BROKER resources, with the same client as the quota commands (kafka_wire).

Pure: names and values; the network calls live in the command.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kquotactl.core.errors import InvalidValue, UsageError
from kquotactl.core.keys import INT_MAX

KEY = "max.connection.creation.rate"
_LISTENER_KEY = re.compile(r"^listener\.name\.([^.]+)\.max\.connection\.creation\.rate$")
_LISTENER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def config_name(listener: str | None) -> str:
    """``max.connection.creation.rate`` or its per-listener form (listener names are case-insensitive)."""
    if listener is None:
        return KEY
    if not _LISTENER_NAME.match(listener):
        raise UsageError(f"invalid listener name {listener!r}: letters, digits, '_' and '-' only (e.g. PLAINTEXT)")
    return f"listener.name.{listener.lower()}.{KEY}"


def parse_rate(text: str) -> int:
    """A whole number of connections per second, 1..2147483647 (the broker's INT config)."""
    t = text.strip()
    if not re.fullmatch(r"\d+", t):
        raise InvalidValue(f"invalid value {text!r} for {KEY}: a whole number of connections per second")
    v = int(t)
    if v < 1:
        raise InvalidValue(f"invalid value {text!r} for {KEY}: must be at least 1 (0 would refuse every connection)")
    if v > INT_MAX:
        raise InvalidValue(f"invalid value {text!r} for {KEY}: too large for INT (max {INT_MAX})")
    return v


@dataclass(frozen=True)
class RateSetting:
    broker: str | None  # broker id, or None for the cluster-wide default
    listener: str | None  # None for the whole broker
    value: int
    source: str = ""

    def to_json(self) -> dict[str, str | int | None]:
        return {"broker": self.broker, "listener": self.listener, KEY: self.value, "source": self.source}


def settings_from_configs(broker: str | None, configs: Mapping[str, tuple[str | None, str]]) -> list[RateSetting]:
    """Connection-rate settings among a broker's described configs ({name: (value, source)}), dynamic ones only.

    Static (server.properties) values are included too when set; the broker default (Int.MAX) is not.
    """
    out = []
    for name, (value, source) in sorted(configs.items()):
        if value is None or source in ("DEFAULT_CONFIG", "UNKNOWN"):
            continue
        m = _LISTENER_KEY.match(name)
        if name == KEY or m:
            try:
                v = int(value)
            except ValueError:
                continue
            out.append(RateSetting(broker, m.group(1) if m else None, v, source))
    return out


def sort_settings(settings: Iterable[RateSetting]) -> list[RateSetting]:
    """Cluster default first, then brokers by id; the whole-broker value before listeners."""

    def key(r: RateSetting) -> tuple[tuple[int, int, str], bool, str]:
        b = (0, 0, "") if r.broker is None else (1, int(r.broker), "") if r.broker.isdigit() else (1, 0, r.broker)
        return (b, r.listener is not None, r.listener or "")

    return sorted(settings, key=key)
