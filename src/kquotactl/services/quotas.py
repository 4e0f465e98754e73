"""Describe and alter one entity, and the one loader of a quota set (manifests or a live backend) that explain,
impact, top and verify share."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kquotactl.backends.base import QuotaBackend, opened
from kquotactl.core.changes import EntityChange, EntityResult, Outcome, QuotaRecord, check_live_changes
from kquotactl.core.errors import MissingInput, QuotaError

if TYPE_CHECKING:  # the rest loads inside the services that use it: describe and alter stay light
    from kquotactl.core.budget import Share
    from kquotactl.core.filters import EntityFilter
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.core.principals import BrokerPrincipals


def backend_warnings(backend: QuotaBackend) -> list[str]:
    """What the backend noticed while reading or writing (stored values brokers cannot parse, lagging brokers...)."""
    return list(backend.warnings)


@dataclass(frozen=True)
class Described:
    """The entities with quotas that matched, and what the backend noticed on the way."""

    records: list[QuotaRecord]
    warnings: list[str]


def describe(backend: QuotaBackend, flt: EntityFilter | None = None) -> Described:
    """Entities with at least one quota matching ``flt`` (every one when None), sorted like kafka-configs."""
    records = backend.describe(flt)
    return Described(records, backend_warnings(backend))


@dataclass(frozen=True)
class Altered:
    """One result per entity written (one per stored spelling when several stored ip names are the address)."""

    results: list[EntityResult]
    warnings: list[str]
    shares: list[Share] = field(default_factory=list)  # --cluster-wide: each budget and its per-broker value

    @property
    def rejection(self) -> QuotaError | None:
        """Why the change was refused (the core's error, with data, when the backend kept it), or None."""
        for result in self.results:
            if result.outcome in (Outcome.REJECTED, Outcome.NOT_ATTEMPTED):
                return result.error or QuotaError(result.message)
        return None


def check_alter(change: EntityChange, *, cluster_wide: bool = False) -> None:
    """What :func:`alter` refuses before it opens the backend: a key no Kafka release knows (every backend's alter
    refuses it too, :func:`kquotactl.backends.base.check_writes`) and, as cluster-wide budgets, nothing to set or a key
    that has no cluster-wide meaning."""
    if cluster_wide and not change.set:
        raise MissingInput("cluster-budgets")
    check_live_changes([change])
    if cluster_wide:
        from kquotactl.core.budget import check_cluster_key
        from kquotactl.core.keys import KEYS

        for k in change.set:
            check_cluster_key(KEYS[k])


def alter(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    change: EntityChange,
    *,
    dry_run: bool = False,
    cluster_wide: bool = False,
) -> Altered:
    """Set and remove keys of one entity, atomically (``dry_run``: validated, nothing written); a refused change is
    in :attr:`Altered.rejection`. ``cluster_wide``: the values set are cluster-wide budgets, written as their
    per-broker shares for the backend's live broker count (:func:`kquotactl.core.budget.per_broker`). ``backend``
    may be the function that opens it: then a change :func:`check_alter` refuses never connects."""
    from kquotactl.core.budget import per_broker
    from kquotactl.core.keys import KEYS

    check_alter(change, cluster_wide=cluster_wide)
    backend = opened(backend)
    shares: list[Share] = []
    if cluster_wide:
        brokers = len(backend.broker_ids())
        shares = [per_broker(KEYS[k], v, brokers) for k, v in change.set.items()]
        change = replace(change, set={s.key.name: s.per_broker for s in shares})
    results = backend.alter([change], validate_only=dry_run)
    return Altered(results, backend_warnings(backend), shares)


@dataclass(frozen=True)
class QuotaSet:
    """A quota set to resolve connections against, and what the backend noticed reading it."""

    index: QuotaIndex
    warnings: list[str]


def load_quota_set(
    source: QuotaBackend | Sequence[str],
    static_defaults: Mapping[str, int] | None = None,
    brokers: int | None = None,
    spread: int = 1,
    principals: BrokerPrincipals | None = None,
) -> QuotaSet:
    """The one loader of a quota set: manifest files or directories (offline, through the read-only manifest
    backend, the same protocol as a cluster) or a live backend's whole quota set. Manifests' cluster-wide budgets
    count as their per-broker shares for ``brokers`` brokers (refused without it). ``spread``: the limits are
    applied to cluster-wide traffic spread evenly over that many brokers (:func:`kquotactl.core.budget.spread_evenly`).

    A ZooKeeper-mode broker tells every quota manager of every entity; a broker answering the admin API (KRaft) only
    the key's own: ``per_key_levels`` follows the backend (offline manifests answer as ZooKeeper does).
    ``principals``: the rules for manifests' ``principal:`` entries.
    """
    from kquotactl.core.precedence import QuotaIndex

    if isinstance(source, Sequence):
        from kquotactl.backends.manifest import ManifestBackend
        from kquotactl.manifests.loader import load_manifests

        manifest = load_manifests(list(source), principals=principals)
        if manifest.budgets:
            from kquotactl.core.budget import resolve_budgets

            if brokers is None:
                raise MissingInput("budget-brokers")
            manifest = resolve_budgets(manifest, brokers).manifest
        with ManifestBackend(manifest) as offline:
            return load_quota_set(offline, static_defaults, spread=spread)
    records = source.describe()
    if spread != 1:
        from kquotactl.core.budget import spread_evenly

        records = spread_evenly(records, spread)
        static_defaults = {k: v * spread for k, v in (static_defaults or {}).items()}
    index = QuotaIndex(records, static_defaults=static_defaults, per_key_levels=source.per_key_levels)
    return QuotaSet(index, backend_warnings(source))
