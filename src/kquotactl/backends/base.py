"""Backends: where quotas live. One small interface, three implementations.

- :mod:`kquotactl.backends.zookeeper.backend`: ZooKeeper-mode clusters (kazoo), byte-compatible with brokers.
- :mod:`kquotactl.backends.kafka.quotas`: the broker admin API (KIP-546), for KRaft and ZooKeeper-mode brokers.
- offline manifests, for simulation without a cluster.

Backends are imported lazily by :func:`open_backend` so that ``--help`` and ZooKeeper describes never
import a Kafka client.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from kquotactl.core.entities import Entity
from kquotactl.core.filters import EntityFilter
from kquotactl.core.keys import Number
from kquotactl.core.model import EntityChange, EntityResult, QuotaRecord

#: called by :meth:`QuotaBackend.alter` with the results of each write as it completes (a committed ZooKeeper
#: transaction, an answered AlterClientQuotas request), and with the results settled without a write (unchanged,
#: rejected before sending): every result alter returns is passed once, before alter returns or raises, so a
#: caller can log each write as it lands (``apply --log``)
ProgressCallback = Callable[[Sequence[EntityResult]], None]


@runtime_checkable
class QuotaBackend(Protocol):
    """What every backend does. Results are per entity; nothing is ever half-written per entity."""

    name: str
    warnings: list[str]  # what it noticed reading or writing (said once per command)

    def describe(self, flt: EntityFilter | None = None) -> list[QuotaRecord]:
        """Entities with at least one quota that match ``flt`` (KIP-546 semantics), sorted."""
        ...

    def alter(
        self,
        changes: Sequence[EntityChange],
        *,
        validate_only: bool = False,
        expected: dict[Entity, Mapping[str, Number]] | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[EntityResult]:
        """Apply each change atomically per entity, in order.

        ``expected`` maps an entity to the config a plan saw; when given, an entity whose live config
        differs is rejected (stale plan) instead of being overwritten. ``progress``: see :data:`ProgressCallback`.
        """
        ...

    def broker_ids(self) -> list[int]:
        """The ids of the cluster's live brokers, ascending: what a cluster-wide budget is divided by
        (:mod:`kquotactl.core.budget`). ZooKeeper: the ephemeral ``/brokers/ids`` children; admin API: the
        brokers of the cluster metadata (KRaft lists unfenced brokers only)."""
        ...

    def close(self) -> None: ...


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
