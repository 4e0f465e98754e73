"""The broker admin API backend (KIP-546): DescribeClientQuotas / AlterClientQuotas, for KRaft and
ZooKeeper-mode clusters alike (``--bootstrap-server``, ``--bootstrap-controller``).

The pure part (filters to KIP-546 components, entities to and from the wire, values coerced to each key's
type, change planning, chunking) is plain functions here; the network part is :mod:`kquotactl.backends.kafka.client`,
imported only when a connection is opened.

Alter sends one entry per entity carrying all its set and remove ops together (the broker applies an entry
atomically: never remove-then-add), many entities per request, chunked below the controller's per-request
record limit. Results are per entity, with the broker's own message for rejected ones.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kquotactl.backends.base import ProgressCallback, QuotaBackend, check_release, check_writes
from kquotactl.core.changes import (
    EntityChange,
    EntityResult,
    Outcome,
    QuotaConfig,
    QuotaRecord,
    WireEntry,
    apply_change,
    release_refusal,
    release_text,
    stale_plan_result,
)
from kquotactl.core.entities import DEFAULT, Entity, EntityType
from kquotactl.core.errors import BackendUnavailable, QuotaError, UsageError
from kquotactl.core.filters import EntityFilter, MatchType
from kquotactl.core.keys import INT_MAX, KEYS, LONG_MAX, KeyScope, Number, ValueType
from kquotactl.core.partial import interrupted, partial_failure
from kquotactl.core.retry import RetryPolicy
from kquotactl.core.values import route_ip_changes, stored_findings
from kquotactl.core.wording import counted

if TYPE_CHECKING:
    from kquotactl.backends.kafka.client import Fencing, QuotaWire
    from kquotactl.connection.clientprops import ClientSettings
    from kquotactl.connection.cluster import ConnectionOptions

log = logging.getLogger("kquotactl.admin")

# KRaft controllers refuse a single operation producing more than 10,000 records
# (QuorumController.MAX_RECORDS_PER_USER_OP): the whole request, every entry POLICY_VIOLATION.
# Every op (a key set or removed, ip keys alike) is one record. Stay well below
# (tests/test_admin_record_limit.py measures the limit on a real controller).
MAX_ENTRIES_PER_REQUEST = 2000
MAX_OPS_PER_REQUEST = 5000
#: entities ``apply`` hands to one alter call: each call reads the whole cluster (one describe of everything) and
#: waits until the bootstrap broker shows its writes, so calls are few and large (at 5,000 a call, an apply of
#: 100,000 entities read the cluster 40 times: 3.75x its floor); a call's writes are logged request by request
APPLY_CHUNK = 50_000
# Up to this many entities, read their current state with exact describes; beyond, one describe of all.
EXACT_READS_UP_TO = 8
# After an alter, wait up to this long for the broker to describe what was applied (KRaft metadata lag).
VISIBLE_WAIT = 10.0
VISIBLE_POLL = RetryPolicy(delay=0.02, deadline=VISIBLE_WAIT)
#: how long a read-back of writes in flight keeps reading (the broker applies committed metadata asynchronously)
READ_BACK_SETTLE = 2.0
#: after a request lost in flight (a controller failover, a broker gone): how the quorum is polled until a
#: controller is active again and the live replicas hold what it committed, within the request timeout
FAILOVER_POLL = RetryPolicy(delay=0.2, backoff=1.5, max_delay=2.0)
#: a replica that has not fetched from the leader for this long (ms) is taken for down: not waited for
REPLICA_ALIVE_MS = 3000

WireEntity = list[tuple[str, str | None]]
_ORDER = (EntityType.USER, EntityType.CLIENT_ID, EntityType.IP)
#: a wire entity type (the KIP-546 name, or the plural :meth:`EntityType.from_name` accepts too) -> Entity's field
_WIRE_FIELDS = {
    name: field
    for t, field in ((EntityType.USER, "user"), (EntityType.CLIENT_ID, "client_id"), (EntityType.IP, "ip"))
    for name in (t.value, t.plural)
}


# -- pure helpers ------------------------------------------------------------------------------------


def filter_components(flt: EntityFilter) -> list[tuple[str, int, str | None]]:
    """An :class:`EntityFilter` as KIP-546 components: (entity_type, match_type, match).

    An exact ip is asked for as "any ip" and matched here by address, as brokers key ip quotas: a stored
    ``::ffff:10.0.0.1`` is the address ``10.0.0.1``, and ZooKeeper-mode brokers sanitize an IPv6 match string
    (``::1`` -> ``%3A%3A1``) and never find the node (see docs/admin-api.md). ips are few.
    """
    out: list[tuple[str, int, str | None]] = []
    for c in flt.components:
        if c.match_type is MatchType.EXACT and c.entity_type is EntityType.IP:
            out.append((c.entity_type.value, int(MatchType.ANY), None))
        else:
            out.append((c.entity_type.value, int(c.match_type), c.name if c.match_type is MatchType.EXACT else None))
    return out


def entity_to_wire(entity: Entity) -> WireEntity:
    comps = entity.components()
    return [(t.value, None if comps[t] is DEFAULT else str(comps[t])) for t in _ORDER if t in comps]


def wire_key(pairs: Iterable[tuple[str, str | None]]) -> tuple[tuple[str, str | None], ...]:
    """Order-independent identity of a wire entity (brokers may answer in any order)."""
    return tuple(sorted(pairs, key=lambda p: p[0]))


def entity_from_wire(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The broker's entity as stored (names raw, not re-canonicalised): what to show and to address."""
    comps: dict[str, Any] = {}
    for t, n in pairs:
        field = _WIRE_FIELDS.get(t) or _WIRE_FIELDS[EntityType.from_name(t).value]  # (no enum per component)
        if field in comps:
            raise QuotaError(f"broker returned entity with duplicate {t} component")
        comps[field] = DEFAULT if n is None else n
    if not comps:
        raise QuotaError("broker returned an empty entity")
    return Entity(**comps)


