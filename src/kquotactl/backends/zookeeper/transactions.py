"""Writing quota znodes: compare-and-set planning, multi-op batching, settling a lost commit, cleaning empty
parents, and the report of a partial failure.

Every entity write and its notification commit together in one multi-op transaction, guarded by the znode version
read just before (compare-and-set). Transactions carry many entities at once (bounded by op count and bytes, under
ZooKeeper's 1 MiB ``jute.maxbuffer``); on a conflict the caller re-reads the affected entities and re-applies the
requested change, so concurrent writers never lose an update. A commit whose answer was lost is *settled* by reading
its entities back before anything is retried (a multi is all-or-nothing, so one definite entity decides the whole
transaction).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kquotactl.backends.zookeeper.codec import (
    CHANGES_PATH,
    CONFIG_ROOT,
    ENTITY_ROOTS,
    NOTIFICATION_PREFIX,
    Node,
    encode_entity,
    encode_notification,
    node_acl,
    notification_acl,
    typed_config,
    unstorable_reason,
)
from kquotactl.backends.zookeeper.session import ConnectionTrouble, NotAuthorized, ZkSession, is_no_auth, short
from kquotactl.core.changes import EntityChange, EntityResult, Outcome, apply_change, stale_plan_result
from kquotactl.core.entities import Entity
from kquotactl.core.errors import BackendUnavailable, ConflictError, QuotaError
from kquotactl.core.keys import KEYS, Number, format_value
from kquotactl.core.retry import RetryPolicy
from kquotactl.core.wording import counted

log = logging.getLogger("kquotactl.zookeeper")

MAX_TXN_OPS = 1000
MAX_TXN_BYTES = 512 * 1024  # well under jute.maxbuffer (1 MiB): an oversized multi shows up as ConnectionLoss
#: compare-and-set rounds per entity before giving up, backing off between conflicting rounds
CAS_RETRY = RetryPolicy(delay=0.01, backoff=2.0, max_delay=0.2, max_tries=25)

TxnOp = Callable[[Any], Any]  # one op added to a kazoo transaction


@dataclass
class EntityPlan:
    """What one entity's write will be: the node read (None: absent), the props to store, the typed configs
    before and after, and the parents to create with it."""

    change: EntityChange
    path: str
    node: Node | None
    new_props: dict[str, str]
    before: dict[str, Number]
    after: dict[str, Number]
    parents: list[str]
    keep_node: bool = False
    _data: bytes | None = field(
        default=None, repr=False, compare=False
    )  # encode_entity(new_props), computed once (batching sizes it, the commit sends it)

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = encode_entity(self.new_props)
        return self._data

    @property
    def is_user_only(self) -> bool:
        return self.change.entity.user is not None and self.change.entity.client_id is None

    @property
    def is_pair(self) -> bool:
        return self.change.entity.user is not None and self.change.entity.client_id is not None

    @property
    def deletes_node(self) -> bool:
        return not self.new_props and self.node is not None and self.node.num_children == 0 and not self.keep_node

    def ops(self, acl: list[Any] | None) -> list[TxnOp]:
        """Transaction ops for this entity: the CAS write, then its v2 notification."""
        data = self.data
        path, node = self.path, self.node
        notification = encode_notification(self.change.entity.path)
        ops: list[TxnOp] = []
        if node is None:
            ops.append(lambda tx: tx.create(path, data, acl=acl))
        elif self.deletes_node:
            ops.append(lambda tx: tx.delete(path, version=node.version))
        else:
            ops.append(lambda tx: tx.set_data(path, data, version=node.version))
        ops.append(lambda tx: tx.create(NOTIFICATION_PREFIX, notification, acl=notification_acl(acl), sequence=True))
        return ops

    def written(self, node: Node | None) -> bool | None:
        """Is this plan's write what ``node`` (read after a lost commit answer) shows? None: cannot tell."""
        if self.deletes_node:
            if node is None:
                return True
            return False if self.node is not None and node.version == self.node.version else None
        if node is None:
            return False if self.node is None else None
        expected_version = 0 if self.node is None else self.node.version + 1
        if node.version == expected_version and node.props == self.new_props:
            return True
        if self.node is not None and node.version == self.node.version:
            return False
        return None

    def size(self) -> int:
        return len(self.data) + len(self.path) * 2 + 96 + sum(len(p) + 16 for p in self.parents)

    def op_count(self) -> int:
        return 2 + len(self.parents)


