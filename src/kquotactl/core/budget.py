"""Cluster-wide budgets (pure): a value meant for the whole cluster, turned into the value each broker enforces.

Kafka enforces client quotas where the work happens, and that differs per key (read in Kafka's sources; each key's
:class:`~kquotactl.core.keys.Split` is in the registry, ``core/keys.py``):

- ``producer_byte_rate`` / ``consumer_byte_rate``: every broker's ``ClientQuotaManager`` meters the bytes it
  serves itself, so a client producing to N brokers may move N × the configured value. A cluster-wide budget
  is divided by the broker count. Both keys are LONG (``QuotaConfig`` validates them as longs and KRaft 3.6+
  refuses a fraction), so the share is ``floor(total / N)`` and ``total - N × share`` (less than N bytes/s) is
  left unassigned: never more than the budget in total, and the remainder is reported when it is not zero.
- ``connection_creation_rate``: ``SocketServer``'s ``ConnectionQuotas`` counts per ip *per broker*: divided like
  the byte rates (INT: the same floor). A client connects to the brokers that lead its partitions, so the even
  split is an assumption.
- ``controller_mutation_rate`` (KIP-599): metered where topics are created, deleted or given partitions. In KRaft
  that is the active controller alone: brokers forward CreateTopics/CreatePartitions/DeleteTopics, and the topics a
  Metadata request auto-creates in an envelope with the client's principal; ``ControllerApis`` records them. So
  the configured value is the cluster-wide budget: not divided. In ZooKeeper mode (2.8–3.9) only the explicit
  requests go to the controller broker; a topic auto-created through Metadata or FindCoordinator is created by the
  broker that received the request (``AutoTopicCreationManager.createTopicsInZk`` → ``ZkAdminManager``), on that
  broker's own bucket, so auto-creation can reach N × the value (:data:`WHOLE_WHERE`). It is still not divided:
  dividing would starve the explicit requests, which all land on one broker. (2.7 does not meter auto-creation.)
- ``request_percentage``: a share of *one broker's* request-handler and network threads' time; there is no
  cluster-wide total to divide, so ``cluster:`` refuses it.
- ``request_rate`` (KIP-124 draft, offline only): a per-broker rate like the byte rates, divided.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.errors import InvalidValue
from kquotactl.core.keys import KEY_ORDER, KEYS, QuotaKey, Split, ValueType, human_and_raw
from kquotactl.core.manifest import Manifest, ManifestError, entity_path_text
from kquotactl.core.wording import counted

#: A live value that is the budget divided by more brokers than this (or 10 × today's) is taken for a hand edit, not
#: for a broker-count change: small values divide a large budget by some huge count by coincidence.
MAX_PLAUSIBLE_BROKERS = 1000


#: Where a :attr:`Split.WHOLE` key is enforced, in both metadata modes (see the module docstring).
WHOLE_WHERE = (
    "enforced once in KRaft, on the active controller; in ZooKeeper mode only CreateTopics/CreatePartitions/"
    "DeleteTopics are (on the controller broker), while topics auto-created through Metadata or FindCoordinator are "
    "metered by each broker that receives the request"
)


def split_of(key: QuotaKey) -> Split:
    return key.split


def check_cluster_key(key: QuotaKey) -> None:
    """Refuse a key that has no cluster-wide meaning (``request_percentage``), naming why."""
    if split_of(key) is Split.REFUSED:
        raise InvalidValue(
            f"{key.name} cannot be a cluster-wide budget: it is a share of one broker's request and network thread "
            "time, enforced by each broker on its own; set it per broker (config:) instead"
        )


@dataclass(frozen=True, slots=True)
class Share:
    """A cluster-wide value and what each of ``brokers`` brokers enforces."""

    key: QuotaKey
    total: int | float
    brokers: int
    per_broker: int | float
    remainder: int | float  # the part of the total no broker is given (integral keys' floor division)

    @property
    def split(self) -> Split:
        return split_of(self.key)

    @property
    def uneven(self) -> bool:
        return self.remainder != 0

    def describe(self) -> str:
        """``200 MiB/s (209715200) cluster-wide = 66.7 MiB/s (69905066) per broker × 3 brokers; 2 B/s of the budget
        is unassigned ...``."""
        total = human_and_raw(self.key, self.total)
        if self.split is Split.WHOLE:
            return (
                f"{self.key.name} {total} cluster-wide = {human_and_raw(self.key, self.per_broker)} as configured, "
                f"not divided: {WHOLE_WHERE}"
            )
        text = (
            f"{self.key.name} {total} cluster-wide = {human_and_raw(self.key, self.per_broker)} per broker × "
            f"{counted(self.brokers, 'broker')}"
        )
        if self.uneven:
            text += (
                f"; {human_and_raw(self.key, self.remainder)} of the budget is unassigned (it does not divide evenly)"
            )
        return text


def per_broker(key: QuotaKey, total: int | float, brokers: int) -> Share:
    """The per-broker value of a cluster-wide ``total`` over ``brokers`` brokers (see the module docstring).

    Integral keys get ``floor(total / brokers)``, exactly (integer arithmetic, no double rounding); a share below 1
    is refused (Kafka refuses 0). DOUBLE keys that divide get the double quotient (remainder 0).
    """
    check_cluster_key(key)
    if brokers < 1:
        raise InvalidValue(f"a cluster-wide {key.name} needs at least one broker, and the cluster lists none")
    if split_of(key) is Split.WHOLE:
        return Share(key, total, brokers, total, 0)
    if key.type is ValueType.DOUBLE:
        return Share(key, total, brokers, float(total) / brokers, 0.0)
    whole = int(total)
    share, remainder = divmod(whole, brokers)
    if share < 1:
        raise InvalidValue(
            f"cluster-wide {key.name} {whole} over {counted(brokers, 'broker')} is less than 1 {key.unit} per broker"
        )
    return Share(key, whole, brokers, share, remainder)


def cluster_value(key: QuotaKey, per_broker_value: int | float, brokers: int) -> int | float:
    """What a per-broker value adds up to over ``brokers`` brokers (``explain``'s cluster-wide view): the limit
    × brokers for keys every broker enforces, the value itself for keys enforced once (KRaft; :data:`WHOLE_WHERE`);
    ``request_percentage`` has
    no cluster-wide total (its per-broker value is returned)."""
    if split_of(key) is not Split.DIVIDED:
        return per_broker_value
    return per_broker_value * brokers


def broker_counts_giving(key: QuotaKey, total: int | float, live: int | float, limit: int = 100_000) -> range:
    """The broker counts N for which ``per_broker(key, total, N)`` is ``live`` (empty when none is).

    This is how a plan tells that the broker count changed since the last apply without keeping any state: the
    live per-broker value is the budget divided by a count that is not today's. For integral keys the counts are
    the N with ``floor(total / N) == live``: ``total // (live + 1) < N <= total // live``.
    """
    if split_of(key) is not Split.DIVIDED or live <= 0:
        return range(0)
    if key.type is ValueType.DOUBLE:
        n = total / live
        rounded = round(n)
        ok = rounded >= 1 and math.isclose(n, rounded, rel_tol=1e-12) and float(total) / rounded == live
        return range(rounded, rounded + 1) if ok else range(0)
    if live != int(live):
        return range(0)
    whole, share = int(total), int(live)
    return range(max(whole // (share + 1) + 1, 1), min(whole // share, limit) + 1)


def drift_note(share: Share, live: int | float | None) -> str | None:
    """When the live per-broker value is this budget divided by another broker count: say so (``None`` otherwise)."""
    if live is None or live == share.per_broker:
        return None
    plausible = max(MAX_PLAUSIBLE_BROKERS, 10 * share.brokers)
    counts = [n for n in broker_counts_giving(share.key, share.total, live, plausible) if n != share.brokers]
    if not counts:
        return None
    was = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return (
        f"{share.key.name} is {human_and_raw(share.key, live)} per broker, the budget divided by {was} brokers: "
        f"the broker count changed to {share.brokers} since the last apply; applying writes "
        f"{human_and_raw(share.key, share.per_broker)} per broker"
    )


@dataclass(frozen=True)
class Budgets:
    """A manifest with its cluster-wide budgets turned into per-broker config for ``brokers`` brokers."""

    manifest: Manifest  # every entry's config: its per-broker keys and the per-broker shares of its budgets
    brokers: int
    shares: dict[Entity, list[Share]]

    def notes(self, live: Sequence[QuotaRecord]) -> list[str]:
        """For plans: each budget as both values (:meth:`described`), each followed by a broker-count change read
        from the live per-broker values, if any (:func:`drift_note`)."""
        live_by_entity = {r.entity: r.config for r in live}
        out = []
        for entity, share, described in self._described():
            out.append(described)
            drift = drift_note(share, live_by_entity.get(entity, {}).get(share.key.name))
            if drift:
                out.append(f"{entity_path_text(entity)}: {drift}")
        return out

    def described(self) -> list[str]:
        """Each budget as both values, ``users/a: producer_byte_rate 200 MiB/s ... per broker × 3 brokers``: what a
        plan says for information (the drift notes are the warnings)."""
        return [described for _, _, described in self._described()]

    def _described(self) -> list[tuple[Entity, Share, str]]:
        return [(e, s, f"{entity_path_text(e)}: {s.describe()}") for e, shares in self.shares.items() for s in shares]


def resolve_budgets(manifest: Manifest, brokers: int) -> Budgets:
    """Each entry's ``cluster:`` values as per-broker config for ``brokers`` live brokers (see :func:`per_broker`);
    a share that cannot be written (below 1 per broker) is a :class:`ManifestError` naming its file:line."""
    resolved = Manifest(prune=list(manifest.prune), files=list(manifest.files))
    shares: dict[Entity, list[Share]] = {}
    problems = []
    for entry in manifest.entries:
        if not entry.cluster:
            resolved.add(entry)
            continue
        config = dict(entry.config)
        for name, total in entry.cluster.items():
            try:
                share = per_broker(KEYS[name], total, brokers)
            except InvalidValue as e:
                problems.append(f"{entry.key_sources.get(name, entry.source)}: {entity_path_text(entry.entity)}: {e}")
                continue
            shares.setdefault(entry.entity, []).append(share)
            config[name] = share.per_broker
        ordered = dict(sorted(config.items(), key=lambda kv: KEY_ORDER[kv[0]]))
        resolved.add(replace(entry, config=ordered))
    if problems:
        raise ManifestError(problems)
    return Budgets(resolved, brokers, shares)


def cluster_view(key: QuotaKey, limit: int | float, brokers: int) -> dict[str, object]:
    """``explain``'s cluster-wide view of one resolved per-broker limit (JSON-ready)."""
    return {
        "key": key.name,
        "per_broker": limit,
        "brokers": brokers,
        "cluster_wide": cluster_value(key, limit, brokers),
        "split": split_of(key).value,
    }


def cluster_view_words(key: QuotaKey, limit: int | float, brokers: int) -> str:
    """``producer_byte_rate: 100 MiB/s (104857600) per broker × 3 brokers = 300 MiB/s (314572800) cluster-wide``."""
    split = split_of(key)
    per = human_and_raw(key, limit)
    if split is Split.DIVIDED:
        total = human_and_raw(key, cluster_value(key, limit, brokers))
        return f"{key.name}: {per} per broker × {counted(brokers, 'broker')} = {total} cluster-wide"
    if split is Split.WHOLE:
        return f"{key.name}: {per} cluster-wide ({WHOLE_WHERE})"
    return f"{key.name}: {per} of each broker's thread time (per broker: no cluster-wide total)"


def spread_evenly(records: Sequence[QuotaRecord], brokers: int) -> list[QuotaRecord]:
    """Per-broker limits as limits on a whole cluster's traffic spread evenly over ``brokers`` brokers (``impact``).

    Each broker sees ``usage / N`` against ``limit``; the broker's throttle ``(rate - limit) / limit × window`` is the
    same for ``usage`` against ``limit × N``, so a replay of cluster-wide traffic multiplies every limit a broker
    meters itself by N (request_percentage too: request time is spread like the requests). A key enforced once
    (controller_mutation_rate, :data:`WHOLE_WHERE`), keeps its value.
    """
    out = []
    for r in records:
        config = {k: v if split_of(KEYS[k]) is Split.WHOLE else v * brokers for k, v in r.config.items()}
        out.append(replace(r, config=config))
    return out