def coerce_value(key: str, value: float) -> Number | None:
    """A broker double as the key's type: integers for LONG/INT (clamped to the type's range), else float."""
    spec = KEYS.get(key)
    if spec is None:
        return None
    if spec.type is ValueType.DOUBLE:
        return float(value)
    limit = LONG_MAX if spec.type is ValueType.LONG else INT_MAX
    if value != value or value in (float("inf"), float("-inf")):
        return None
    as_int = round(value)
    if abs(value - as_int) > 1e-6:
        return float(value)  # a fractional value a ZooKeeper-mode broker let through: show it as is
    return min(int(as_int), limit)


#: per entity kind, its keys: each one's rank in the canonical order and its integer type's upper bound (None: a
#: double)
_KEYS_OF = {
    kind: {
        k: (rank, None if spec.type is ValueType.DOUBLE else LONG_MAX if spec.type is ValueType.LONG else INT_MAX)
        for rank, (k, spec) in enumerate(KEYS.items())
        if spec.kind is kind
    }
    for kind in KeyScope
}
_CLIENT_KEYS, _IP_KEYS = _KEYS_OF[KeyScope.CLIENT], _KEYS_OF[KeyScope.IP]
_INFINITE = (float("inf"), float("-inf"))


def typed_values(entity: Entity, values: Mapping[str, float], warnings: list[str] | None = None) -> QuotaConfig:
    """The quota keys of a described entity, typed, in the canonical key order."""
    out: QuotaConfig = {}
    keys = _IP_KEYS if entity.ip is not None else _CLIENT_KEYS  # coerce_value, without an enum per value
    last, ordered = -1, True
    for k, value in values.items():
        spec = keys.get(k)
        if spec is None:
            continue
        rank, limit = spec
        if limit is None:
            out[k] = float(value)
        elif value == value and value not in _INFINITE:
            as_int = round(value)
            out[k] = float(value) if abs(value - as_int) > 1e-6 else as_int if as_int <= limit else limit
        ordered = ordered and rank > last
        last = rank
    if not ordered:
        out = {k: out[k] for k in sorted(out, key=lambda k: keys[k][0])}
    if len(out) == len(values):
        return out
    unknown = sorted(k for k in values if k not in KEYS)
    if unknown and warnings is not None:
        warnings.append(f"{entity.label()}: ignoring keys kquotactl does not know: {', '.join(unknown)}")
    return out