def plan_round(
    session: ZkSession,
    pending: Sequence[EntityChange],
    expected: Mapping[Entity, Mapping[str, Number]] | None,
    results: dict[Entity, EntityResult],
    assume_absent: frozenset[Entity] = frozenset(),
) -> list[EntityPlan]:
    """Read the current state of every pending entity and decide its ops (:func:`plan_entities`). Entities that
    need no write get their result in ``results``.

    Entities in ``assume_absent`` are not read but planned as creates, and so are the parents of pairs whose user
    is in it (created with that user). Sound because a create is its own compare-and-set: a node there after all
    fails the transaction as a conflict, and the next round reads and re-plans it (see :func:`assume_absent`)."""
    storable: list[EntityChange] = []
    for ch in pending:
        problem = unstorable_reason(ch.entity)
        if problem:
            results[ch.entity] = EntityResult(ch.entity, Outcome.REJECTED, message=problem)
        else:
            storable.append(ch)
    paths: list[str] = []
    for ch in storable:
        e = ch.entity
        ep = "/config/" + e.path
        if e not in assume_absent:
            paths.append(ep)
        if e.user is not None and e.client_id is not None and Entity(user=e.user) not in assume_absent:
            user_path = ep.rsplit("/clients/", 1)[0]
            paths += [user_path, user_path + "/clients"]
    nodes = session.get_many(list(dict.fromkeys(paths)))
    return plan_entities(storable, nodes, expected, results)


def assume_absent(
    changes: Sequence[EntityChange], expected: Mapping[Entity, Mapping[str, Number]] | None
) -> frozenset[Entity]:
    """The entities a first round need not read: planned as new (no quota there when the plan was made) and only
    setting keys. A node found there after all (another writer, or non-quota keys such as SCRAM credentials) fails
    its create and with it the transaction, which the next round re-reads and re-plans like any conflict."""
    if expected is None:
        return frozenset()
    return frozenset(ch.entity for ch in changes if not ch.remove and ch.entity in expected and not expected[ch.entity])


def plan_entities(
    pending: Sequence[EntityChange],
    nodes: Mapping[str, Node | None],
    expected: Mapping[Entity, Mapping[str, Number]] | None,
    results: dict[Entity, EntityResult],
) -> list[EntityPlan]:
    """The writes of ``pending`` given the znodes read (``nodes``, by path). Pure."""
    plans: list[EntityPlan] = []
    for ch in pending:
        ep = "/config/" + ch.entity.path
        node = nodes.get(ep)
        props = dict(node.props) if node else {}
        unparsed: dict[str, str] = {}
        before = typed_config(ch.entity, props, unparsed)
        if (stale := stale_plan_result(ch.entity, expected, before)) is not None:
            results[ch.entity] = stale
            continue
        try:
            # a stored value brokers cannot parse is still a key that can be removed (or overwritten)
            drops_unparsed = bool(ch.remove & unparsed.keys())
            after = apply_change(before, replace(ch, if_exists=True) if drops_unparsed else ch)
            missing = sorted(ch.remove - before.keys() - unparsed.keys())
            if missing and not ch.if_exists:
                apply_change(before, replace(ch, remove=frozenset(missing)))  # raises naming them
        except QuotaError as e:
            results[ch.entity] = EntityResult(ch.entity, Outcome.REJECTED, before, before, message=str(e), error=e)
            continue
        if after == before and not drops_unparsed and not (ch.set.keys() & unparsed.keys()):
            results[ch.entity] = EntityResult(ch.entity, Outcome.UNCHANGED, before, after)
            continue
        new_props = {k: v for k, v in props.items() if k not in ch.remove}
        for k, v in ch.set.items():
            if k not in before or before[k] != v:
                new_props[k] = format_value(KEYS[k], v)
        parents: list[str] = []
        if node is None and ch.entity.user is not None and ch.entity.client_id is not None:
            user_path = ep.rsplit("/clients/", 1)[0]
            if nodes.get(user_path) is None:
                parents.append(user_path)
            if nodes.get(user_path + "/clients") is None:
                parents.append(user_path + "/clients")
        plans.append(EntityPlan(ch, ep, node, new_props, before, after, parents))
    # Never delete a user node in the same round that writes a pair under it.
    pair_users = {p.path.rsplit("/clients/", 1)[0] for p in plans if p.is_pair and p.new_props}
    for p in plans:
        if p.is_user_only and p.path in pair_users:
            p.keep_node = True
    return plans


