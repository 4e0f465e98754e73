"""Backends: where quotas live. One small interface, three implementations.

- :mod:`kquotactl.backends.zookeeper.backend`: ZooKeeper-mode clusters (kazoo), byte-compatible with brokers.
- :mod:`kquotactl.backends.kafka.quotas`: the broker admin API (KIP-546), for KRaft and ZooKeeper-mode brokers.
- offline manifests, for simulation without a cluster.

Backends are imported lazily by :func:`open_backend` so that ``--help`` and ZooKeeper describes never
import a Kafka client.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from kquotactl.core.changes import (
    EntityChange,
    EntityResult,
    QuotaRecord,
    check_live_changes,
    check_one_change_per_entity,
)
from kquotactl.core.entities import Entity, EntityType
from kquotactl.core.errors import InvalidValue
from kquotactl.core.filters import EntityFilter
from kquotactl.core.keys import Number

#: called by :meth:`QuotaBackend.alter` with the results of each write as it completes (a committed ZooKeeper
#: transaction, an answered AlterClientQuotas request), and with the results settled without a write (unchanged,
#: rejected before sending): every result alter returns is passed once, before alter returns or raises, so a
#: caller can log each write as it lands (``apply --log``)
ProgressCallback = Callable[[Sequence[EntityResult]], None]


@dataclass(frozen=True)
class WatchedChange:
    """What a change watch (:meth:`QuotaBackend.watch_changes`) reports: the entities named by new change
    notifications, read again (``records``: those holding quotas now; ``removed``: those holding none), or that
    the watch cannot tell what changed (``resync``: read everything again; ``error``: why, while it cannot)."""

    records: Sequence[QuotaRecord] = ()
    removed: Sequence[Entity] = ()
    resync: bool = False
    error: str | None = None


#: called by a change watch from its own thread with each :class:`WatchedChange`
WatchCallback = Callable[[WatchedChange], None]


class QuotaBackend(abc.ABC):
    """What every backend does, and every capability a caller may use: callers use these members only (never the
    concrete class, its name or ``getattr``; ``tests/test_architecture.py`` holds that). Results are per entity;
    nothing is ever half-written per entity.

    A new backend subclasses this: mypy names the abstract members it still lacks; the optional capabilities
    below have the default of a backend without them."""

    #: what the backend is called in messages (``zookeeper``, ``admin``, ``manifest``); never branched on
    name: str
    warnings: list[str]  # what it noticed reading or writing (said once per command)

    @abc.abstractmethod
    def describe(self, flt: EntityFilter | None = None, *, broker: int | None = None) -> list[QuotaRecord]:
        """Entities with at least one quota that match ``flt`` (KIP-546 semantics), sorted. ``broker``: ask that
        broker (by id) instead of any; only where :attr:`asks_each_broker` (elsewhere every broker reads one store,
        and it is ignored)."""

    @abc.abstractmethod
    def alter(
        self,
        changes: Sequence[EntityChange],
        *,
        validate_only: bool = False,
        expected: dict[Entity, Mapping[str, Number]] | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[EntityResult]:
        """Apply each change atomically per entity, in order. Every backend that writes starts with
        :func:`check_writes`: a backend used directly from Python never writes a key no Kafka release knows.

        ``expected`` maps an entity to the config a plan saw; when given, an entity whose live config
        differs is rejected (stale plan) instead of being overwritten. ``progress``: see :data:`ProgressCallback`.
        """

    @abc.abstractmethod
    def broker_ids(self) -> list[int]:
        """The ids of the cluster's live brokers, ascending: what a cluster-wide budget is divided by
        (:mod:`kquotactl.core.budget`). ZooKeeper: the ephemeral ``/brokers/ids`` children; admin API: the
        brokers of the cluster metadata (KRaft lists unfenced brokers only)."""

    def fenced_broker_ids(self) -> list[int]:
        """The ids of brokers registered but fenced (KRaft: shut down, restarting, or cut off from the
        controllers), which :meth:`broker_ids` leaves out; none where that cannot be told."""
        return []

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- optional capabilities: the defaults are those of a backend without them ------------------------------

    @property
    def can_describe(self) -> bool:
        """Whether :meth:`describe` can answer at all (a KRaft controller cannot describe quotas)."""
        return True

    @property
    def asks_each_broker(self) -> bool:
        """Whether each broker can be asked for its own view (``describe(broker=id)``) and its own configuration:
        the admin API through brokers. Elsewhere one store is what every broker reads."""
        return False

    @property
    def described_from(self) -> str:
        """Where :meth:`describe` reads, in words (``verify`` names it)."""
        return f"the {self.name} backend"

    @property
    def per_key_levels(self) -> bool:
        """Whether the brokers behind it resolve each key's level on its own (a broker answering the admin API,
        KRaft) rather than one level for every key of a quota manager (ZooKeeper mode, and offline manifests)."""
        return False

    @property
    def apply_chunk(self) -> int:
        """How many entities ``apply`` hands to one :meth:`alter` call: each call reads their current state first
        (the stale-plan check) and is logged as its writes land. Per-entity reads (ZooKeeper) make small calls
        cheap."""
        return 5000

    @property
    def read_after_write_settle(self) -> float:
        """Seconds a read may lag a write (KRaft brokers apply committed metadata asynchronously): how long a
        read-back of writes in flight keeps reading before it decides."""
        return 0.0

    @property
    def kafka_configs_mode(self) -> str:
        """The kafka-configs.sh mode this backend answers as (``zookeeper`` or ``bootstrap``): ``-o kafka`` prints
        what that mode prints."""
        return "bootstrap"

    def check_writable(self) -> None:  # noqa: B027 - a capability with nothing to check by default
        """Refuse, before any plan is shown, a write that :meth:`alter` would refuse for where it writes (a
        ZooKeeper chroot no broker uses; a ZooKeeper cluster migrating to KRaft, where the write would be lost).
        Reads of such a store add a warning to :attr:`warnings` instead. Default: nothing to refuse."""

    def release_refusal(self, entity: Entity, keys: Sequence[str]) -> str | None:
        """Why the brokers written through would refuse ``entity`` or one of ``keys`` as too new for their release
        (:func:`kquotactl.core.changes.release_refusal`), in words that name them; None where they know them all or
        the release cannot be told (ZooKeeper, offline manifests)."""
        return None

    def broker_settings(self, names: Sequence[str]) -> tuple[dict[str, str | None], str] | None:
        """The brokers' configs ``names`` as far as the backend can read them, and where they came from in words;
        None when it cannot read any (offline manifests)."""
        return None

    def entity_names(self, etype: EntityType) -> set[str] | None:
        """The real names of ``etype`` with quotas, cheaper than :meth:`describe` (completion); None when the
        backend has no cheaper way (then :meth:`describe` answers)."""
        return None

    def watch_changes(self, callback: WatchCallback) -> Callable[[], None] | None:
        """Follow quota changes as they are made (the exporter): ``callback`` gets each change, read from the
        store, from a thread of the backend's, until the returned function stops the watch. None: the backend
        cannot watch (then the caller polls :meth:`describe`). The first report is a ``resync``."""
        return None


def check_writes(changes: Sequence[EntityChange]) -> None:
    """What every backend's :meth:`QuotaBackend.alter` refuses before reading or writing anything: a key no Apache
    Kafka release knows (:func:`kquotactl.core.changes.check_live_changes`), an entity twice in one batch."""
    check_live_changes(changes)
    check_one_change_per_entity(changes)


def check_release(backend: QuotaBackend, changes: Sequence[EntityChange]) -> None:
    """Refuse, before anything is written, a change the brokers' release does not know (a key or an ip entity
    newer than it, set or removed: :meth:`QuotaBackend.release_refusal`)."""
    for ch in changes:
        if (why := backend.release_refusal(ch.entity, [*ch.set, *ch.remove])) is not None:
            raise InvalidValue(f"{ch.entity.label()}: {why}")


def opened(backend: QuotaBackend | Callable[[], QuotaBackend]) -> QuotaBackend:
    """A backend, or the function that opens one (called now): services that take either check what they can
    before a connection is opened."""
    return backend if isinstance(backend, QuotaBackend) else backend()


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (blocked for the calling thread, delivered when the block ends), where the platform
    allows it. Two uses: a batch of results is logged and counted as one (a Ctrl-C lands before or after it), and
    the client threads a backend starts inherit the block, so Ctrl-C always reaches the main thread (a signal taken
    by a client thread would leave the main thread blocked, at a prompt for one)."""
    import signal

    held = {signal.SIGINT, signal.SIGTERM}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, OSError, ValueError):  # no pthread_sigmask here
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