def check_wire_exact(changes: Iterable[EntityChange]) -> None:
    """Refuse, before anything is sent, an integer value the admin API's double cannot carry exactly.

    The broker would store the nearest double (2**63 - 3 becomes Long.MAX_VALUE), so the value read back
    would differ from the value written and every later plan would show the same change again.
    """
    for ch in changes:
        for k, v in ch.set.items():
            if isinstance(v, int) and coerce_value(k, float(v)) != v:
                raise QuotaError(
                    f"{ch.entity.label()}: {k}={v} cannot be sent exactly: the admin API carries quota values as "
                    f"doubles and the broker would store {coerce_value(k, float(v))} (the ZooKeeper backend "
                    "stores it as given)"
                )


def plan_ops(before: Mapping[str, Number], change: EntityChange) -> tuple[QuotaConfig, list[tuple[str, float, bool]]]:
    """The entity's config after ``change`` and the ops that get it there (sets and removes in one entry).

    Only keys that actually change are sent. Raises like :func:`apply_change` (deleting an unset key).
    """
    after = apply_change(before, change)
    ops: list[tuple[str, float, bool]] = []
    for k in KEYS:
        if k in after and (k not in before or before[k] != after[k]):
            ops.append((k, float(after[k]), False))
        elif k in before and k not in after:
            ops.append((k, 0.0, True))
    return after, ops


def chunks(
    entries: Sequence[Any], ops_of: Any, max_entries: int | None = None, max_ops: int | None = None
) -> Iterator[list[Any]]:
    """Split entries into requests bounded by entry count and total op count (never splitting an entry); the
    bounds default to the module's, read at the call."""
    max_entries = max_entries or MAX_ENTRIES_PER_REQUEST
    max_ops = max_ops or MAX_OPS_PER_REQUEST
    batch: list[Any] = []
    n_ops = 0
    for e in entries:
        k = max(1, len(ops_of(e)))
        if batch and (len(batch) >= max_entries or n_ops + k > max_ops):
            yield batch
            batch, n_ops = [], 0
        batch.append(e)
        n_ops += k
    if batch:
        yield batch


# -- the backend -------------------------------------------------------------------------------------


