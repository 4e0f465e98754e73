"""What ``kquotactl exporter`` serves, as a pure function: the rows of each metric family of the exporter's contract
(docs/exporter.md) from the cluster's quotas (:class:`~kquotactl.core.changes.QuotaRecord` and their
:class:`~kquotactl.core.precedence.QuotaIndex`), the brokers' sensors (:class:`~kquotactl.observe.throttled.Sample`,
joined with the limits by :func:`~kquotactl.observe.throttled.top_rows`, the join ``top`` shows) and, with a
manifest, which keys drifted from it. No I/O, no prometheus_client: the service turns the rows into metric
families on each scrape.

Labels carry decoded names (the user desanitized, the client-id JMX-unquoted, as ``top`` decodes them); an absent
part is the empty string, a default entity ``<default>``. Values are in the key's own unit; times in seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kquotactl.core.budget import Share
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity, Name, display_name
from kquotactl.core.manifest import Manifest, entity_path_text
from kquotactl.core.plan import make_plan
from kquotactl.core.precedence import QuotaIndex
from kquotactl.observe.throttled import LISTENER_THROTTLE, Sample, top_rows

PREFIX = "kquotactl_quota_"
ENTITY_LABELS = ("entity", "user", "client_id", "ip", "key")
LIMIT_LABELS = ("quota_type", "user", "client_id", "ip", "key", "level", "entity")
USAGE_LABELS = ("broker", "quota_type", "user", "client_id", "ip", "key")
THROTTLE_LABELS = ("broker", "quota_type", "user", "client_id", "ip")

#: family name -> (HELP, label names): the metric contract shared with the rules and the dashboard (docs/exporter.md)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    PREFIX + "configured": (
        "The quota value set on the entity (bytes/s, % of one thread, mutations/s or connections/s; per broker).",
        ENTITY_LABELS,
    ),
    PREFIX + "configured_per_broker": (
        "The per-broker value a manifest's cluster-wide budget (cluster:) gives the entity for the live broker "
        "count (only entities that are budgets; needs -f MANIFEST).",
        ENTITY_LABELS,
    ),
    PREFIX + "limit": (
        "The effective per-broker limit of an active quota-id as explain resolves it; level: precedence level "
        "1..8 (9: static broker default; ips 1..2), entity: the entity path that supplies it. No series when "
        "unlimited.",
        LIMIT_LABELS,
    ),
    PREFIX + "usage": (
        "The broker's quota sensor rate of the quota-id (a Rate over the quota window: quota.window.num x "
        "quota.window.size.seconds, 11 x 1 s by default), in the key's unit.",
        USAGE_LABELS,
    ),
    PREFIX + "utilization_ratio": (
        "Usage / limit on that broker (1 = at the limit; only when limited).",
        USAGE_LABELS,
    ),
    PREFIX + "throttle_time_seconds": (
        "The broker's throttle-time sensor of the quota-id in seconds: an Avg over metrics.num.samples x "
        "metrics.sample.window.ms (2 x 30 s by default), so it shows a throttle up to a minute after it ended.",
        THROTTLE_LABELS,
    ),
    PREFIX + "drift": (
        "1 where the cluster's value of the key differs from the manifest (-f), 0 where it matches.",
        ENTITY_LABELS,
    ),
}

Row = tuple[tuple[str, ...], float]  # label values in the family's label order, and the value


@dataclass
class Exposition:
    """The rows of every quota family, and how many active quota-ids and entities they cover."""

    families: dict[str, list[Row]] = field(default_factory=lambda: {name: [] for name in FAMILIES})
    quota_ids: int = 0
    entities: int = 0


def _name(n: Name | None) -> str:
    """A label value: the real name, ``<default>`` for a default entity, ``""`` for an absent part."""
    return "" if n is None else display_name(n, quoted=False)


def entity_labels(entity: Entity) -> tuple[str, str, str, str]:
    """(entity path with real names, user, client_id, ip): the labels naming a configured entity."""
    return (entity_path_text(entity, quoted=False), _name(entity.user), _name(entity.client_id), _name(entity.ip))


def configured_rows(records: Iterable[QuotaRecord]) -> list[Row]:
    return [((*entity_labels(r.entity), k), float(v)) for r in records for k, v in r.config.items()]


def budget_rows(shares: Mapping[Entity, Sequence[Share]]) -> list[Row]:
    """``configured_per_broker``: each budget's per-broker share (:func:`kquotactl.core.budget.resolve_budgets`)."""
    return [((*entity_labels(e), s.key.name), float(s.per_broker)) for e, ss in shares.items() for s in ss]


