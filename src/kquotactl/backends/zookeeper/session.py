"""One ZooKeeper session: settings, connect (TLS, SASL, digest auth), bounded waits, riding out connection
losses, pipelined reads, and why ZooKeeper said NoAuth.

Every wait is bounded: kazoo's synchronous calls block forever on a lost connection, so this module only uses the
``*_async`` calls with a timeout. Connection loss and session expiry are ridden out: kazoo reconnects by itself (a
new session if the old one expired), and :meth:`ZkSession.await_connected` waits for that up to the op timeout.
"""

from __future__ import annotations

import logging
import re
import signal
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kquotactl.backends.zookeeper.codec import CHANGES_PATH, CONFIG_ROOT, Node, decode_entity
from kquotactl.connection.extras import missing_extra
from kquotactl.core.errors import BackendUnavailable, UsageError
from kquotactl.core.retry import RetryPolicy

log = logging.getLogger("kquotactl.zookeeper")
_HELD = {signal.SIGINT, signal.SIGTERM}  # held while a request is queued (ZkSession.submit)

READ_CHUNK = 5000  # reads retried together after a connection loss
# Outstanding async requests. kazoo wakes its connection thread with one byte per request on a socketpair that
# holds about 278 of them; requests issued while it is reconnecting are not drained, and the 279th blocks the
# caller forever. A sliding window under that (and no new request while disconnected) keeps every wait bounded;
# 250 reads faster than 128, somewhat slower than 1,000 (bench/zk_outage.py): bounded waits come first.
READ_WINDOW = 250
# A reader that caught up with kazoo's connection thread sleeps until the WAKE_BATCH-th oldest request is answered
# (ZooKeeper answers a session's requests in order), not until the oldest: one wake-up, which takes the GIL back
# from the connection thread, per batch of answers instead of per answer. That was ~0.6 s of CPU in 13,000 reads.
WAKE_BATCH = 100
MAX_OUTAGES = 10  # connection losses ridden out in one call before giving up
OUTAGES_RIDDEN_OUT = RetryPolicy(delay=0.0, max_tries=MAX_OUTAGES)  # counted in ZkSession.outages across waits
RECONNECT_POLL = RetryPolicy(delay=0.02)  # within the op timeout: is kazoo connected again?
CLOSE_WAIT = 2.0  # seconds to wait for a clean session close before leaving it to the server's timeout
_VERBS = {"read": "get", "list": "ls"}  # --debug traces name the ZooKeeper operation

T = TypeVar("T")


class ConnectionTrouble(BackendUnavailable):
    """The connection was lost or the session expired: kazoo reconnects, so the caller may wait and retry."""


class NotAuthorized(BackendUnavailable):
    """ZooKeeper answered NoAuth; callers that know the path explain it (see :meth:`ZkSession.no_auth_message`)."""


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
    allow_no_brokers: bool = False  # write even where no broker has registered (see ZooKeeperBackend.check_writable)
    source: str = ""  # where the connect string came from when not --zookeeper (KQUOTACTL_ZOOKEEPER, context 'prod')

    @property
    def option(self) -> str:
        """What named the connect string: ``--zookeeper``, or its source (``KQUOTACTL_ZOOKEEPER``, a context)."""
        return self.source or "--zookeeper"

    @property
    def where(self) -> str:
        """``ZooKeeper at zk:2181``, with where the address came from when it was not typed as ``--zookeeper``."""
        return f"ZooKeeper at {self.connect}" + (f" (from {self.source})" if self.source else "")

    def __repr__(self) -> str:  # never print credentials
        return f"ZkSettings(connect={self.connect!r}, tls={self.tls is not None}, secure_acl={self.secure_acl})"


class _RedactSecrets(logging.Filter):
    """Blank the credentials in kazoo's request trace (``Auth(... auth='user:password')``, session passwd)."""

    _PATTERN = re.compile(r"(auth=|passwd=|password=)(b?'[^']*'|b?\"[^\"]*\")")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self._PATTERN.search(message):
            record.msg, record.args = self._PATTERN.sub(r"\1'***'", message), ()
        return True


