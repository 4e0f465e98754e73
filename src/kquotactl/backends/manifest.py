"""An offline, read-only backend over manifests: ``describe`` without a cluster.

It answers ``describe`` with exactly the filter semantics of the live backends (the shared
:class:`EntityFilter` predicates), so the resolver, ``plan`` against a saved export, and simulations can
run in CI with no ZooKeeper or broker. Writing is refused: a manifest is changed by editing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kquotactl.backends.base import ProgressCallback, QuotaBackend
from kquotactl.core.changes import EntityChange, EntityResult, QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.errors import UsageError
from kquotactl.core.filters import EntityFilter
from kquotactl.core.keys import Number
from kquotactl.core.manifest import Manifest
from kquotactl.manifests.loader import load_manifests

if TYPE_CHECKING:
    from kquotactl.core.principals import BrokerPrincipals


class ManifestBackend(QuotaBackend):
    """Quotas as declared in manifest files (read-only; no broker configs, no brokers)."""

    name = "manifest"

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.warnings: list[str] = []
        self._records = manifest.records()

    @classmethod
    def open(cls, paths: Sequence[str], principals: BrokerPrincipals | None = None) -> ManifestBackend:
        """``principals``: the brokers' rules for ``principal:`` entries (see :func:`load_manifests`)."""
        return cls(load_manifests(paths, principals=principals))

    def describe(self, flt: EntityFilter | None = None, *, broker: int | None = None) -> list[QuotaRecord]:
        flt = (flt or EntityFilter.all()).validate()
        exact = flt.exact_entity()
        if exact is not None:
            entry = self.manifest.get(exact)
            return [QuotaRecord(exact, dict(entry.config))] if entry is not None else []
        return [r for r in self._records if flt.matches(r.entity)]

    def alter(
        self,
        changes: Sequence[EntityChange],
        *,
        validate_only: bool = False,
        expected: dict[Entity, Mapping[str, Number]] | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[EntityResult]:
        raise UsageError("the offline manifest backend is read-only: edit the manifest file instead")

    def broker_ids(self) -> list[int]:
        raise UsageError(
            "saved manifests list no brokers: give the broker count that cluster-wide budgets divide by (--brokers N)"
        )

    def close(self) -> None:
        pass

    def __enter__(self) -> ManifestBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