class AdminBackend(QuotaBackend):
    """Quotas through the broker admin API (``--bootstrap-server`` / ``--bootstrap-controller``)."""

    name = "admin"
    wait_visible = True  # read-your-writes after alter (benchmarks of raw throughput turn it off)

    def __init__(self, wire: QuotaWire, warnings: list[str] | None = None, controller: bool = False) -> None:
        self._wire: QuotaWire | None = wire
        self._fencing: Fencing | None = None  # asked once per command (check_writable, the first describe)
        self.warnings: list[str] = list(warnings or [])
        self.controller = controller

    @classmethod
    def connect(
        cls,
        bootstrap: str,
        settings: ClientSettings | None = None,
        *,
        connect_timeout: float = 10.0,
        timeout: float = 30.0,
        controller: bool = False,
        warnings: list[str] | None = None,
    ) -> AdminBackend:
        from kquotactl.backends.kafka.client import QuotaWire
        from kquotactl.connection.clientprops import ClientSettings

        if not bootstrap or not all(_looks_like_address(a) for a in bootstrap.split(",")):
            flag = "--bootstrap-controller" if controller else "--bootstrap-server"
            raise UsageError(f"{flag} must be HOST:PORT[,HOST:PORT...], got {bootstrap!r}")
        from kquotactl.connection.cluster import unreachable

        hosts = [
            (h.strip().strip("[]"), int(p)) for h, _, p in (a.strip().rpartition(":") for a in bootstrap.split(","))
        ]
        why = unreachable(hosts, connect_timeout)
        if why:
            raise BackendUnavailable(
                f"cannot connect to Kafka {'controller' if controller else 'broker'} {bootstrap}: {why}"
            )
        wire = QuotaWire(bootstrap, settings or ClientSettings(), connect_timeout, timeout, controller=controller)
        return cls(wire, warnings, controller)

    def __enter__(self) -> AdminBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._wire is not None:
            self._wire.close()
            self._wire = None

    # -- capabilities (see QuotaBackend) -----------------------------------------------------------

    @property
    def can_describe(self) -> bool:
        return not self.controller  # controllers do not answer DescribeClientQuotas

    @property
    def asks_each_broker(self) -> bool:
        return not self.controller

    @property
    def per_key_levels(self) -> bool:
        return True  # a broker answering the admin API (KRaft) tells each key's quota manager its own level

    @property
    def apply_chunk(self) -> int:
        return APPLY_CHUNK

    @property
    def read_after_write_settle(self) -> float:
        return READ_BACK_SETTLE if self.wait_visible else 0.0

    @property
    def wire(self) -> QuotaWire:
        if self._wire is None:
            raise QuotaError("admin backend is closed")
        return self._wire

    # -- reads -----------------------------------------------------------------------------------

    def broker_ids(self) -> list[int]:
        if self.controller:
            raise UsageError(
                "the brokers (their ids, their count) come from the brokers' metadata: "
                "use --bootstrap-server, not --bootstrap-controller"
            )
        return self.wire.broker_ids()

    def fenced_broker_ids(self) -> list[int]:
        if self.controller:
            return []
        return self.wire.fenced_broker_ids()

    def check_writable(self) -> None:
        """Refuse a plan read from a broker the cluster has fenced (cut off from the controllers, restarting): it
        answers from an old metadata image, and a write through it cannot reach the controllers."""
        fencing = None if self.controller else self._fenced_asked()
        if fencing is not None:
            raise BackendUnavailable(f"{fenced_words(fencing)}: its quotas may be old and a write through it "
                                     "cannot reach the controllers; give another broker's address")  # fmt: skip

    def _fenced_asked(self) -> Fencing | None:
        """The fencing seen once per command, when the broker read from is fenced; None when it is not, or when
        that cannot be told (no other broker answers, a release without KIP-1073)."""
        from kquotactl.backends.kafka.client import Fencing

        if self._fencing is None:
            try:
                self._fencing = self.wire.fencing()
            except QuotaError as e:  # unreachable, or an error code: the read or write goes on without knowing
                log.debug("cannot tell whether the broker asked is fenced: %s", e)
                self._fencing = Fencing([], None, "")
        return self._fencing if self._fencing.asked_is_fenced else None

    def _warn_if_fenced(self) -> None:
        fencing = self._fenced_asked()
        if fencing is not None:
            self.warnings.append(f"{fenced_words(fencing)}: it answers from an old metadata image, so these "
                                 "quotas may be stale (ask another broker)")  # fmt: skip

    def broker_settings(self, names: Sequence[str]) -> tuple[dict[str, str | None], str]:
        """The values of broker configs ``names`` as the lowest-id broker reports them (DescribeConfigs: its
        static server.properties, dynamic and default values alike), and where they came from."""
        ids = self.broker_ids()
        if not ids:
            raise QuotaError("the cluster reports no brokers: cannot read their configs")
        configs = self.wire.broker_configs(str(ids[0]))
        return {n: configs[n][0] for n in names if n in configs}, f"broker {ids[0]}'s configs"

    def release_refusal(self, entity: Entity, keys: Sequence[str]) -> str | None:
        release = self.wire.broker_release
        if release is None or (why := release_refusal(entity, keys, release)) is None:
            return None
        return f"{why}, and the {self.wire.what} is Kafka {release_text(release)} (by the API versions it answers)"

    def describe(self, flt: EntityFilter | None = None, *, broker: int | None = None) -> list[QuotaRecord]:
        """``broker``: ask that broker (by id) instead of the bootstrap node (``verify``: each broker's own state)."""
        flt = (flt or EntityFilter.all()).validate()
        if flt.strict and not flt.components:
            return []
        if any(c.entity_type is EntityType.IP for c in flt.components):
            why = self.release_refusal(Entity(ip=DEFAULT), ())
            if why is not None:  # the broker's answer: UNSUPPORTED_VERSION: Custom entity type 'ip' not supported
                raise QuotaError(f"cannot describe ips: {why}")
        found = self.wire.describe(filter_components(flt), flt.strict, broker)
        if broker is None and not self.controller and self._fencing is None:
            self._warn_if_fenced()
        every = not flt.components and not flt.strict  # the filter matches every entity: not asked 100,000 times
        records = []
        n = len(found)
        for index, (pairs, values) in enumerate(found):
            try:
                entity = entity_from_wire(pairs)
            except QuotaError as e:
                self.warnings.append(f"{pairs}: {e} (skipped)")
                continue
            if not every and not flt.matches(entity):
                continue
            config = typed_values(entity, values, self.warnings)
            if config:
                records.append(
                    QuotaRecord(entity, config, wire=WireEntry(index, n, tuple(pairs), tuple(values.items())))
                )
        records.sort(key=_record_order)
        self.warnings.extend(str(f) for f in stored_findings(records))
        return records

    def _current(self, entities: Sequence[Entity]) -> dict[Entity, QuotaConfig]:
        """Live config of each entity (absent = no quotas), by exact describes or one describe of everything."""
        if self.controller:
            return {}
        if len(entities) <= EXACT_READS_UP_TO:
            out: dict[Entity, QuotaConfig] = {}
            for e in entities:
                recs = self.describe(EntityFilter.exact(e))
                if recs:
                    out[e] = dict(recs[0].config)
            return out
        wanted = {wire_key(entity_to_wire(e)): e for e in entities}
        out = {}
        for pairs, values in self.wire.describe([], False):
            match = wanted.get(wire_key(pairs))
            if match is not None:
                out[match] = typed_values(match, values)
        return out

    # -- writes ----------------------------------------------------------------------------------

    def alter(
        self,
        changes: Sequence[EntityChange],
        *,
        validate_only: bool = False,
        expected: dict[Entity, Mapping[str, Number]] | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[EntityResult]:
        """Read, plan (pure), then send batched entries; see the module docstring."""
        check_writes(changes)
        check_wire_exact(changes)
        check_release(self, changes)
        self.check_writable()  # a fenced broker would hold the write and forward it whenever its link is back
        if not self.controller and any(ch.entity.ip is not None and ch.entity.ip is not DEFAULT for ch in changes):
            ips = self.wire.describe([(EntityType.IP.value, int(MatchType.ANY), None)], True)
            stored = [entity_from_wire(pairs).ip for pairs, _ in ips]
            changes = route_ip_changes(changes, [str(n) for n in stored if n is not None and n is not DEFAULT])
        try:
            current = self._current([ch.entity for ch in changes])
        except KeyboardInterrupt:  # Ctrl-C while reading, before any request: nothing was sent
            raise interrupted(changes, {}) from None
        results: dict[Entity, EntityResult] = {}
        planned: list[tuple[EntityChange, QuotaConfig, QuotaConfig, list[tuple[str, float, bool]]]] = []
        for ch in changes:
            before = current.get(ch.entity, {})
            if (stale := stale_plan_result(ch.entity, expected, before)) is not None:
                results[ch.entity] = stale
                continue
            if self.controller:  # controllers cannot describe: send the change as given
                after = dict(ch.set)
                ops = [(k, float(v), False) for k, v in ch.set.items()] + [(k, 0.0, True) for k in sorted(ch.remove)]
            else:
                try:
                    after, ops = plan_ops(before, ch)
                except QuotaError as e:
                    results[ch.entity] = EntityResult(
                        ch.entity, Outcome.REJECTED, before, before, message=str(e), error=e
                    )
                    continue
                if not ops:
                    results[ch.entity] = EntityResult(ch.entity, Outcome.UNCHANGED, before, after)
                    continue
            planned.append((ch, before, after, ops))
        reported: set[Entity] = set()

        def report(batch_results: list[EntityResult]) -> None:
            reported.update(r.entity for r in batch_results)
            if progress and batch_results:
                progress(batch_results)

        in_flight: list[Entity] = []  # the request sent whose answer has not come
        try:
            report(list(results.values()))  # settled without a request: unchanged, stale, refused
            for batch in chunks(planned, lambda p: p[3]):
                entries = [(entity_to_wire(ch.entity), ops) for ch, _, _, ops in batch]
                in_flight = [p[0].entity for p in batch]
                try:
                    outcomes = self._send(entries, validate_only)
                except BackendUnavailable as e:  # the answer was lost: settle what it did before saying so
                    if not validate_only and not self.controller:
                        landed, in_flight, why = self._settle(batch)
                        results.update((r.entity, r) for r in landed)
                        report(landed)
                        if why:
                            e = BackendUnavailable(f"{e}; {why}")
                        raise partial_failure(e, changes, results, in_flight, atomic=False, read_back=True) from None
                    raise partial_failure(e, changes, results, in_flight, atomic=False) from None
                except QuotaError as e:
                    raise partial_failure(e, changes, results, in_flight, atomic=False) from None
                answered = self._answered(batch, outcomes, validate_only)
                results.update((r.entity, r) for r in answered)
                in_flight = []
                report(answered)  # one request answered: its entities are applied (or rejected), logged now
            if not validate_only and self.wait_visible:
                self._await_visible({e: r.after for e, r in results.items() if r.outcome is Outcome.APPLIED})
        except KeyboardInterrupt:  # Ctrl-C: the answered requests are known; only the one in flight is not
            raise interrupted(changes, results, in_flight, atomic=False) from None
        ordered = [results[ch.entity] for ch in changes if ch.entity in results]
        report([r for r in ordered if r.entity not in reported])
        return ordered

    def _send(self, entries: list[tuple[WireEntity, list[tuple[str, float, bool]]]], validate_only: bool) -> Any:
        """One AlterClientQuotas request. Through a controller, a request that met no active controller (a
        failover: NOT_CONTROLLER, the connection lost) is sent again to the new one within the request timeout:
        a controller-path write carries absolute values as given (nothing read first), so sending it twice
        leaves what sending it once does."""
        if not self.controller:
            return self.wire.alter(entries, validate_only)
        from kquotactl.backends.kafka.client import NOT_CONTROLLER

        error: BackendUnavailable | None = None
        for attempt in FAILOVER_POLL.within(self.wire.request_timeout).tries(time.monotonic, time.sleep):
            try:
                outcomes = self.wire.alter(entries, validate_only)
                if not outcomes or not all(o.error_code == NOT_CONTROLLER for o in outcomes):
                    return outcomes
                error = BackendUnavailable(f"Kafka {self.wire.what}: no active controller (NOT_CONTROLLER)")
            except BackendUnavailable as e:
                error = e
            log.info("AlterClientQuotas met no active controller (%s); asking which one is active", error)
            self.wire.reroute()
            if attempt.last:
                break
        assert error is not None
        raise error

    def _settle(
        self, batch: Sequence[tuple[EntityChange, QuotaConfig, QuotaConfig, Any]]
    ) -> tuple[list[EntityResult], list[Entity], str]:
        """A request whose answer was lost (its broker or the active controller died): once a controller is
        active and the live replicas hold every record it has (:meth:`_await_quorum`), read its entities back.
        Returns those found at their new values (applied), those still unknown (neither old nor new, or no
        settled quorum within the request timeout) and why they could not be read ("" when they were); those at
        their old values were not applied."""
        pending = {ch.entity: (before, after) for ch, before, after, _ in batch}
        landed: list[EntityResult] = []
        at_before: list[Entity] = []
        try:
            self._await_quorum()
            for attempt in VISIBLE_POLL.within(READ_BACK_SETTLE).tries(time.monotonic, time.sleep):
                current = self._current(list(pending))
                for e, (before, after) in list(pending.items()):
                    if dict(current.get(e, {})) == dict(after):
                        landed.append(EntityResult(e, Outcome.APPLIED, before, after, message="read back"))
                        del pending[e]
                at_before = [e for e, (before, _) in pending.items() if dict(current.get(e, {})) == dict(before)]
                if not at_before or attempt.last:
                    break  # (a broker applies committed records a moment later: read again within the settle)
        except QuotaError as e:
            log.info("the request in flight could not be read back: %s", e)
            return landed, list(pending), str(e)
        return landed, [e for e in pending if e not in at_before], ""

    def _await_quorum(self) -> None:
        """Wait (within the request timeout) until the metadata quorum has a leader whose high watermark covers
        every record it had when first asked, and every live replica has them: a write the old leader committed
        is then in every broker's log, one it did not is gone for good. ZooKeeper-mode brokers have no quorum."""
        target: int | None = None
        last = "no answer"
        for attempt in FAILOVER_POLL.within(self.wire.request_timeout).tries(time.monotonic, time.sleep):
            try:
                q = self.wire.quorum()
            except QuotaError as e:
                q, last = None, str(e)
            else:
                if q is None:
                    return
                if q.leader in q.replicas:
                    leader_end, now = q.replicas[q.leader]
                    target = leader_end if target is None else target
                    live = [end for end, seen in q.replicas.values() if now - seen <= REPLICA_ALIVE_MS]
                    if q.high_watermark >= target and min(live) >= target:
                        return
                    last = f"leader {q.leader}, high watermark {q.high_watermark} of {target}"
                else:
                    last = "no leader elected"
            if attempt.last:
                break
        raise BackendUnavailable(
            f"no KRaft controller quorum settled within {self.wire.request_timeout:g}s to read the request back "
            f"({last})"
        )

    @staticmethod
    def _answered(
        batch: Sequence[tuple[EntityChange, QuotaConfig, QuotaConfig, Any]],
        outcomes: Sequence[Any],
        validate_only: bool,
    ) -> list[EntityResult]:
        """One request's entities as the broker answered them (each entry on its own: applied or rejected)."""
        by_key = {wire_key(o.entity): o for o in outcomes}
        out = []
        for ch, before, after, _ in batch:
            o = by_key.get(wire_key(entity_to_wire(ch.entity)))
            if o is None:
                r = EntityResult(
                    ch.entity, Outcome.NOT_ATTEMPTED, before, before, message="the broker did not answer for it"
                )
            elif o.error_code:
                r = EntityResult(ch.entity, Outcome.REJECTED, before, before, message=f"{o.error_name}: {o.message}")
            else:
                r = EntityResult(ch.entity, Outcome.VALIDATED if validate_only else Outcome.APPLIED, before, after)
            out.append(r)
        return out

    def _await_visible(self, applied: dict[Entity, Mapping[str, Number]]) -> None:
        """Read-your-writes: a KRaft broker applies committed metadata asynchronously, so wait (bounded) until
        it describes what was applied; a command that follows then sees it. ZooKeeper-mode brokers read ZooKeeper
        directly (visible at once); controllers cannot describe (skipped)."""
        if not applied or self.controller:
            return
        pending = dict(applied)
        for attempt in VISIBLE_POLL.tries(time.monotonic, time.sleep):
            current = self._current(list(pending))
            pending = {e: a for e, a in pending.items() if dict(current.get(e, {})) != dict(a)}
            if not pending or attempt.last:
                break
        if pending:
            self.warnings.append(
                f"{counted(len(pending), 'applied change')} not yet visible through {self.wire.bootstrap} after "
                f"{VISIBLE_WAIT:g}s (the broker applies committed metadata asynchronously); describe may lag"
            )


def fenced_words(fencing: Fencing) -> str:
    """The broker asked, named as fenced (``verify`` words a fenced broker the same way)."""
    return (f"broker {fencing.asked} ({fencing.address}), the broker asked, is fenced: cut off from the "
            "controllers or restarting")  # fmt: skip


def _record_order(r: QuotaRecord) -> tuple[int | str, ...]:
    """:meth:`Entity.sort_key` flattened: the same order, compared without a tuple per component."""
    (rank, (u0, u1), (c0, c1), (i0, i1)) = r.entity.sort_key()
    return (rank, u0, u1, c0, c1, i0, i1)


def _looks_like_address(a: str) -> bool:
    host, sep, port = a.strip().rpartition(":")
    return bool(sep and host and port.isdigit())


def open_admin_backend(opts: ConnectionOptions) -> AdminBackend:
    """Called lazily by :func:`kquotactl.backends.factory.open_backend` for ``--bootstrap-server/-controller``."""
    from kquotactl.connection.clientprops import ClientSettings, load_client_settings

    settings, warnings = (
        load_client_settings(opts.command_config, opts.said("command_config", opts.command_config))
        if opts.command_config
        else (ClientSettings(), [])
    )
    timeout = opts.timeout
    if settings.request_timeout is not None and opts.timeout == 30.0:  # --timeout left at its default
        timeout = settings.request_timeout
    controller = not opts.bootstrap_server and bool(opts.bootstrap_controller)
    bootstrap = opts.bootstrap_server or opts.bootstrap_controller or ""
    try:
        return AdminBackend.connect(
            bootstrap,
            settings,
            connect_timeout=opts.connect_timeout,
            timeout=timeout,
            controller=controller,
            warnings=warnings,
        )
    except BackendUnavailable as e:  # name where the address came from when it was not typed as a flag
        source = opts.sources.get("bootstrap_server" if not controller else "bootstrap_controller")
        if source:
            e.message += f" (the address from {source})"
        raise