class ZkSession:
    """A connected kazoo client with bounded waits. ``outages`` counts the connection losses ridden out in the
    current call (the backend resets it per call; bounded by MAX_OUTAGES)."""

    def __init__(self, settings: ZkSettings) -> None:
        self.settings = settings
        self.outages = 0
        self.client: Any = None
        self.client = self._connect(settings)

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

        from kquotactl.connection.cluster import unreachable

        why = unreachable(collect_hosts(s.connect)[0], s.connect_timeout)
        if why:
            raise BackendUnavailable(f"cannot connect to {s.where}: {why}")
        log.debug("connecting to ZooKeeper %s (timeout %.1fs)", s.connect, s.connect_timeout)
        # Not client.start(): on a time-out it joins its connection thread for up to 10 s more (a hung server
        # keeps that thread busy), and its chroot check is a synchronous call that can block forever.
        try:
            client.start_async().wait(timeout=s.connect_timeout)
        except Exception as e:
            stop_bounded(client)
            raise BackendUnavailable(f"cannot connect to {s.where}: {short(e)}") from None
        if not client.connected:
            stop_bounded(client, wait=0.1)  # no session to close
            hint = (
                " (TLS: check the certificates and that the port speaks TLS)"
                if s.tls
                else " (timed out: a firewall, a slow network, or a port that is not ZooKeeper's)"
            )
            raise BackendUnavailable(f"cannot connect to {s.where}: no session within {s.connect_timeout:g}s{hint}")
        self.client = client
        # SASL failures arrive only after start() returned: probe once, bounded.
        try:
            root = self.wait(self.submit(client.exists_async, "/"), "probe")
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
                f"ZooKeeper path {chroot} does not exist: check the chroot in {s.option} {s.connect}"
            )
        return client

    def close(self) -> None:
        client = self.client
        if client is not None:
            self.client = None
            stop_bounded(client)

    @staticmethod
    def submit(call: Any, *args: Any, **kwargs: Any) -> Any:
        """``call(*args, **kwargs)``, one of kazoo's ``*_async`` requests, with SIGINT and SIGTERM held until it is
        queued: kazoo wakes its connection thread inside a bare ``except:``, which swallowed a Ctrl-C landing
        there (3 of 6 interrupted 5,000-entity applies ran to the end; found by tests/test_apply_interrupt.py).
        Held, it lands just after. Two system calls, not :func:`signals_held`: reads come by the thousand."""
        if not hasattr(signal, "pthread_sigmask"):  # (not on Windows)
            return call(*args, **kwargs)
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            return call(*args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def wait(self, async_result: Any, what: str, timeout: float | None = None) -> Any:
        """Wait for one async result with the op timeout (or ``timeout`` where the caller already waited); map
        connection problems to one-line errors (other errors, such as NoNode, are raised as they are)."""
        try:
            return async_result.get(timeout=self.settings.op_timeout if timeout is None else timeout)
        except Exception as e:  # kazoo's classes are imported only on an error: this runs once per request
            mapped = self._mapped(e, what)
            if mapped is None:
                raise
        raise mapped from None

    def _mapped(self, e: Exception, what: str) -> BackendUnavailable | None:
        from kazoo.exceptions import (
            AuthFailedError,
            ConnectionClosedError,
            ConnectionLoss,
            NoAuthError,
            SessionExpiredError,
        )
        from kazoo.handlers.threading import KazooTimeoutError

        if isinstance(e, KazooTimeoutError):
            return NoAnswer(
                f"ZooKeeper {self.settings.connect} did not answer ({what}) within {self.settings.op_timeout:g}s"
            )
        if isinstance(e, ConnectionLoss | SessionExpiredError):
            return ConnectionTrouble(f"lost the ZooKeeper connection ({what}): {short(e)}")
        if isinstance(e, ConnectionClosedError):
            return BackendUnavailable(f"lost the ZooKeeper connection ({what}): {short(e)}")
        if isinstance(e, NoAuthError):
            return NotAuthorized(
                f"not authorized by ZooKeeper for {what}: check --zk-auth / SASL credentials and the node ACLs"
            )
        if isinstance(e, AuthFailedError):
            return BackendUnavailable("ZooKeeper authentication failed (check the scheme and credentials)")
        return None

    def await_connected(self, trouble: ConnectionTrouble) -> None:
        """Wait, up to the op timeout, for kazoo to reconnect (a new session if the old one expired)."""
        from kazoo.protocol.states import KazooState

        self.outages += 1
        if not OUTAGES_RIDDEN_OUT.allows(self.outages):
            raise BackendUnavailable(f"{trouble} (gave up after {MAX_OUTAGES} connection losses)")
        log.debug("%s: waiting up to %.1fs for a reconnect", trouble, self.settings.op_timeout)
        for attempt in RECONNECT_POLL.within(self.settings.op_timeout).tries(time.monotonic, time.sleep):
            client = self.client
            if client is None or attempt.last:
                break
            if client.state == KazooState.CONNECTED and client.connected:
                log.debug("reconnected to ZooKeeper")
                return
        raise BackendUnavailable(f"{trouble}; no reconnect within {self.settings.op_timeout:g}s")

    def ride_out(self, fn: Callable[..., T], *args: Any) -> T:
        """Run an idempotent read, waiting out connection losses (each wait bounded by the op timeout)."""
        while True:
            try:
                return fn(*args)
            except ConnectionTrouble as trouble:
                self.await_connected(trouble)

    # -- reads -----------------------------------------------------------------------------------

    def get_many(self, paths: Sequence[str]) -> dict[str, Node | None]:
        """Read many znodes, pipelined (connection losses ridden out)."""
        out: dict[str, Node | None] = {}
        for start in range(0, len(paths), READ_CHUNK):
            out.update(self.ride_out(self._get_chunk, paths[start : start + READ_CHUNK]))
        return out

    def _get_chunk(self, chunk: Sequence[str]) -> dict[str, Node | None]:
        out: dict[str, Node | None] = {}
        for p, res in self.pipelined(chunk, self.client.get_async, "read"):
            out[p] = None if res is None else Node(p, decode_entity(p, res[0]), res[1].version, res[1].numChildren)
        return out

    def get_raw_many(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        """The data of a few znodes as stored (None: absent), pipelined: znodes that are no entity config."""

        def read() -> list[tuple[str, bytes | None]]:
            return [(p, None if r is None else r[0]) for p, r in self.pipelined(paths, self.client.get_async, "read")]

        return dict(self.ride_out(read))

    def children_many(self, paths: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for start in range(0, len(paths), READ_CHUNK):
            out.update(self.ride_out(self._children_chunk, paths[start : start + READ_CHUNK]))
        return out

    def _children_chunk(self, chunk: Sequence[str]) -> dict[str, list[str]]:
        return {p: sorted(r or []) for p, r in self.pipelined(chunk, self.client.get_children_async, "list")}

    def exists_many(self, paths: Sequence[str]) -> dict[str, Any]:
        """``exists`` of each path (connection losses ridden out); NoAuth counts as present."""
        return dict(self.ride_out(lambda: list(self.pipelined(paths, self.client.exists_async, "exists"))))

    def pipelined(self, paths: Sequence[str], call: Any, what: str) -> Iterable[tuple[str, Any]]:
        """``call(path)`` for each path with at most READ_WINDOW outstanding; yields (path, result or None if
        the node does not exist). Nothing is issued while disconnected (see READ_WINDOW)."""
        from kazoo.exceptions import NoNodeError

        window: deque[tuple[str, Any]] = deque()
        todo = iter(paths)
        debug, verb = log.isEnabledFor(logging.DEBUG), _VERBS.get(what, what)
        while True:
            while len(window) < READ_WINDOW:
                p = next(todo, None)
                if p is None:
                    break
                if not self.client.connected:
                    raise ConnectionTrouble(f"lost the ZooKeeper connection ({what} {p}): not connected")
                if debug:
                    log.debug("%s %s", verb, p)
                window.append((p, self.submit(call, p)))
            if not window:
                return
            timeout = None
            if (
                not window[0][1].ready()
                and len(window) > 1
                and not window[min(len(window), WAKE_BATCH) - 1][1].wait(self.settings.op_timeout)  # see WAKE_BATCH
            ):
                timeout = 0.0  # no answer within the op timeout: the oldest is not awaited a second time
            p, ar = window.popleft()
            try:
                yield p, self.wait(ar, f"{what} {p}", timeout)
            except NoNodeError:
                yield p, None
            except NotAuthorized:
                if what == "exists":  # ZooKeeper 3.6+ checks READ on exists; NoAuth means the node is there
                    yield p, True
                    continue
                raise NotAuthorized(self.no_auth_message([p], "read")) from None

    # -- ACL diagnosis ---------------------------------------------------------------------------

    def no_auth_message(self, paths: Sequence[str], action: str = "write") -> str:
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
                acls, _ = self.wait(self.submit(self.client.get_acls_async, path), f"read the ACL of {path}")
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


def stop_bounded(client: Any, wait: float = CLOSE_WAIT) -> None:
    """Stop a kazoo client without hanging: ``stop()`` joins its connection thread for up to 10 s, which a
    hung or absent server keeps busy. Run it aside and wait at most CLOSE_WAIT; the thread is a daemon, and
    the server expires an unclosed session by itself."""

    def stop() -> None:
        try:
            client.stop()
            client.close()
        except Exception:  # best effort on shutdown
            pass

    t = threading.Thread(target=stop, name="kquotactl-zk-close", daemon=True)
    t.start()
    t.join(wait)


def is_no_auth(exc: Exception) -> bool:
    from kazoo.exceptions import NoAuthError

    return isinstance(exc, NoAuthError)


def short(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0][:200]