def batches(plans: list[EntityPlan]) -> Iterable[list[EntityPlan]]:
    """Group entity plans into transactions bounded by op count and bytes."""
    batch: list[EntityPlan] = []
    ops = size = 0
    for p in plans:
        p_ops, p_size = p.op_count(), p.size()
        if batch and (ops + p_ops > MAX_TXN_OPS or size + p_size > MAX_TXN_BYTES):
            yield batch
            batch, ops, size = [], 0, 0
        batch.append(p)
        ops += p_ops
        size += p_size
    if batch:
        yield batch


class Writer:
    """Commits planned batches through one session. ``created``: parents created earlier in the current alter
    call (not created again); ``sent``: whether the current batch's commit went out (else its outcome is known:
    not applied)."""

    def __init__(self, session: ZkSession) -> None:
        self.session = session
        self.created: set[str] = set()
        self.sent = False

    def acl(self, path: str) -> list[Any] | None:
        return node_acl(path, self.session.settings.secure_acl)

    def ensure_base(self) -> None:
        """Create /config, /config/changes and the entity roots where missing. ``exists``, not ``get``, and
        NoAuth counts as present: /config/users is unreadable to others under secure ACLs."""
        base = [CONFIG_ROOT, CHANGES_PATH, *ENTITY_ROOTS]
        existing = self.session.exists_many(base)
        for path in base:
            if existing.get(path) is None:
                self.session.ride_out(self._create_base, path)

    def _create_base(self, path: str) -> None:
        """Create one base node; one that exists already (ours after a lost answer, or another's) is fine."""
        from kazoo.exceptions import NodeExistsError, NoNodeError

        log.debug("create %s", path)
        try:
            created = self.session.submit(self.session.client.create_async, path, b"", acl=self.acl(path))
            self.session.wait(created, f"create {path}")
        except NodeExistsError:
            pass
        except NotAuthorized:
            raise NotAuthorized(self.session.no_auth_message([path.rsplit("/", 1)[0] or "/"])) from None
        except NoNodeError:  # pragma: no cover - parents are created in order
            raise BackendUnavailable(f"cannot create {path}: parent missing") from None

    def commit(self, batch: list[EntityPlan]) -> bool:
        """Commit one multi-op transaction. True if committed; False on a compare-and-set conflict.

        Within the transaction, user entities that are created come first so that pairs under them
        need no separate parent create; a multi is atomic, so op order inside it is invisible to brokers.
        """
        client = self.session.client
        tx = client.transaction()
        created: set[str] = set()
        first = [p for p in batch if p.node is None and p.is_user_only]
        for p in first + [p for p in batch if not (p.node is None and p.is_user_only)]:
            for parent in p.parents:
                if parent not in created and parent not in self.created:
                    tx.create(parent, b"", acl=self.acl(parent))
                    created.add(parent)
            for op in p.ops(self.acl(p.path)):
                op(tx)
            if p.node is None:
                created.add(p.path)
        log.debug("commit transaction: %d entities", len(batch))
        if not client.connected:  # not sent at all: a definite "not applied", not an unknown
            raise ConnectionTrouble(
                f"lost the ZooKeeper connection (before the commit of {counted(len(batch), 'entity')})"
            )
        self.sent = True
        results = self.session.wait(self.session.submit(tx.commit_async), f"commit of {counted(len(batch), 'entity')}")
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            self.created |= created
            for p in batch:  # --verbose: the znodes written (and the notification brokers watch)
                log.info("%s %s + /config/changes notification", "deleted" if p.deletes_node else "wrote", p.path)
            return True
        self.created.clear()  # the conflict may be a parent someone else removed: re-read everything
        from kazoo.exceptions import (
            BadVersionError,
            InvalidACLError,
            NodeExistsError,
            NoNodeError,
            NotEmptyError,
            RolledBackError,
            RuntimeInconsistency,
        )

        real = [f for f in failures if not isinstance(f, RolledBackError | RuntimeInconsistency)]
        for f in real:
            if isinstance(f, InvalidACLError):
                raise f
            if not isinstance(f, BadVersionError | NodeExistsError | NoNodeError | NotEmptyError):
                if is_no_auth(f):
                    raise BackendUnavailable(self.session.no_auth_message(acl_witnesses(batch)))
                raise ConflictError(f"ZooKeeper rejected the transaction: {short(f)}")
        return False

    def settle(self, batch: list[EntityPlan]) -> bool:
        """After a commit whose answer was lost: did the transaction land? Decided by reading it back.

        A multi is all-or-nothing, so one entity whose state is definite decides for the whole batch. An
        entity is definitely written when it holds exactly our data at the version our write produced, and
        definitely not written when it is still at the version we read. When every entity was changed again
        since (another writer), the batch counts as not committed and is re-planned: the re-plan applies the
        change to what is there now, so nothing is lost.
        """
        nodes = self.session.get_many([p.path for p in batch])
        for p in batch:
            verdict = p.written(nodes.get(p.path))
            if verdict is not None:
                return verdict
        return False

    def clean_parents(self, pairs: Iterable[Entity]) -> None:
        """Kafka 3.5+ (KAFKA-14285): drop ``users/<u>/clients`` and ``users/<u>`` once left empty."""
        from kazoo.exceptions import BadVersionError, NoNodeError, NotEmptyError

        user_paths = sorted({"/config/" + e.path.rsplit("/clients/", 1)[0] for e in pairs})
        nodes = self.session.get_many([p for u in user_paths for p in (u, u + "/clients")])
        for u in user_paths:
            clients, user = nodes.get(u + "/clients"), nodes.get(u)
            if clients is None or clients.num_children:
                continue
            tx = self.session.client.transaction()
            tx.delete(u + "/clients", version=clients.version)
            if user is not None and user.num_children == 1 and not user.props:
                tx.delete(u, version=user.version)
            log.debug("clean empty parents of %s", u)
            try:
                res = self.session.wait(self.session.submit(tx.commit_async), f"clean {u}")
            except BackendUnavailable:
                return
            if any(isinstance(r, BadVersionError | NoNodeError | NotEmptyError) for r in res):
                continue


def acl_witnesses(batch: Sequence[EntityPlan]) -> list[str]:
    """Nodes whose ACL decides whether a batch may be written: an existing entity node, or the parent a new
    one is created under, and the notifications' parent."""
    out: list[str] = []
    for p in batch[:3]:
        if p.node is not None:
            out.append(p.path)
        else:
            parent = p.path.rsplit("/", 1)[0]
            out.append(p.parents[0].rsplit("/", 1)[0] if p.parents else parent)
    return [*dict.fromkeys(out), CHANGES_PATH]
