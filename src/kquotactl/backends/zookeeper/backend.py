"""The ZooKeeper backend: quota znodes exactly as Kafka brokers read them, composed from
:mod:`~kquotactl.backends.zookeeper.codec` (znode JSON, paths, ACLs; pure),
:mod:`~kquotactl.backends.zookeeper.session` (connect, auth, bounded waits, riding out connection losses,
pipelined reads, NoAuth diagnosis) and :mod:`~kquotactl.backends.zookeeper.transactions` (compare-and-set
planning, multi-op batching, settling a lost commit, the partial-failure report).

Guarantees of :meth:`ZooKeeperBackend.alter`: every entity write and its notification commit together, guarded
by compare-and-set; conflicts are re-read and re-applied, so concurrent writers never lose an update; connection
loss and session expiry are ridden out; a commit whose answer was lost is settled by reading it back before
anything is retried: nothing is written twice and nothing is reported applied that was not. When the connection
does not come back in time, the error says exactly which entities were applied, which were not, and which
transaction's outcome is unknown.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kquotactl.backends.base import ProgressCallback, QuotaBackend, WatchCallback, check_writes
from kquotactl.backends.zookeeper.codec import Node, entity_znode, typed_config, unstorable_reason
from kquotactl.backends.zookeeper.session import ConnectionTrouble, ZkSession, ZkSettings
from kquotactl.core.changes import (
    EntityChange,
    EntityResult,
    Outcome,
    QuotaRecord,
    release_refusal,
    release_text,
)
from kquotactl.core.entities import DEFAULT, DEFAULT_MARKER, Entity, EntityType
from kquotactl.core.errors import BackendUnavailable, InvalidValue, UsageError
from kquotactl.core.filters import EntityFilter
from kquotactl.core.kafkaversions import LAST_UNFEATURED, registration_release
from kquotactl.core.keys import Number
from kquotactl.core.migration import MigrationState, ZooKeeperWriteLost, decode_migration
from kquotactl.core.partial import interrupted, partial_failure
from kquotactl.core.values import route_ip_changes, stored_findings
from kquotactl.core.wording import counted

if TYPE_CHECKING:  # the write path loads inside alter: a describe never needs it
    from kquotactl.backends.zookeeper.transactions import EntityPlan, Writer

log = logging.getLogger("kquotactl.zookeeper")

#: the znodes a migration to KRaft writes (read together, in one pipelined round)
MIGRATION_ZNODES = ("/controller", "/migration", "/controller_epoch")

_SECURE_ACL_NEEDS_AUTH = "--zk-acl secure needs an authenticated ZooKeeper session (--zk-auth or SASL)"


class ZooKeeperBackend(QuotaBackend):
    """Quotas in a ZooKeeper-mode Kafka cluster's ZooKeeper (``--zookeeper host:port[/chroot]``)."""

    name = "zookeeper"
    described_from = "the ZooKeeper znode brokers read"  # written with its change notification, in one transaction
    kafka_configs_mode = "zookeeper"

    def __init__(self, settings: ZkSettings) -> None:
        self.settings = settings
        self.warnings: list[str] = []
        self._brokers_checked = False
        #: the oldest release a broker's registration shows and that registration's path; () when none is old
        self._oldest_broker: tuple[tuple[int, int], str] | tuple[()] | None = None
        self._assume_absent: frozenset[Entity] = frozenset()  # not read in the current alter's first round
        self._session = ZkSession(settings)
        self._writer: Writer | None = None  # made by the first alter (the write path's module loads with it)

    @property
    def _client(self) -> Any:
        """The kazoo client (None once closed)."""
        return self._session.client

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> ZooKeeperBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads -----------------------------------------------------------------------------------

    def broker_settings(self, names: Sequence[str]) -> tuple[dict[str, str | None], str]:
        """Broker configs ``names`` from ``/config/brokers/<default>``: the cluster-wide *dynamic* configs only;
        what a broker's server.properties sets is not in ZooKeeper (read it with --bootstrap-server)."""
        node = self._session.get_many(["/config/brokers/<default>"]).get("/config/brokers/<default>")
        props = node.props if node is not None else {}
        where = "the cluster-wide dynamic broker configs in ZooKeeper (server.properties is not visible there)"
        return {n: props[n] for n in names if n in props}, where

    def _scan(self, flt: EntityFilter) -> dict[str, Node | None]:
        """Read the entity znodes a filter may match, visiting only the subtrees it can reach.

        User nodes are read first; only users whose node has children get their ``clients`` listed.
        """
        session = self._session
        comp_types = {c.entity_type for c in flt.components}

        def shape_possible(shape: set[EntityType]) -> bool:
            if not comp_types <= shape:
                return False
            return not flt.strict or shape == comp_types

        u, c, ip = EntityType.USER, EntityType.CLIENT_ID, EntityType.IP
        want_users, want_pairs = shape_possible({u}), shape_possible({u, c})
        want_clients, want_ips = shape_possible({c}), shape_possible({ip})
        roots = (
            ("/config/users", want_users or want_pairs),
            ("/config/clients", want_clients),
            ("/config/ips", want_ips),
        )
        lists = session.children_many([p for p, wanted in roots if wanted])
        users = lists.get("/config/users", [])
        ucomp = flt.component(u)
        if ucomp is not None and ucomp.match_type != 2:  # EXACT or DEFAULT: one user subtree only
            only = Entity(user=DEFAULT if ucomp.match_type == 1 else ucomp.name).path.split("/")[1]
            users = [x for x in users if x == only]
        nodes: dict[str, Node | None] = {}
        user_nodes = session.get_many([f"/config/users/{x}" for x in users])
        if want_users:
            nodes.update(user_nodes)
        if want_pairs:
            with_pairs = [x for x in users if (n := user_nodes.get(f"/config/users/{x}")) and n.num_children]
            client_lists = session.children_many([f"/config/users/{x}/clients" for x in with_pairs])
            nodes.update(
                session.get_many(
                    [
                        f"/config/users/{x}/clients/{y}"
                        for x in with_pairs
                        for y in client_lists[f"/config/users/{x}/clients"]
                    ]
                )
            )
        if want_clients:
            nodes.update(session.get_many([f"/config/clients/{x}" for x in lists.get("/config/clients", [])]))
        if want_ips:
            nodes.update(session.get_many([f"/config/ips/{x}" for x in lists.get("/config/ips", [])]))
        return nodes

    def migration(self) -> MigrationState:
        """Where the cluster stands in a ZooKeeper -> KRaft migration: ``/controller``, ``/migration`` and
        ``/controller_epoch`` in one pipelined read (:func:`kquotactl.core.migration.decode_migration`)."""
        got = self._session.get_raw_many(MIGRATION_ZNODES)
        return decode_migration(got["/controller"], got["/migration"], got["/controller_epoch"])

    def _check_migration(self, writing: bool) -> None:
        """Once a KRaft controller quorum in migration mode exists, a quota written to ZooKeeper never reaches the
        KRaft metadata log: writes are refused, reads say once that ZooKeeper may be stale."""
        state = self.migration()
        if not state.writes_lost:
            return
        if writing:
            raise ZooKeeperWriteLost(self.settings.connect, state)
        self.warnings.append(
            f"ZooKeeper {self.settings.connect}: {state.summary()}; what ZooKeeper holds may be stale "
            "(the KRaft metadata log decides): read through --bootstrap-server"
        )

    def _check_brokers(self, writing: bool) -> None:
        """A chroot without ``/brokers`` is one no Kafka broker uses: most likely the chroot was forgotten or
        mistyped in ``--zookeeper``. Writes there are refused (unless ``--allow-no-brokers``: quotas prepared
        before the brokers first start); reads say so once. A cluster migrating to KRaft: see
        :meth:`_check_migration`."""
        if self._brokers_checked and not writing:
            return
        self._brokers_checked = True
        self._check_migration(writing)
        session = self._session
        brokers = session.ride_out(
            lambda: session.wait(session.submit(session.client.exists_async, "/brokers"), "exists /brokers")
        )
        if brokers is not None:
            return
        where = f"ZooKeeper {self.settings.connect} has no /brokers node: no Kafka broker uses this chroot"
        if writing and not self.settings.allow_no_brokers:
            raise UsageError(
                f"{where} (forgotten chroot in {self.settings.option}?); nothing written. To prepare quotas before "
                "the brokers start, pass --allow-no-brokers"
            )
        if not self.settings.allow_no_brokers and not writing:
            self.warnings.append(f"{where} (forgotten chroot in {self.settings.option}?)")

    def _warn_unenforced(self, changes: Sequence[EntityChange]) -> None:
        """A warning per reason when a broker registers as Kafka 2.6 or older does (no ``features``): such a broker
        stores a key or an ip quota newer than it and never enforces it (an ip's change notification is logged as an
        error and skipped). Not refused: a newer broker still at ``inter.broker.protocol.version`` 2.6 or older
        registers the same way, and it does enforce them."""
        if not any(ch.set and release_refusal(ch.entity, ch.set, LAST_UNFEATURED) for ch in changes):
            return  # nothing a 2.6 broker would not know: the registrations are not read
        if self._oldest_broker is None:
            ids = self._session.children_many(["/brokers/ids"]).get("/brokers/ids", [])
            got = self._session.get_raw_many([f"/brokers/ids/{i}" for i in sorted(ids) if i.isdigit()])
            olds = [(release, path) for path, raw in got.items() if raw and (release := registration_release(raw))]
            self._oldest_broker = min(olds) if olds else ()
        if not self._oldest_broker:
            return
        release, path = self._oldest_broker
        found: dict[str, list[str]] = {}
        for ch in changes:
            if ch.set and (why := release_refusal(ch.entity, ch.set, release)) is not None:
                found.setdefault(why, []).append(ch.entity.label())
        broker, text = path.rsplit("/", 1)[1], release_text(release)
        for why, labels in found.items():
            more = f" and {counted(len(labels) - 1, 'other entity')}" if len(labels) > 1 else ""
            self.warnings.append(
                f"{labels[0]}{more}: {why}, and broker {broker} registers in ZooKeeper as Kafka {text} or older does "
                f"(or as a newer broker at inter.broker.protocol.version {text} or older): a Kafka {text} broker "
                "stores it and never enforces it"
            )

    def check_writable(self) -> None:
        """Refuse, before any plan is shown, a write that :meth:`alter` would refuse (no ``/brokers``, a cluster
        migrating to KRaft)."""
        self._check_brokers(writing=True)

    def describe(self, flt: EntityFilter | None = None, *, broker: int | None = None) -> list[QuotaRecord]:
        flt = (flt or EntityFilter.all()).validate()
        self._session.outages = 0
        self._check_brokers(writing=False)
        exact = flt.exact_entity()
        if exact is not None and exact.ip is not None and exact.ip is not DEFAULT:
            exact = None  # an address may be stored under another spelling: list /config/ips
        if exact is not None and unstorable_reason(exact):
            return []
        nodes = self._session.get_many([entity_znode(exact)]) if exact is not None else self._scan(flt)
        records: list[QuotaRecord] = []
        for path, node in nodes.items():
            if node is None:
                continue
            try:
                entity = Entity.from_path(path[len("/config/") :])
            except InvalidValue as e:
                self.warnings.append(f"{path}: {e} (skipped)")
                continue
            if not flt.matches(entity):
                continue
            unparsed: dict[str, str] = {}
            config = typed_config(entity, node.props, unparsed)
            if not config and not unparsed:
                continue
            raw = {k: node.props[k] for k in config}
            records.append(QuotaRecord(entity, config, raw=raw, version=node.version, unparsed=unparsed))
        records.sort(key=lambda r: r.entity.sort_key())
        self.warnings.extend(str(f) for f in stored_findings(records))
        return records

    def broker_ids(self) -> list[int]:
        """The registered brokers: ``/brokers/ids`` children (ephemeral znodes, one per live broker)."""
        self._session.outages = 0
        children = self._session.children_many(["/brokers/ids"])["/brokers/ids"]
        return sorted(int(c) for c in children if c.isdigit())

    def entity_names(self, etype: EntityType) -> set[str]:
        """The real names of ``etype`` that have an entity node (alone or in a pair), from child listings only.

        Cheaper than :meth:`describe` when only names are wanted (completion): no entity node is read.
        Client-ids live in two places, ``/config/clients`` and every ``/config/users/<u>/clients``.
        """
        self._session.outages = 0
        roots = {EntityType.USER: ["/config/users"], EntityType.IP: ["/config/ips"]}.get(
            etype, ["/config/clients", "/config/users"]
        )
        lists = self._session.children_many(roots)
        children = list(lists[roots[0]])
        if etype is EntityType.CLIENT_ID:
            pair_roots = [f"/config/users/{u}/clients" for u in lists["/config/users"]]
            children += [c for kids in self._session.children_many(pair_roots).values() for c in kids]
        names: set[str] = set()
        for child in children:
            try:
                name = Entity.from_path(f"{etype.plural}/{child}").components().get(etype)
            except InvalidValue:
                continue
            if name is not None and name is not DEFAULT:
                names.add(str(name))
        return names

    def watch_changes(self, callback: WatchCallback) -> Callable[[], None]:
        """A watch on ``/config/changes`` reading only the entities new notifications name
        (:mod:`~kquotactl.backends.zookeeper.watch`), as brokers follow quota changes."""
        from kquotactl.backends.zookeeper.watch import ChangeWatch

        return ChangeWatch(self._session, callback).start()

    # -- writes ----------------------------------------------------------------------------------

    def _plan_round(
        self,
        pending: list[EntityChange],
        expected: Mapping[Entity, Mapping[str, Number]] | None,
        results: dict[Entity, EntityResult],
    ) -> list[EntityPlan]:
        from kquotactl.backends.zookeeper.transactions import plan_round

        return plan_round(self._session, pending, expected, results, self._assume_absent)

    def _commit(self, batch: list[EntityPlan]) -> bool:
        return self.writer().commit(batch)

    def writer(self) -> Writer:
        """The transaction writer of this session (made on first use)."""
        if self._writer is None:
            from kquotactl.backends.zookeeper.transactions import Writer

            self._writer = Writer(self._session)
        return self._writer

    def alter(
        self,
        changes: Sequence[EntityChange],
        *,
        validate_only: bool = False,
        expected: dict[Entity, Mapping[str, Number]] | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[EntityResult]:
        """Apply changes in batched transactions; see the module docstring for the guarantees."""
        from kazoo.exceptions import InvalidACLError

        from kquotactl.backends.zookeeper.transactions import CAS_RETRY, assume_absent, batches

        check_writes(changes)
        if changes:
            self._check_brokers(writing=not validate_only)
            self._warn_unenforced(changes)
        self._session.outages = 0
        try:
            changes = self._stored_spellings(changes)
        except BackendUnavailable as e:
            raise partial_failure(e, changes, {}, atomic=True) from None
        results: dict[Entity, EntityResult] = {}
        pending = list(changes)
        writer = self.writer()
        writer.created = set()
        base_ready = False
        deleted_pairs: list[Entity] = []
        in_flight: list[EntityPlan] = []  # the batch whose commit outcome is not known yet
        try:
            for attempt in CAS_RETRY.tries(time.monotonic, time.sleep):
                if not pending:  # nothing to write at all
                    break
                retry: list[EntityChange] = []
                first = attempt.number == 1 and not validate_only
                self._assume_absent = assume_absent(pending, expected) if first else frozenset()
                plans = self._plan_round(pending, expected, results)
                if validate_only:
                    for plan in plans:
                        results[plan.change.entity] = EntityResult(
                            plan.change.entity, Outcome.VALIDATED, plan.before, plan.after
                        )
                    break
                if plans and not base_ready:  # only once there is something to write
                    try:
                        writer.ensure_base()
                    except InvalidACLError:
                        raise UsageError(_SECURE_ACL_NEEDS_AUTH) from None
                    base_ready = True
                for batch in batches(plans):
                    in_flight, writer.sent = batch, False
                    try:
                        committed: bool | None = self._commit(batch)
                    except InvalidACLError:
                        raise UsageError(_SECURE_ACL_NEEDS_AUTH) from None
                    except ConnectionTrouble as trouble:
                        # The answer was lost: the transaction may or may not have committed. Reconnect, then
                        # read back before deciding, so nothing is written twice or reported wrongly.
                        writer.created.clear()
                        if not writer.sent:
                            in_flight = []
                        self._session.await_connected(trouble)
                        committed = writer.settle(batch)
                        log.debug("settled a transaction of %d entities: committed=%s", len(batch), committed)
                    if committed:
                        landed = [EntityResult(p.change.entity, Outcome.APPLIED, p.before, p.after) for p in batch]
                        for p, r in zip(batch, landed, strict=True):
                            results[p.change.entity] = r
                            if p.deletes_node and p.is_pair:
                                deleted_pairs.append(p.change.entity)
                    else:  # a compare-and-set conflict, or a lost commit that did not land: re-read, re-apply
                        retry.extend(p.change for p in batch)
                    in_flight = []  # only once the outcome is recorded (a Ctrl-C in between: reported unknown)
                    if committed and progress:
                        progress(landed)  # the log line of a committed transaction, before the next one is sent
                pending = retry
                if not pending:
                    break
                log.debug("compare-and-set conflict: retrying %d entities", len(pending))
            else:
                for ch in pending:
                    results[ch.entity] = EntityResult(
                        ch.entity,
                        Outcome.NOT_ATTEMPTED,
                        message=f"gave up after {CAS_RETRY.max_tries} compare-and-set conflicts",
                    )
        except BackendUnavailable as e:
            raise partial_failure(e, changes, results, [p.change.entity for p in in_flight], atomic=True) from None
        except KeyboardInterrupt:  # Ctrl-C: say what is done; the transaction on the wire, if any, is all or none
            raise interrupted(changes, results, [p.change.entity for p in in_flight] if writer.sent else ()) from None
        if deleted_pairs:
            try:
                writer.clean_parents(deleted_pairs)
            except BackendUnavailable as e:  # best effort: empty parents are harmless litter
                log.debug("could not clean empty parents: %s", e)
        ordered = [results[ch.entity] for ch in changes if ch.entity in results]
        if progress:
            settled = [r for r in ordered if r.outcome is not Outcome.APPLIED]  # no write of theirs to wait for
            if settled:
                progress(settled)
        return ordered

    def _stored_spellings(self, changes: Sequence[EntityChange]) -> list[EntityChange]:
        """Send ip changes to the znodes that name the address (:func:`kquotactl.core.values.route_ip_changes`)."""
        if not any(ch.entity.ip is not None and ch.entity.ip is not DEFAULT for ch in changes):
            return list(changes)
        children = self._session.children_many(["/config/ips"]).get("/config/ips", [])
        return route_ip_changes(changes, [c for c in children if c != DEFAULT_MARKER])