def manifest_drift(manifest: Manifest, live: Sequence[QuotaRecord]) -> list[Row]:
    """``drift``: per key the manifest declares (and, inside its prune scope, per live key it does not), 1 where
    ``plan`` would change the cluster, 0 where it matches. ``manifest``: budgets already resolved."""
    plan = make_plan(manifest, live, prune=bool(manifest.prune))
    differs = {(d.entity, k.key) for d in plan.diffs for k in d.keys}
    rows: dict[tuple[Entity, str], float] = {}
    for entry in manifest.entries:
        for k in entry.config:
            rows[(entry.entity, k)] = 0.0
    for pair in differs:
        rows[pair] = 1.0
    return [((*entity_labels(e), k), v) for (e, k), v in rows.items()]


def sensor_rows(samples: Iterable[Sample], index: QuotaIndex, out: Exposition) -> None:
    """``limit``, ``usage``, ``utilization_ratio`` and ``throttle_time_seconds`` of every active quota-id, from
    :func:`top_rows` (the join ``top`` uses). A listener's ip-connection throttle names no quota-id: left out."""
    limit, usage = out.families[PREFIX + "limit"], out.families[PREFIX + "usage"]
    ratio, throttle = out.families[PREFIX + "utilization_ratio"], out.families[PREFIX + "throttle_time_seconds"]
    ids = 0
    for row in top_rows(samples, index):
        q = row.quota_id
        if q.listener:
            continue
        ids += 1
        for use in row.uses:
            if use.quota_type == LISTENER_THROTTLE:
                continue
            qtype = "" if q.ip else use.quota_type  # the per-ip sensor has no type tag
            who = (q.user, q.client_id, q.ip)
            res = use.resolution
            lim = None if res.limit is None else float(res.limit)
            if lim is not None:
                level = "" if res.level is None else str(res.level)
                path = entity_path_text(res.entity, quoted=False) if res.entity is not None else ""
                limit.append(((qtype, *who, use.key, level, path), lim))
            for broker, fig in use.brokers.items():
                usage.append(((broker, qtype, *who, use.key), fig.usage))
                if lim is not None and lim > 0:
                    ratio.append(((broker, qtype, *who, use.key), fig.usage / lim))
                if not q.ip:  # a per-ip sensor has no throttle time (its listener's does)
                    throttle.append(((broker, qtype, *who), fig.throttle_ms / 1000.0))
    out.quota_ids = ids


def build(
    records: Sequence[QuotaRecord],
    index: QuotaIndex,
    samples: Iterable[Sample] = (),
    *,
    budgets: Mapping[Entity, Sequence[Share]] | None = None,
    drift: Sequence[Row] | None = None,
) -> Exposition:
    """Every family's rows: the configured quotas (``records``, resolved through ``index``), the sensors joined
    with their limits, the budgets' per-broker shares and the drift rows (:func:`manifest_drift`) when given."""
    out = Exposition(entities=len(records))
    out.families[PREFIX + "configured"] = configured_rows(records)
    out.families[PREFIX + "configured_per_broker"] = budget_rows(budgets or {})
    out.families[PREFIX + "drift"] = list(drift or ())
    sensor_rows(samples, index, out)
    return out
