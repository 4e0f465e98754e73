"""The ZooKeeper backend: quota znodes exactly as Kafka brokers read them.

Layout (Kafka's ``ConfigEntityZNode`` / ``ConfigEntityChangeNotificationZNode``):

- ``/config/<users|clients|ips>/<name>[/clients/<name>]`` holding ``{"version":1,"config":{k: "v"}}``
  (every value a JSON string, keys in ``java.util.Properties`` order);
- after each changed entity, one persistent sequential ``/config/changes/config_change_NNNNNNNNNN`` holding
  ``{"version":2,"entity_path":"users/<u>/clients/<c>"}``.

Every entity write and its notification commit together in one multi-op transaction, guarded by the
znode version read just before (compare-and-set). Transactions carry many entities at once (bounded by op
count and bytes, under ZooKeeper's 1 MiB ``jute.maxbuffer``); on a conflict the affected entities are
re-read and the requested change is re-applied, so concurrent writers never lose an update. Every wait
is bounded: kazoo's synchronous calls block forever on a lost connection, so this module only uses the
``*_async`` calls with a timeout.

Connection loss and session expiry are ridden out: kazoo reconnects by itself (a new session if the old one
expired), and the backend waits for that up to the op timeout, then re-reads and carries on. A commit
whose answer was lost is *settled* by reading its entities back before anything is retried (a multi is
all-or-nothing, so one definite entity decides the whole transaction): nothing is written twice and
nothing is reported applied that was not. When the connection does not come back in time, the error says
exactly which entities were applied, which were not, and which transaction's outcome is unknown.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kquotactl.backends.base import ProgressCallback
from kquotactl.config.extras import missing_extra
from kquotactl.core.entities import DEFAULT, DEFAULT_MARKER, Entity, EntityType
from kquotactl.core.errors import BackendUnavailable, ConflictError, InvalidValue, QuotaError, UsageError
from kquotactl.core.filters import EntityFilter
from kquotactl.core.javafmt import properties_order
from kquotactl.core.keys import KEY_ORDER, KEYS, Number, UnparsableValue, format_value, parse_stored
from kquotactl.core.model import (
    EntityChange,
    EntityResult,
    Outcome,
    QuotaRecord,
    apply_change,
    check_live_changes,
    check_one_change_per_entity,
)
from kquotactl.core.partial import interrupted, partial_failure
from kquotactl.core.values import route_ip_changes, stored_findings
from kquotactl.core.wording import counted

log = logging.getLogger("kquotactl.zookeeper")

CONFIG_ROOT = "/config"
CHANGES_PATH = "/config/changes"
NOTIFICATION_PREFIX = "/config/changes/config_change_"
ENTITY_ROOTS = ("/config/users", "/config/clients", "/config/ips")

MAX_TXN_OPS = 1000
MAX_TXN_BYTES = 512 * 1024  # well under jute.maxbuffer (1 MiB): an oversized multi shows up as ConnectionLoss
READ_CHUNK = 5000  # reads retried together after a connection loss
# Outstanding async requests. kazoo wakes its connection thread with one byte per request on a socketpair that
# holds about 278 of them; requests issued while it is reconnecting are not drained, and the 279th blocks the
# caller forever. A sliding window under that (and no new request while disconnected) keeps every wait bounded;
# 250 reads faster than 128, somewhat slower than 1,000 (bench/zk_outage.py): bounded waits come first.
READ_WINDOW = 250
MAX_ATTEMPTS = 25  # compare-and-set rounds per entity before giving up
MAX_OUTAGES = 10  # connection losses ridden out in one call before giving up


class ConnectionTrouble(BackendUnavailable):
    """The connection was lost or the session expired: kazoo reconnects, so the caller may wait and retry."""


class NotAuthorized(BackendUnavailable):
    """ZooKeeper answered NoAuth; callers that know the path explain it (see ``_no_auth_message``)."""


class NoAnswer(BackendUnavailable):
    """A request got no answer within the op timeout (a hung or overloaded server): not retried."""


@dataclass
class TlsSettings:
    ca: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    keyfile_password: str | None = None
    verify_certs: bool = True
    check_hostname: bool = True


@dataclass
class ZkSettings:
    """How to reach and authenticate to ZooKeeper. Secrets stay in here and never reach output."""

    connect: str
    connect_timeout: float = 10.0
    op_timeout: float = 15.0
    session_timeout: float = 10.0
    digest_auth: list[str] = field(default_factory=list)  # "user:password"
    sasl: dict[str, str] | None = None  # {"mechanism": "DIGEST-MD5", "username": ..., "password": ...}
    tls: TlsSettings | None = None
    secure_acl: bool = False
    allow_no_brokers: bool = False  # write even where no broker has registered (see _check_brokers)

    def __repr__(self) -> str:  # never print credentials
        return f"ZkSettings(connect={self.connect!r}, tls={self.tls is not None}, secure_acl={self.secure_acl})"


@dataclass
class _Node:
    """An entity znode as read: all stored keys (quota or not), its version and child count."""

    path: str
    props: dict[str, str]
    version: int
    num_children: int


def encode_entity(props: dict[str, str]) -> bytes:
    """``{"version":1,"config":{...}}``, compact, keys in JDK 9+ ``Properties`` iteration order."""
    ordered = {k: props[k] for k in properties_order(props)}
    return json.dumps({"version": 1, "config": ordered}, separators=(",", ":"), ensure_ascii=False).encode()


def encode_notification(entity_path: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": entity_path}, separators=(",", ":")).encode()


def decode_entity(path: str, data: bytes | None) -> dict[str, str]:
    """Kafka's ``ConfigEntityZNode.decode``: missing/empty data is an empty config."""
    if not data:
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise QuotaError(f"znode {path} does not hold Kafka config JSON; refusing to touch it") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise QuotaError(f"znode {path} does not hold Kafka config JSON; refusing to touch it")
    config = doc.get("config") or {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def typed_config(entity: Entity, props: dict[str, str], unparsed: dict[str, str] | None = None) -> dict[str, Number]:
    """The quota keys of a stored config, typed as brokers parse them (:func:`kquotactl.core.keys.parse_stored`).

    Values that are no limit go to ``unparsed`` (key -> stored text): a broker cannot parse them, or parses them as
    NaN or an infinity (:func:`kquotactl.core.keys.not_applied_reason`); other keys (SCRAM credentials) are left
    out."""
    out: dict[str, Number] = {}
    kind = entity.kind
    for k, v in sorted(props.items(), key=lambda kv: KEY_ORDER.get(kv[0], 99)):
        key = KEYS.get(k)
        if key is None or key.kind is not kind:
            continue
        try:
            value = parse_stored(key, v)
        except UnparsableValue:
            value = None
        if value is None or not math.isfinite(value):  # NaN and Infinity (DOUBLE keys) are no limit either
            if unparsed is not None:
                unparsed[k] = v
            continue
        out[k] = value
    return out


def unstorable_reason(entity: Entity) -> str | None:
    """Names ZooKeeper cannot hold: Kafka's Sanitizer keeps dots, and ZooKeeper forbids "." and ".." segments."""
    for segment in entity.path.split("/"):
        if segment in (".", ".."):
            return (
                f"{entity.label()}: the name {segment!r} cannot be stored in ZooKeeper (Kafka keeps dots unescaped "
                "and ZooKeeper forbids '.' and '..' path segments)"
            )
    return None


class _RedactSecrets(logging.Filter):
    """Blank the credentials in kazoo's request trace (``Auth(... auth='user:password')``, session passwd)."""

    _PATTERN = re.compile(r"(auth=|passwd=|password=)(b?'[^']*'|b?\"[^\"]*\")")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self._PATTERN.search(message):
            record.msg, record.args = self._PATTERN.sub(r"\1'***'", message), ()
        return True


class ZooKeeperBackend:
    """Quotas in a ZooKeeper-mode Kafka cluster's ZooKeeper (``--zookeeper host:port[/chroot]``)."""

    name = "zookeeper"

    def __init__(self, settings: ZkSettings) -> None:
        self.settings = settings
        self.warnings: list[str] = []
        self._created: set[str] = set()  # parents created earlier in the current alter call
        self._outages = 0  # connection losses ridden out so far (bounded by MAX_OUTAGES)
        self._sent = False  # whether the current batch's commit went out (else its outcome is known: not applied)
        self._brokers_checked = False
        self._client = self._connect(settings)

    # -- connection ------------------------------------------------------------------------------

    def _connect(self, s: ZkSettings) -> Any:
        from kazoo.client import KazooClient
        from kazoo.retry import KazooRetry

        quiet = logging.getLogger("kquotactl.kazoo")
        if not any(isinstance(f, _RedactSecrets) for f in quiet.filters):
            quiet.addFilter(_RedactSecrets())  # --debug traces kazoo's requests, Auth(...) included
        if not log.isEnabledFor(logging.DEBUG):
            # kazoo logs connection drops and retries itself; the user gets one line from us instead.
            for name in ("kquotactl.kazoo", "kazoo"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
                logging.getLogger(name).addHandler(logging.NullHandler())
                logging.getLogger(name).propagate = False
            warnings.filterwarnings("ignore", message="No chroot path exists", module="kazoo")
        kwargs: dict[str, Any] = {
            "hosts": s.connect,
            "timeout": s.session_timeout,
            "connection_retry": KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0),
            "logger": quiet,
        }
        if s.digest_auth:
            kwargs["auth_data"] = [("digest", cred) for cred in s.digest_auth]
        if s.sasl:
            try:  # kazoo only says "Missing SASL support" once connected: check first, name the extra
                import puresasl  # noqa: F401
            except ImportError as e:
                raise UsageError(f"ZooKeeper SASL: {missing_extra(e) or e}") from None
            kwargs["sasl_options"] = dict(s.sasl)
        if s.tls:
            kwargs.update(
                use_ssl=True,
                ca=s.tls.ca,
                certfile=s.tls.certfile,
                keyfile=s.tls.keyfile,
                keyfile_password=s.tls.keyfile_password,
                verify_certs=s.tls.verify_certs,
                check_hostname=s.tls.check_hostname,
            )
        try:
            client = KazooClient(**kwargs)
        except (ValueError, TypeError) as e:
            raise UsageError(f"bad ZooKeeper connect string {s.connect!r}: {e}") from None
        except ImportError as e:
            raise UsageError(f"ZooKeeper SASL: {missing_extra(e) or e}") from None
        from kazoo.hosts import collect_hosts

        from kquotactl.config.cluster import unreachable

        why = unreachable(collect_hosts(s.connect)[0], s.connect_timeout)
        if why:
            raise BackendUnavailable(f"cannot connect to ZooKeeper at {s.connect}: {why}")
        log.debug("connecting to ZooKeeper %s (timeout %.1fs)", s.connect, s.connect_timeout)
        # Not client.start(): on a time-out it joins its connection thread for up to 10 s more (a hung server
        # keeps that thread busy), and its chroot check is a synchronous call that can block forever.
        try:
            client.start_async().wait(timeout=s.connect_timeout)
        except Exception as e:
            _stop_bounded(client)
            raise BackendUnavailable(f"cannot connect to ZooKeeper at {s.connect}: {_short(e)}") from None
        if not client.connected:
            _stop_bounded(client, wait=0.1)  # no session to close
            hint = (
                " (TLS: check the certificates and that the port speaks TLS)"
                if s.tls
                else " (timed out: a firewall, a slow network, or a port that is not ZooKeeper's)"
            )
            raise BackendUnavailable(
                f"cannot connect to ZooKeeper at {s.connect}: no session within {s.connect_timeout:g}s{hint}"
            )
        self._client = client
        # SASL failures arrive only after start() returned: probe once, bounded.
        try:
            root = self._wait(client.exists_async("/"), "probe")
        except BackendUnavailable as e:
            self.close()
            if s.sasl:
                raise BackendUnavailable(
                    f"ZooKeeper at {s.connect} closed the session: SASL authentication failed ({e})"
                ) from None
            raise
        if root is None:
            chroot = client.chroot or "/"
            self.close()
            raise BackendUnavailable(
                f"ZooKeeper path {chroot} does not exist: check the chroot in --zookeeper {s.connect}"
            )
        return client

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            self._client = None
            _stop_bounded(client)

    def __enter__(self) -> ZooKeeperBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait(self, async_result: Any, what: str) -> Any:
        """Wait for one async result with the op timeout; map connection problems to one-line errors."""
        from kazoo.exceptions import (
            AuthFailedError,
            ConnectionClosedError,
            ConnectionLoss,
            NoAuthError,
            SessionExpiredError,
        )
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            return async_result.get(timeout=self.settings.op_timeout)
        except KazooTimeoutError:
            raise NoAnswer(
                f"ZooKeeper {self.settings.connect} did not answer ({what}) within {self.settings.op_timeout:g}s"
            ) from None
        except (ConnectionLoss, SessionExpiredError) as e:
            raise ConnectionTrouble(f"lost the ZooKeeper connection ({what}): {_short(e)}") from None
        except ConnectionClosedError as e:
            raise BackendUnavailable(f"lost the ZooKeeper connection ({what}): {_short(e)}") from None
        except NoAuthError:
            raise NotAuthorized(
                f"not authorized by ZooKeeper for {what}: check --zk-auth / SASL credentials and the node ACLs"
            ) from None
        except AuthFailedError:
            raise BackendUnavailable("ZooKeeper authentication failed (check the scheme and credentials)") from None

    def _await_connected(self, trouble: ConnectionTrouble) -> None:
        """Wait, up to the op timeout, for kazoo to reconnect (a new session if the old one expired)."""
        from kazoo.protocol.states import KazooState

        self._outages += 1
        if self._outages > MAX_OUTAGES:
            raise BackendUnavailable(f"{trouble} (gave up after {MAX_OUTAGES} connection losses)")
        log.debug("%s: waiting up to %.1fs for a reconnect", trouble, self.settings.op_timeout)
        deadline = time.monotonic() + self.settings.op_timeout
        while time.monotonic() < deadline:
            client = self._client
            if client is None:
                break
            if client.state == KazooState.CONNECTED and client.connected:
                log.debug("reconnected to ZooKeeper")
                return
            time.sleep(0.02)
        raise BackendUnavailable(f"{trouble}; no reconnect within {self.settings.op_timeout:g}s")

    def _ride_out(self, fn: Any, *args: Any) -> Any:
        """Run an idempotent read, waiting out connection losses (each wait bounded by the op timeout)."""
        while True:
            try:
                return fn(*args)
            except ConnectionTrouble as trouble:
                self._await_connected(trouble)

    # -- reads -----------------------------------------------------------------------------------

    def _get_many(self, paths: Sequence[str]) -> dict[str, _Node | None]:
        """Read many znodes, pipelined (connection losses ridden out)."""
        out: dict[str, _Node | None] = {}
        for start in range(0, len(paths), READ_CHUNK):
            out.update(self._ride_out(self._get_chunk, paths[start : start + READ_CHUNK]))
        return out

    def _get_chunk(self, chunk: Sequence[str]) -> dict[str, _Node | None]:
        out: dict[str, _Node | None] = {}
        for p, res in self._pipelined(chunk, self._client.get_async, "read"):
            out[p] = None if res is None else _Node(p, decode_entity(p, res[0]), res[1].version, res[1].numChildren)
        return out

    def _children_many(self, paths: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for start in range(0, len(paths), READ_CHUNK):
            out.update(self._ride_out(self._children_chunk, paths[start : start + READ_CHUNK]))
        return out

    def _children_chunk(self, chunk: Sequence[str]) -> dict[str, list[str]]:
        return {p: sorted(r or []) for p, r in self._pipelined(chunk, self._client.get_children_async, "list")}

    def _pipelined(self, paths: Sequence[str], call: Any, what: str) -> Iterable[tuple[str, Any]]:
        """``call(path)`` for each path with at most READ_WINDOW outstanding; yields (path, result or None if
        the node does not exist). Nothing is issued while disconnected (see READ_WINDOW)."""
        from collections import deque

        from kazoo.exceptions import NoNodeError

        window: deque[tuple[str, Any]] = deque()
        todo = iter(paths)
        while True:
            while len(window) < READ_WINDOW:
                p = next(todo, None)
                if p is None:
                    break
                if not self._client.connected:
                    raise ConnectionTrouble(f"lost the ZooKeeper connection ({what} {p}): not connected")
                log.debug("%s %s", _VERBS.get(what, what), p)
                window.append((p, call(p)))
            if not window:
                return
            p, ar = window.popleft()
            try:
                yield p, self._wait(ar, f"{what} {p}")
            except NoNodeError:
                yield p, None
            except NotAuthorized:
                if what == "exists":  # ZooKeeper 3.6+ checks READ on exists; NoAuth means the node is there
                    yield p, True
                    continue
                raise NotAuthorized(self._no_auth_message([p], "read")) from None

    def _scan(self, flt: EntityFilter) -> dict[str, _Node | None]:
        """Read the entity znodes a filter may match, visiting only the subtrees it can reach.

        User nodes are read first; only users whose node has children get their ``clients`` listed.
        """
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
        lists = self._children_many([p for p, wanted in roots if wanted])
        users = lists.get("/config/users", [])
        ucomp = flt.component(u)
        if ucomp is not None and ucomp.match_type != 2:  # EXACT or DEFAULT: one user subtree only
            only = Entity(user=DEFAULT if ucomp.match_type == 1 else ucomp.name).path.split("/")[1]
            users = [x for x in users if x == only]
        nodes: dict[str, _Node | None] = {}
        user_nodes = self._get_many([f"/config/users/{x}" for x in users])
        if want_users:
            nodes.update(user_nodes)
        if want_pairs:
            with_pairs = [x for x in users if (n := user_nodes.get(f"/config/users/{x}")) and n.num_children]
            client_lists = self._children_many([f"/config/users/{x}/clients" for x in with_pairs])
            nodes.update(
                self._get_many(
                    [
                        f"/config/users/{x}/clients/{y}"
                        for x in with_pairs
                        for y in client_lists[f"/config/users/{x}/clients"]
                    ]
                )
            )
        if want_clients:
            nodes.update(self._get_many([f"/config/clients/{x}" for x in lists.get("/config/clients", [])]))
        if want_ips:
            nodes.update(self._get_many([f"/config/ips/{x}" for x in lists.get("/config/ips", [])]))
        return nodes

    def _check_brokers(self, writing: bool) -> None:
        """A chroot without ``/brokers`` is one no Kafka broker uses: most likely the chroot was forgotten or
        mistyped in ``--zookeeper``. Writes there are refused (unless ``--allow-no-brokers``: quotas prepared
        before the brokers first start); reads say so once."""
        if self._brokers_checked and not writing:
            return
        self._brokers_checked = True
        if self._ride_out(lambda: self._wait(self._client.exists_async("/brokers"), "exists /brokers")) is not None:
            return
        where = f"ZooKeeper {self.settings.connect} has no /brokers node: no Kafka broker uses this chroot"
        if writing and not self.settings.allow_no_brokers:
            raise UsageError(
                f"{where} (forgotten chroot in --zookeeper?); nothing written. To prepare quotas before the brokers "
                "start, pass --allow-no-brokers"
            )
        if not self.settings.allow_no_brokers and not writing:
            self.warnings.append(f"{where} (forgotten chroot in --zookeeper?)")

    def check_writable(self) -> None:
        """Refuse, before any plan is shown, a write that :meth:`alter` would refuse (no ``/brokers``)."""
        self._check_brokers(writing=True)

    def describe(self, flt: EntityFilter | None = None) -> list[QuotaRecord]:
        flt = (flt or EntityFilter.all()).validate()
        self._outages = 0
        self._check_brokers(writing=False)
        exact = flt.exact_entity()
        if exact is not None and exact.ip is not None and exact.ip is not DEFAULT:
            exact = None  # an address may be stored under another spelling: list /config/ips
        if exact is not None and unstorable_reason(exact):
            return []
        nodes = self._get_many(["/config/" + exact.path]) if exact is not None else self._scan(flt)
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

    def entity_names(self, etype: EntityType) -> set[str]:
        """The real names of ``etype`` that have an entity node (alone or in a pair), from child listings only.

        Cheaper than :meth:`describe` when only names are wanted (completion): no entity node is read.
        Client-ids live in two places, ``/config/clients`` and every ``/config/users/<u>/clients``.
        """
        self._outages = 0
        roots = {EntityType.USER: ["/config/users"], EntityType.IP: ["/config/ips"]}.get(
            etype, ["/config/clients", "/config/users"]
        )
        lists = self._children_many(roots)
        children = list(lists[roots[0]])
        if etype is EntityType.CLIENT_ID:
            pair_roots = [f"/config/users/{u}/clients" for u in lists["/config/users"]]
            children += [c for kids in self._children_many(pair_roots).values() for c in kids]
        names: set[str] = set()
        for child in children:
            try:
                name = Entity.from_path(f"{etype.plural}/{child}").components().get(etype)
            except InvalidValue:
                continue
            if name is not None and name is not DEFAULT:
                names.add(str(name))
        return names

    # -- writes ----------------------------------------------------------------------------------

    def _acl(self, path: str) -> list[Any] | None:
        """Kafka's ``ZkData.defaultAcls`` with ``zookeeper.set.acl=true``: creator-all, plus world-read
        except under the sensitive ``/config/users`` tree (SCRAM credentials live there)."""
        if not self.settings.secure_acl:
            return None
        from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

        sensitive = path == "/config/users" or path.startswith("/config/users/")
        return list(CREATOR_ALL_ACL) + ([] if sensitive else list(READ_ACL_UNSAFE))

    def _ensure_base(self) -> None:
        # exists, not get, and NoAuth counts as present: /config/users is unreadable to others under secure ACLs
        base = [CONFIG_ROOT, CHANGES_PATH, *ENTITY_ROOTS]
        existing = dict(self._ride_out(lambda: list(self._pipelined(base, self._client.exists_async, "exists"))))
        for path in base:
            if existing.get(path) is None:
                self._ride_out(self._create_base, path)

    def _create_base(self, path: str) -> None:
        """Create one base node; one that exists already (ours after a lost answer, or another's) is fine."""
        from kazoo.exceptions import NodeExistsError, NoNodeError

        log.debug("create %s", path)
        try:
            self._wait(self._client.create_async(path, b"", acl=self._acl(path)), f"create {path}")
        except NodeExistsError:
            pass
        except NotAuthorized:
            raise NotAuthorized(self._no_auth_message([path.rsplit("/", 1)[0] or "/"])) from None
        except NoNodeError:  # pragma: no cover - parents are created in order
            raise BackendUnavailable(f"cannot create {path}: parent missing") from None

    def alter(
        self,
        changes: Sequence[EntityChange],
        *,
        validate_only: bool = False,
        expected: dict | None = None,
        progress: ProgressCallback | None = None,
    ) -> list[EntityResult]:
        """Apply changes in batched transactions; see the module docstring for the guarantees."""
        from kazoo.exceptions import InvalidACLError

        check_live_changes(changes)
        check_one_change_per_entity(changes)
        if changes:
            self._check_brokers(writing=not validate_only)
        self._outages = 0
        try:
            changes = self._stored_spellings(changes)
        except BackendUnavailable as e:
            raise partial_failure(e, changes, {}, atomic=True) from None
        results: dict[Entity, EntityResult] = {}
        pending = list(changes)
        self._created = set()
        base_ready = False
        deleted_pairs: list[Entity] = []
        attempts = 0
        in_flight: list[_EntityPlan] = []  # the batch whose commit outcome is not known yet
        try:
            while pending:
                attempts += 1
                if attempts > MAX_ATTEMPTS:
                    for ch in pending:
                        results[ch.entity] = EntityResult(
                            ch.entity,
                            Outcome.NOT_ATTEMPTED,
                            message=f"gave up after {MAX_ATTEMPTS} compare-and-set conflicts",
                        )
                    break
                retry: list[EntityChange] = []
                plans = self._plan_round(pending, expected, results)
                if validate_only:
                    for plan in plans:
                        results[plan.change.entity] = EntityResult(
                            plan.change.entity, Outcome.VALIDATED, plan.before, plan.after
                        )
                    break
                if plans and not base_ready:  # only once there is something to write
                    try:
                        self._ensure_base()
                    except InvalidACLError:
                        raise UsageError(
                            "--zk-acl secure needs an authenticated ZooKeeper session (--zk-auth or SASL)"
                        ) from None
                    base_ready = True
                for batch in _batches(plans):
                    in_flight, self._sent = batch, False
                    try:
                        committed: bool | None = self._commit(batch)
                    except InvalidACLError:
                        raise UsageError(
                            "--zk-acl secure needs an authenticated ZooKeeper session (--zk-auth or SASL)"
                        ) from None
                    except ConnectionTrouble as trouble:
                        # The answer was lost: the transaction may or may not have committed. Reconnect, then
                        # read back before deciding, so nothing is written twice or reported wrongly.
                        self._created.clear()
                        if not self._sent:
                            in_flight = []
                        self._await_connected(trouble)
                        committed = self._settle(batch)
                        log.debug("settled a transaction of %d entities: committed=%s", len(batch), committed)
                    if committed:
                        for p in batch:
                            results[p.change.entity] = EntityResult(p.change.entity, Outcome.APPLIED, p.before, p.after)
                            if p.deletes_node and p.is_pair:
                                deleted_pairs.append(p.change.entity)
                    else:  # a compare-and-set conflict, or a lost commit that did not land: re-read, re-apply
                        retry.extend(p.change for p in batch)
                    in_flight = []  # only once the outcome is recorded (a Ctrl-C in between: reported unknown)
                    if committed and progress:
                        progress(len(batch))
                pending = retry
                if pending:
                    log.debug("compare-and-set conflict: retrying %d entities", len(pending))
                    time.sleep(min(0.01 * attempts, 0.2))
        except BackendUnavailable as e:
            raise partial_failure(e, changes, results, [p.change.entity for p in in_flight], atomic=True) from None
        except KeyboardInterrupt:  # Ctrl-C: say what is done; the transaction on the wire, if any, is all or none
            raise interrupted(changes, results, [p.change.entity for p in in_flight] if self._sent else ()) from None
        if deleted_pairs:
            try:
                self._clean_parents(deleted_pairs)
            except BackendUnavailable as e:  # best effort: empty parents are harmless litter
                log.debug("could not clean empty parents: %s", e)
        ordered = [results[ch.entity] for ch in changes if ch.entity in results]
        if progress:
            done = sum(1 for r in ordered if r.outcome in (Outcome.UNCHANGED, Outcome.REJECTED))
            if done:
                progress(done)
        return ordered

    def _stored_spellings(self, changes: Sequence[EntityChange]) -> list[EntityChange]:
        """Send ip changes to the znodes that name the address (:func:`kquotactl.core.values.route_ip_changes`)."""
        if not any(ch.entity.ip is not None and ch.entity.ip is not DEFAULT for ch in changes):
            return list(changes)
        children = self._children_many(["/config/ips"]).get("/config/ips", [])
        return route_ip_changes(changes, [c for c in children if c != DEFAULT_MARKER])

    def _plan_round(
        self, pending: list[EntityChange], expected: dict | None, results: dict[Entity, EntityResult]
    ) -> list[_EntityPlan]:
        """Read the current state of every pending entity and decide its ops (pure after the reads)."""
        paths: list[str] = []
        storable = []
        for ch in pending:
            problem = unstorable_reason(ch.entity)
            if problem:
                results[ch.entity] = EntityResult(ch.entity, Outcome.REJECTED, message=problem)
            else:
                storable.append(ch)
        pending = storable
        for ch in pending:
            ep = "/config/" + ch.entity.path
            paths.append(ep)
            if ch.entity.user is not None and ch.entity.client_id is not None:
                user_path = ep.rsplit("/clients/", 1)[0]
                paths += [user_path, user_path + "/clients"]
        nodes = self._get_many(list(dict.fromkeys(paths)))
        plans: list[_EntityPlan] = []
        for ch in pending:
            ep = "/config/" + ch.entity.path
            node = nodes.get(ep)
            props = dict(node.props) if node else {}
            unparsed: dict[str, str] = {}
            before = typed_config(ch.entity, props, unparsed)
            if expected is not None and ch.entity in expected and dict(expected[ch.entity]) != before:
                results[ch.entity] = EntityResult(
                    ch.entity,
                    Outcome.REJECTED,
                    before,
                    before,
                    message="changed since the plan was made (stale plan); re-run plan",
                )
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
            plans.append(_EntityPlan(ch, ep, node, new_props, before, after, parents))
        # Never delete a user node in the same round that writes a pair under it.
        pair_users = {p.path.rsplit("/clients/", 1)[0] for p in plans if p.is_pair and p.new_props}
        for p in plans:
            if p.is_user_only and p.path in pair_users:
                p.keep_node = True
        return plans

    def _commit(self, batch: list[_EntityPlan]) -> bool:
        """Commit one multi-op transaction. True if committed; False on a compare-and-set conflict.

        Within the transaction, user entities that are created come first so that pairs under them
        need no separate parent create; a multi is atomic, so op order inside it is invisible to brokers.
        """
        tx = self._client.transaction()
        created: set[str] = set()
        first = [p for p in batch if p.node is None and p.is_user_only]
        for p in first + [p for p in batch if not (p.node is None and p.is_user_only)]:
            for parent in p.parents:
                if parent not in created and parent not in self._created:
                    tx.create(parent, b"", acl=self._acl(parent))
                    created.add(parent)
            for op in p.ops(self._acl(p.path)):
                op(tx)
            if p.node is None:
                created.add(p.path)
        log.debug("commit transaction: %d entities", len(batch))
        if not self._client.connected:  # not sent at all: a definite "not applied", not an unknown
            raise ConnectionTrouble(
                f"lost the ZooKeeper connection (before the commit of {counted(len(batch), 'entity')})"
            )
        self._sent = True
        results = self._wait(tx.commit_async(), f"commit of {counted(len(batch), 'entity')}")
        failures = [r for r in results if isinstance(r, Exception)]
        if not failures:
            self._created |= created
            for p in batch:  # --verbose: the znodes written (and the notification brokers watch)
                log.info("%s %s + /config/changes notification", "deleted" if p.deletes_node else "wrote", p.path)
            return True
        self._created.clear()  # the conflict may be a parent someone else removed: re-read everything
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
                if _is_no_auth(f):
                    raise BackendUnavailable(self._no_auth_message(_acl_witnesses(batch)))
                raise ConflictError(f"ZooKeeper rejected the transaction: {_short(f)}")
        return False

    def _no_auth_message(self, paths: Sequence[str], action: str = "write") -> str:
        """Why ZooKeeper refused, in one line. kazoo cannot say: a wrong digest password still "authenticates"
        (as another identity) and only shows up as NoAuth later, so compare our identity with the ACLs of the
        nodes involved (or, when those are unreadable to us, of /config and /config/changes, which Kafka's
        secure ACLs leave world-readable). Names users, never passwords or their hashes."""
        from kazoo.security import make_digest_acl_credential

        refused = paths[0] if paths else "quota nodes"
        ours = {}
        for cred in self.settings.digest_auth:
            user, _, password = cred.partition(":")
            ours[user] = make_digest_acl_credential(user, password)
        if not ours and not self.settings.sasl:
            return (
                f"ZooKeeper refused to {action} {refused}: its ACL allows that only to authenticated users "
                "(give --zk-auth digest:USER:PASSWORD, --zk-sasl-jaas FILE or KQUOTACTL_ZK_AUTH)"
            )
        for path in dict.fromkeys([*paths, CONFIG_ROOT, CHANGES_PATH]):
            try:
                acls, _ = self._wait(self._client.get_acls_async(path), f"read the ACL of {path}")
            except Exception:  # the explanation is best effort; the refusal stands
                continue
            digest_ids = [a.id.id for a in acls if a.id.scheme == "digest"]
            for user, ident in ours.items():
                named = [i for i in digest_ids if i.split(":", 1)[0] == user]
                if named and ident not in named:
                    return (
                        f"ZooKeeper refused to {action} {refused}: wrong password for digest user {user!r} "
                        f"(the ACL of {path} names {user!r} with a different password)"
                    )
            if path in paths:
                mask = 0b0001 if action == "read" else 0b1110  # READ; WRITE, CREATE, DELETE
                allowed = sorted({f"{a.id.scheme}:{a.id.id.split(':', 1)[0]}" for a in acls if a.perms & mask})
                return (
                    f"ZooKeeper refused to {action} {refused}: its ACL allows that only to "
                    f"{', '.join(allowed) or 'nobody'}; check --zk-auth / SASL credentials"
                )
        return f"not authorized by ZooKeeper to {action} {refused}: check --zk-auth / SASL credentials and the ACLs"

    def _settle(self, batch: list[_EntityPlan]) -> bool:
        """After a commit whose answer was lost: did the transaction land? Decided by reading it back.

        A multi is all-or-nothing, so one entity whose state is definite decides for the whole batch. An
        entity is definitely written when it holds exactly our data at the version our write produced, and
        definitely not written when it is still at the version we read. When every entity was changed again
        since (another writer), the batch counts as not committed and is re-planned: the re-plan applies the
        change to what is there now, so nothing is lost.
        """
        nodes = self._get_many([p.path for p in batch])
        for p in batch:
            verdict = p.written(nodes.get(p.path))
            if verdict is not None:
                return verdict
        return False

    def _clean_parents(self, pairs: Iterable[Entity]) -> None:
        """Kafka 3.5+ (KAFKA-14285): drop ``users/<u>/clients`` and ``users/<u>`` once left empty."""
        from kazoo.exceptions import BadVersionError, NoNodeError, NotEmptyError

        user_paths = sorted({"/config/" + e.path.rsplit("/clients/", 1)[0] for e in pairs})
        nodes = self._get_many([p for u in user_paths for p in (u, u + "/clients")])
        for u in user_paths:
            clients, user = nodes.get(u + "/clients"), nodes.get(u)
            if clients is None or clients.num_children:
                continue
            tx = self._client.transaction()
            tx.delete(u + "/clients", version=clients.version)
            if user is not None and user.num_children == 1 and not user.props:
                tx.delete(u, version=user.version)
            log.debug("clean empty parents of %s", u)
            try:
                res = self._wait(tx.commit_async(), f"clean {u}")
            except BackendUnavailable:
                return
            if any(isinstance(r, BadVersionError | NoNodeError | NotEmptyError) for r in res):
                continue


@dataclass
class _EntityPlan:
    change: EntityChange
    path: str
    node: _Node | None
    new_props: dict[str, str]
    before: dict[str, Number]
    after: dict[str, Number]
    parents: list[str]
    keep_node: bool = False

    @property
    def is_user_only(self) -> bool:
        return self.change.entity.user is not None and self.change.entity.client_id is None

    @property
    def is_pair(self) -> bool:
        return self.change.entity.user is not None and self.change.entity.client_id is not None

    @property
    def deletes_node(self) -> bool:
        return not self.new_props and self.node is not None and self.node.num_children == 0 and not self.keep_node

    def ops(self, acl: list[Any] | None) -> list[Any]:
        """Transaction ops for this entity: the CAS write, then its v2 notification."""
        data = encode_entity(self.new_props)
        path, node = self.path, self.node
        notification = encode_notification(self.change.entity.path)
        ops: list[Any] = []
        if node is None:
            ops.append(lambda tx: tx.create(path, data, acl=acl))
        elif self.deletes_node:
            ops.append(lambda tx: tx.delete(path, version=node.version))
        else:
            ops.append(lambda tx: tx.set_data(path, data, version=node.version))
        ops.append(lambda tx: tx.create(NOTIFICATION_PREFIX, notification, acl=_notification_acl(acl), sequence=True))
        return ops

    def written(self, node: _Node | None) -> bool | None:
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
        return len(encode_entity(self.new_props)) + len(self.path) * 2 + 96 + sum(len(p) + 16 for p in self.parents)

    def op_count(self) -> int:
        return 2 + len(self.parents)


_VERBS = {"read": "get", "list": "ls"}  # --debug traces name the ZooKeeper operation
CLOSE_WAIT = 2.0  # seconds to wait for a clean session close before leaving it to the server's timeout


def _stop_bounded(client: Any, wait: float = CLOSE_WAIT) -> None:
    """Stop a kazoo client without hanging: ``stop()`` joins its connection thread for up to 10 s, which a
    hung or absent server keeps busy. Run it aside and wait at most CLOSE_WAIT; the thread is a daemon, and
    the server expires an unclosed session by itself."""
    import threading

    def stop() -> None:
        try:
            client.stop()
            client.close()
        except Exception:  # best effort on shutdown
            pass

    t = threading.Thread(target=stop, name="kquotactl-zk-close", daemon=True)
    t.start()
    t.join(wait)


def _notification_acl(acl: list[Any] | None) -> list[Any] | None:
    """Notifications are not sensitive: creator-all plus world-read when ACLs are on."""
    if acl is None:
        return None
    from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

    return list(CREATOR_ALL_ACL) + list(READ_ACL_UNSAFE)


def _batches(plans: list[_EntityPlan]) -> Iterable[list[_EntityPlan]]:
    """Group entity plans into transactions bounded by op count and bytes.

    Two plans that create the same parent go in the same batch so the parent is created once.
    """
    batch: list[_EntityPlan] = []
    ops = size = 0
    for p in plans:
        if batch and (ops + p.op_count() > MAX_TXN_OPS or size + p.size() > MAX_TXN_BYTES):
            yield batch
            batch, ops, size = [], 0, 0
        batch.append(p)
        ops += p.op_count()
        size += p.size()
    if batch:
        yield batch


def _acl_witnesses(batch: Sequence[_EntityPlan]) -> list[str]:
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


def _is_no_auth(exc: Exception) -> bool:
    from kazoo.exceptions import NoAuthError

    return isinstance(exc, NoAuthError)


def _short(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0][:200]
