"""What changed for quotas from one Kafka release to the next: the one table ``--kafka-version`` reads.

Each :class:`Change` names the first release that has it and the Kafka source that decided it. A simulation asks
:func:`behaviour` for a version (None: the newest known) and gets every switch at once, so no caller compares
version tuples of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The newest Kafka release whose quota behaviour kquotactl knows (and the one its tests run as the newest).
NEWEST_KNOWN: tuple[int, int, int] = (4, 4, 0)


@dataclass(frozen=True, slots=True)
class Change:
    since: tuple[int, int]
    name: str
    what: str


CHANGES: tuple[Change, ...] = (
    Change((2, 7), "mutation_quota", "controller_mutation_rate exists (KIP-599)"),
    Change((2, 8), "ip_quotas", "ip entities and their connection_creation_rate (KIP-612)"),
    Change((3, 0), "no_static_defaults", "the static quota.producer.default / quota.consumer.default are gone"),
    Change((3, 3), "min_window_1ms", "Rate's window is at least 1 ms (KAFKA-13801)"),
    Change((3, 8), "sample_ring", "SampledStat keeps N + 1 samples: a window runs from N·S to (N + 1)·S (KIP-1036)"),
    Change(
        (4, 2),
        "mutation_throttle_narrowed_first",
        "AbstractControllerMutationQuota.throttleTime narrows to int before max(0, ...) (Java rewrite of the "
        "quota managers): a throttle beyond 2^31 ms wraps instead of reading as 0 or -1",
    ),
    Change(
        (4, 2),
        "quota_types_cleared",
        "a quota type's enabled bit is cleared when its last quota is removed (KAFKA-19282): the quota-id and the "
        "sensors created follow the quotas that exist now, not every quota the broker has seen",
    ),
    Change(
        (4, 1),
        "share_fetch_quota",
        "ShareFetch is recorded on the fetch quota (KafkaApis of 4.1.1 to 4.4.0; share groups are production-ready "
        "from 4.2)",
    ),
)


@dataclass(frozen=True, slots=True)
class Behaviour:
    """Every quota behaviour switch of one Kafka release."""

    version: tuple[int, ...] | None
    switches: frozenset[str]

    def has(self, name: str) -> bool:
        if name not in _NAMES:
            raise KeyError(name)
        return name in self.switches


_NAMES = frozenset(c.name for c in CHANGES)


def behaviour(kafka_version: tuple[int, ...] | None) -> Behaviour:
    """The switches of ``kafka_version`` (None: the newest known release)."""
    v = (kafka_version or NEWEST_KNOWN)[:2]
    return Behaviour(kafka_version, frozenset(c.name for c in CHANGES if v >= c.since))


def since(name: str) -> tuple[int, int]:
    """The first release line that has the change ``name``."""
    for c in CHANGES:
        if c.name == name:
            return c.since
    raise KeyError(name)


#: the newest release line whose brokers register in ZooKeeper without ``features`` (registration version 4): 2.7
#: added feature versioning (KIP-584) to the registration; 2.7 and later cannot be told apart from it
LAST_UNFEATURED = (2, 6)


def registration_release(registration: bytes) -> tuple[int, int] | None:
    """The newest release line a broker's ``/brokers/ids/N`` registration (its JSON) can be from, where the
    registration tells: (2, 6) for one without ``features``; None for a newer or unreadable one."""
    import json

    try:
        data = json.loads(registration)
    except ValueError:
        return None
    if isinstance(data, dict) and "features" not in data and isinstance(data.get("version"), int):
        return LAST_UNFEATURED if data["version"] <= 4 else None
    return None


def newer_than_known(kafka_version: tuple[int, ...]) -> bool:
    """A release after :data:`NEWEST_KNOWN`'s line, whose quota behaviour kquotactl cannot vouch for."""
    return kafka_version[:2] > NEWEST_KNOWN[:2]
