"""The only module that imports kafka-python, and the one Kafka client of every admin command: client quotas
(KIP-546), broker configs (DescribeConfigs / IncrementalAlterConfigs, ``connection-rate``) and cluster metadata.

kafka-python 3.0's ``KafkaAdminClient`` has no client-quota methods and no public way to send a request, so
this module drives kafka-python's public network layer itself: a ``NetworkSelector`` (the I/O thread) and a
``KafkaConnectionManager`` (``get_connection`` / ``run`` / ``wait_for`` / ``reset_backoff`` / ``cluster``), the
connection's public request future (``send_request``, ``init_future``, ``close_future``) and the generated
request messages. Nothing here reads a private attribute of a kafka-python object
(``tests/test_admin_unit.py`` scans ``src/`` for that). The connection settings come from one mapping,
:func:`kquotactl.connection.clientprops.kafka_python_config`.

Quota requests go to one bootstrap node directly (no Metadata round trip): both APIs are answered by any
broker (and AlterClientQuotas by a KRaft controller), which also makes ``--bootstrap-controller`` work. A
per-broker config resource is sent to that broker (Kafka answers DescribeConfigs of broker N only on broker
N), found through one Metadata request. Every wait is bounded by the connect or request timeout. Importing
kafka-python costs ~180 ms, so this module is only imported when a ``--bootstrap-server`` command runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import kafka.errors as Errors
from kafka.admin.client import KafkaAdminClient
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeQuorumRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.metadata import MetadataRequest

from kquotactl.connection.clientprops import ClientSettings, kafka_python_config
from kquotactl.core.errors import BackendUnavailable, QuotaError
from kquotactl.core.retry import RetryPolicy

log = logging.getLogger("kquotactl.wire")

# (entity_type, name or None for the default)
WireEntity = list[tuple[str, str | None]]
# (entity_type, match_type 0/1/2, match)
WireComponent = tuple[str, int, str | None]
# (key, value, remove)
WireOp = tuple[str, float, bool]

#: how often a connection a broker paused (its throttle, KIP-219) is looked at again, within the request timeout
THROTTLE_POLL = RetryPolicy(delay=0.05)
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
BROKER_ENDPOINTS = 1  # DescribeCluster's EndpointType for brokers
CONTROLLER_ENDPOINTS = 2  # DescribeCluster's EndpointType for controllers (KIP-919)
METADATA_TOPIC = "__cluster_metadata"  # the KRaft metadata log: DescribeQuorum's one partition
NOT_CONTROLLER = Errors.NotControllerError.errno
#: other brokers asked at most whether the node asked is fenced (each one frozen costs ``connect_timeout``)
FENCING_OPINIONS = 2
# kafka-python ships no types: its connections, requests and responses are Any here, named for the reader
KafkaConn = Any
KafkaRequest = Any
KafkaResponse = Any
T = TypeVar("T")
CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}


@dataclass(frozen=True)
class Quorum:
    """The KRaft metadata quorum as its leader tells it (DescribeQuorum): the leader (-1: none elected), its
    epoch, the high watermark (every record below it is committed for good), and each replica's log end offset
    and last fetch time (ms, the leader's clock), voters and observers alike."""

    leader: int
    epoch: int
    high_watermark: int
    replicas: dict[int, tuple[int, int]]


@dataclass(frozen=True)
class Fencing:
    """Which brokers are fenced (ascending), and the id of the broker the bootstrap connection reached (None: not
    a broker the cluster lists by that address). ``asked`` is in ``fenced`` when the node read from is cut off
    from the controllers: it still answers, from an old metadata image."""

    fenced: list[int]
    asked: int | None
    address: str

    @property
    def asked_is_fenced(self) -> bool:
        return self.asked is not None and self.asked in self.fenced


@dataclass(frozen=True)
class AlterOutcome:
    entity: WireEntity
    error_code: int
    error_name: str
    message: str | None


class QuotaWire:
    """A connection to one broker (or controller) for DescribeClientQuotas / AlterClientQuotas."""

    def __init__(
        self,
        bootstrap: str,
        settings: ClientSettings,
        connect_timeout: float,
        request_timeout: float,
        controller: bool = False,
    ) -> None:
        self.bootstrap = bootstrap
        self.settings = settings
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.controller = controller
        self._quiet_library()
        cfg = dict(KafkaAdminClient.DEFAULT_CONFIG)
        cfg.update(kafka_python_config(bootstrap, settings, request_timeout), metrics=None)
        try:
            self._net = NetworkSelector(**cfg)
            self._manager = KafkaConnectionManager(self._net, **cfg)
        except (ValueError, Errors.KafkaConfigurationError) as e:
            raise QuotaError(f"bad bootstrap address {bootstrap!r}: {e}") from None
        self._net.start()
        self._conn: KafkaConn = None
        self._brokers: dict[int, KafkaConn] = {}  # broker id -> connection, for per-broker config resources
        self._routed = False  # controller mode: the connection is to the active controller
        self._unfenced_conn: KafkaConn = None  # the bootstrap connection another broker saw unfenced (fencing())
        try:
            self._conn = self._manager.run(self._connect)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _quiet_library() -> None:
        """kafka-python logs every connection problem itself; we report one line instead."""
        if not logging.getLogger("kquotactl").isEnabledFor(logging.DEBUG):
            lib = logging.getLogger("kafka")
            lib.setLevel(logging.CRITICAL)
            lib.propagate = False
            if not lib.handlers:
                lib.addHandler(logging.NullHandler())

    @property
    def what(self) -> str:
        return f"{'controller' if self.controller else 'broker'} {self.bootstrap}"

    @property
    def broker_release(self) -> tuple[int, int] | None:
        """The release of the node connected to, as the client library infers it from the API versions the node
        answers (a lower bound: a release newer than the library's table reads as the newest it knows); None
        before a connection."""
        version = getattr(self._conn, "broker_version", None)
        return (int(version[0]), int(version[1])) if version else None

    async def _connect(self) -> KafkaConn:
        """Try the bootstrap addresses in turn until one completes the handshake (ApiVersions, SASL), then the
        brokers the cluster's metadata listed (a reconnect after the bootstrap broker died, as Kafka's clients
        use bootstrap addresses only to find the cluster)."""
        errors: list[str] = []
        for node in [*self._manager.cluster.bootstrap_brokers(), *self._manager.cluster.brokers()]:
            conn, error = await self._open(node)
            if conn is not None:
                return conn
            errors.append(error)
        raise self._unreachable(self.what, errors)

    async def _open(self, node: Any) -> tuple[KafkaConn, str]:
        """A ready connection to ``node`` (a cluster metadata node), or None and why not (auth errors raise).

        A closed connection leaves the manager's table on close, so asking again opens a fresh one (a
        reconnect after connections.max.idle.ms or a broker restart); its reconnect backoff is dropped first.
        """
        where = f"{node.host}:{node.port}"
        self._manager.reset_backoff(node.node_id)
        conn = None
        try:
            conn = self._manager.get_connection(
                node.node_id, timeout_ms=int(self.connect_timeout * 1000), refresh_metadata_on_err=False
            )
            await self._manager.wait_for(conn.init_future, int(self.connect_timeout * 1000))
            log.debug("connected to %s (broker version %s)", where, conn.broker_version)
            return conn, ""
        except Exception as e:
            auth = await self._auth_error(e, conn)
            if auth is not None:
                raise auth from None
            return None, f"{where}: {_short(e)}"

    def _unreachable(self, what: str, errors: list[str]) -> BackendUnavailable:
        return BackendUnavailable(
            f"cannot connect to Kafka {what} within {self.connect_timeout:g}s ({'; '.join(errors)})"
            + (" — TLS: check security.protocol and the trust store" if self.settings.uses_ssl else "")
        )

    async def _broker_conn(self, broker: int) -> KafkaConn:
        """A connection to broker ``broker`` (by id), its address from the cluster metadata."""
        conn = self._brokers.get(broker)
        if conn is not None and not conn.closed:
            return conn
        node = self._manager.cluster.broker_metadata(broker)
        if node is None:
            await self._refresh_metadata()
            node = self._manager.cluster.broker_metadata(broker)
        if node is None:
            ids = ", ".join(str(b) for b in sorted(self._broker_ids_known()))
            raise QuotaError(f"no broker {broker} in the cluster behind {self.bootstrap} (brokers: {ids or 'none'})")
        conn, error = await self._open(node)
        if conn is None:
            raise self._unreachable(f"broker {broker}", [error])
        self._brokers[broker] = conn
        return conn

    async def _refresh_metadata(self) -> None:
        """One Metadata request (no topics) through the bootstrap node: the brokers' ids and addresses."""
        resp = await self._read(MetadataRequest(topics=MetadataRequest.NO_TOPICS))
        self._manager.cluster.update_metadata(resp)

    async def _read(self, request: KafkaRequest, broker: int | None = None) -> KafkaResponse:
        """A read (nothing written: safe to send twice) to the bootstrap node or broker ``broker``; a connection
        found dead on sending (its broker restarted or died since the last request) is opened again once."""
        for last in (False, True):
            conn = await (self._bootstrap_conn() if broker is None else self._broker_conn(broker))
            try:
                return await self._request(conn, request)
            except Errors.KafkaConnectionError:
                if last:
                    raise
                log.debug("connection to %s lost; reading again on a new one", broker or self.bootstrap)
                conn.close()
        raise AssertionError("unreachable")

    def _broker_ids_known(self) -> list[int]:
        return [b.node_id for b in self._manager.cluster.brokers()]

    async def _bootstrap_conn(self) -> KafkaConn:
        if self._conn.closed:  # closed while idle (connections.max.idle.ms, a broker restart): reconnect first
            log.debug("connection to %s closed; reconnecting", self.bootstrap)
            self._conn = await self._connect()
            self._routed = False
        if self.controller and not self._routed:
            self._conn = await self._active_controller(self._conn)
            self._routed = True
        return self._conn

    async def _active_controller(self, conn: KafkaConn) -> KafkaConn:
        """A connection to the active controller: only it takes writes (the others answer NOT_CONTROLLER), so
        with several ``--bootstrap-controller`` addresses ask one which is active (DescribeCluster, KIP-919).
        A controller older than 3.7 cannot say: the connection stays as it is."""
        req = DescribeClusterRequest(
            include_cluster_authorized_operations=False,
            endpoint_type=CONTROLLER_ENDPOINTS,
            include_fenced_brokers=False,
        )
        try:
            resp = await self._request(conn, req)
        except Errors.IncompatibleBrokerVersion:
            return conn
        _raise_for(resp, "DescribeCluster: ")
        active = next((b for b in resp.brokers if b.broker_id == resp.controller_id), None)
        if active is None:
            return conn
        for node in self._manager.cluster.bootstrap_brokers():
            if (node.host, node.port) != (active.host, active.port):
                continue
            if node.node_id == conn.node_id:
                return conn
            found, error = await self._open(node)
            if found is None:
                raise self._unreachable(f"controller {active.broker_id} (the active one)", [error])
            log.debug("the active controller is %s at %s:%s", active.broker_id, active.host, active.port)
            return found
        raise BackendUnavailable(
            f"the active controller {active.broker_id} ({active.host}:{active.port}) is not among "
            f"--bootstrap-controller {self.bootstrap}: add its address"
        )

    def reroute(self) -> None:
        """Ask again which controller is active before the next request (after NOT_CONTROLLER or a lost one)."""
        self._routed = False

    async def _auth_error(self, exc: Exception, conn: KafkaConn | None) -> QuotaError | None:
        """The SASL failure may surface as 'socket disconnected' first; the connection's close reason tells."""
        candidates = [exc]
        if conn is not None:
            try:
                await self._manager.wait_for(conn.close_future, 300)
            except Exception as e:
                candidates.append(e)
            for fut in (conn.init_future, conn.close_future):
                if fut.exception is not None:
                    candidates.append(fut.exception)
        for c in candidates:
            # The broker closes the socket right after its SaslAuthenticate error; the close may win the race.
            sasl_closed = self.settings.uses_sasl and "socket disconnected" in str(c)
            if isinstance(c, Errors.SaslAuthenticationFailedError) or sasl_closed:
                return BackendUnavailable(
                    f"authentication to Kafka {self.what} failed ({self.settings.sasl_mechanism} as "
                    f"{self.settings.sasl_username!r}): check sasl.jaas.config in --command-config"
                )
            if isinstance(c, Errors.UnsupportedSaslMechanismError):
                return BackendUnavailable(
                    f"Kafka {self.what} does not accept sasl.mechanism={self.settings.sasl_mechanism}: {_short(c)}"
                )
            if isinstance(c, Errors.IllegalSaslStateError):
                return BackendUnavailable(
                    f"Kafka {self.what} did not expect SASL: check security.protocol in --command-config"
                )
        return None

    # -- requests --------------------------------------------------------------------------------

    async def _request(self, conn: KafkaConn, request: KafkaRequest) -> KafkaResponse:
        # A broker that throttles us (request quotas apply to admin requests too) pauses the connection
        # for throttle_time_ms (KIP-219): wait it out, within the request timeout.
        deadline = time.monotonic() + self.request_timeout

        def until_deadline(seconds: float) -> Awaitable[None]:  # the last wait ends at the deadline, not after
            return self._net.sleep(min(seconds, max(0.0, deadline - time.monotonic())))  # type: ignore[no-any-return]

        async for attempt in THROTTLE_POLL.within(self.request_timeout).atries(time.monotonic, until_deadline):
            if not (conn.paused and "throttle" in conn.paused) or attempt.last:
                break
        fut = conn.send_request(request, request_timeout_ms=int(self.request_timeout * 1000))
        return await self._manager.wait_for(fut, int(self.request_timeout * 1000) + 1000)

    def _send(self, request: KafkaRequest, what: str, broker: int | None = None) -> KafkaResponse:
        """Send ``request`` to the bootstrap node, or to broker ``broker``; Kafka's answer, or one-line errors."""

        async def go() -> KafkaResponse:
            if not isinstance(request, AlterClientQuotasRequest | IncrementalAlterConfigsRequest):
                return await self._read(request, broker)
            conn = await (self._bootstrap_conn() if broker is None else self._broker_conn(broker))
            return await self._request(conn, request)

        return self._run(go, what, request, self.what if broker is None else f"broker {broker}")

    def _run(
        self, go: Callable[[], Awaitable[T]], what: str, request: KafkaRequest = None, who: str | None = None
    ) -> T:
        """Run ``go`` on the I/O thread; kafka-python's errors become one line (:class:`BackendUnavailable`)."""
        who = who or self.what
        try:
            result: T = self._manager.run(go)
            return result
        except Errors.IncompatibleBrokerVersion:
            if self.controller and isinstance(request, DescribeClientQuotasRequest):
                raise BackendUnavailable(
                    f"Kafka {who}: KRaft controllers do not serve DescribeClientQuotas; "
                    "use --bootstrap-server with a broker address"
                ) from None
            api = f" (API {request.API_KEY})" if request is not None else ""
            why = (
                ": client quotas through the admin API need Kafka 2.6 or later; use --zookeeper for older "
                "ZooKeeper-mode clusters"
                if isinstance(request, (DescribeClientQuotasRequest, AlterClientQuotasRequest))
                else ""
            )
            raise BackendUnavailable(f"Kafka {who} does not support {what}{api}{why}") from None
        except Errors.KafkaTimeoutError:
            raise BackendUnavailable(
                f"Kafka {who} did not answer {what} within {self.request_timeout:g}s (raise --timeout?)"
            ) from None
        except Errors.KafkaError as e:
            raise BackendUnavailable(f"{what} to Kafka {who} failed: {_short(e)}") from None

    def describe(
        self, components: Sequence[WireComponent], strict: bool, broker: int | None = None
    ) -> list[tuple[WireEntity, dict[str, float]]]:
        """DescribeClientQuotas through the bootstrap node, or sent to broker ``broker`` (by id): a KRaft broker
        answers from the metadata image it has applied, so each broker tells its own state."""
        C = DescribeClientQuotasRequest.ComponentData
        req = DescribeClientQuotasRequest(
            components=[C(entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict
        )
        log.debug("DescribeClientQuotas components=%s strict=%s", list(components), strict)
        resp = self._send(req, "DescribeClientQuotas", broker)
        _raise_for(resp)
        out = []
        for entry in resp.entries or []:
            entity = [(e.entity_type, e.entity_name) for e in entry.entity]
            out.append((entity, {v.key: float(v.value) for v in entry.values}))
        return out

    def alter(self, entries: Sequence[tuple[WireEntity, Sequence[WireOp]]], validate_only: bool) -> list[AlterOutcome]:
        """Send one AlterClientQuotas request; one outcome per entry, in the broker's order."""
        E = AlterClientQuotasRequest.EntryData
        req = AlterClientQuotasRequest(
            entries=[
                E(
                    entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                    ops=[E.OpData(key=k, value=float(v), remove=r) for k, v, r in ops],
                )
                for entity, ops in entries
            ],
            validate_only=validate_only,
        )
        log.info(
            "AlterClientQuotas %d entries, %d ops validate_only=%s",
            len(entries),
            sum(len(ops) for _, ops in entries),
            validate_only,
        )
        if not self.controller and not validate_only and not self._broker_ids_known():
            # the other brokers, to reconnect to should this one die with a write in flight
            self._run(self._refresh_metadata, "Metadata")
        resp = self._send(req, "AlterClientQuotas")
        out = []
        for entry in resp.entries:
            err = Errors.for_code(entry.error_code) if entry.error_code else None
            out.append(
                AlterOutcome(
                    entity=[(e.entity_type, e.entity_name) for e in entry.entity],
                    error_code=entry.error_code,
                    error_name=_error_name(err) if err else "NONE",
                    message=entry.error_message or (err.description if err else None),
                )
            )
        return out

    def quorum(self) -> Quorum | None:
        """DescribeQuorum of the metadata log, through the bootstrap node (a broker forwards it to the active
        controller); None from a broker without it (ZooKeeper mode, before 3.3)."""
        T = DescribeQuorumRequest.TopicData
        req = DescribeQuorumRequest(
            topics=[T(topic_name=METADATA_TOPIC, partitions=[T.PartitionData(partition_index=0)])]
        )

        async def go() -> KafkaResponse:
            try:
                return await self._read(req)
            except Errors.IncompatibleBrokerVersion:
                return None

        resp = self._run(go, "DescribeQuorum", req)
        if resp is None:
            return None
        _raise_for(resp, "DescribeQuorum: ")
        [part] = resp.topics[0].partitions
        _raise_for(part, "DescribeQuorum: ")
        replicas = {
            r.replica_id: (r.log_end_offset, r.last_fetch_timestamp) for r in [*part.current_voters, *part.observers]
        }
        return Quorum(part.leader_id, part.leader_epoch, part.high_watermark, replicas)

    # -- cluster metadata and broker configs -----------------------------------------------------------

    def broker_ids(self) -> list[int]:
        """The ids of the cluster's brokers (one Metadata request), ascending."""

        async def go() -> list[int]:
            await self._refresh_metadata()
            return sorted(self._broker_ids_known())

        return self._run(go, "Metadata")

    def fenced_broker_ids(self) -> list[int]:
        """The ids of the brokers the cluster has registered but fenced (DescribeCluster v2 with fenced brokers,
        KIP-1073, Kafka 4.0+), ascending. Metadata leaves them out; a fenced broker that still runs answers
        from its last metadata image. Older brokers cannot say: none."""
        return self.fencing().fenced

    def fencing(self) -> Fencing:
        """Which brokers are fenced, by a view that is not the asked node's alone: a broker cut off from the
        controllers answers DescribeCluster from its old metadata image, where it is still unfenced (measured on
        Kafka 4.4). So one other unfenced broker is asked too (the next one if it does not answer, at most
        :data:`FENCING_OPINIONS`); when it sees the asked node fenced, its view is the cluster's (the asked node's
        is old). One node, or none other answering: the asked node's view. Once another broker saw the asked node
        unfenced, that connection's answers are taken alone (a frozen broker asked costs ``connect_timeout``: once
        per connection, not per ``verify`` round)."""
        req = DescribeClusterRequest(
            include_cluster_authorized_operations=False,
            endpoint_type=BROKER_ENDPOINTS,
            include_fenced_brokers=True,
        )

        def fenced_in(resp: KafkaResponse) -> list[int]:
            return sorted(b.broker_id for b in resp.brokers if getattr(b, "is_fenced", False))

        async def go() -> Fencing:
            try:
                resp = await self._read(req)
            except Errors.IncompatibleBrokerVersion:
                return Fencing([], None, self.bootstrap)
            _raise_for(resp, "DescribeCluster: ")
            conn = await self._bootstrap_conn()
            node = next((n for n in self._manager.cluster.bootstrap_brokers() if n.node_id == conn.node_id), None)
            node = node or self._manager.cluster.broker_metadata(conn.node_id)
            where = (node.host, node.port) if node is not None else None
            address = f"{where[0]}:{where[1]}" if where else self.bootstrap
            asked = next((b.broker_id for b in resp.brokers if (b.host, b.port) == where), None)
            view = Fencing(fenced_in(resp), asked, address)
            if asked is None or conn is self._unfenced_conn:
                return view  # this connection's node was seen unfenced by another broker: its view is current
            others = [b for b in resp.brokers if b.broker_id != asked and not getattr(b, "is_fenced", False)]
            others.sort(key=lambda b: (b.broker_id not in self._brokers, b.broker_id))  # open connections first
            for other in others[:FENCING_OPINIONS]:
                try:
                    second = await self._read(req, other.broker_id)
                except (Errors.KafkaError, QuotaError) as e:
                    log.debug("DescribeCluster to broker %s: %s", other.broker_id, e)
                    continue
                if second.error_code == 0 and asked in fenced_in(second):
                    return Fencing(fenced_in(second), asked, address)
                self._unfenced_conn = conn
                return view
            return view

        return self._run(go, "DescribeCluster", req)

    @staticmethod
    def _target(resource: str) -> int | None:
        """Where a BROKER resource is answered: broker N for ``"N"``, any broker for the cluster default."""
        return int(resource) if resource else None

    def broker_configs(self, resource: str) -> dict[str, tuple[str | None, str]]:
        """DescribeConfigs of one BROKER resource (``""`` = the cluster-wide default): {name: (value, source)}."""
        R = DescribeConfigsRequest.DescribeConfigsResource
        req = DescribeConfigsRequest(
            resources=[R(resource_type=BROKER_RESOURCE, resource_name=resource, configuration_keys=None)],
            include_synonyms=False,
            include_documentation=False,
        )
        resp = self._send(req, "DescribeConfigs", self._target(resource))
        [result] = resp.results
        _raise_for(result, "DescribeConfigs: ")
        return {c.name: (c.value, CONFIG_SOURCES.get(c.config_source, str(c.config_source))) for c in result.configs}

    def alter_broker_config(self, resource: str, name: str, value: str | None, validate_only: bool) -> None:
        """IncrementalAlterConfigs SET (or DELETE when ``value`` is None) of one key on one BROKER resource."""
        R = IncrementalAlterConfigsRequest.AlterConfigsResource
        C = R.AlterableConfig
        op = C(name=name, config_operation=0 if value is not None else 1, value=value)
        req = IncrementalAlterConfigsRequest(
            resources=[R(resource_type=BROKER_RESOURCE, resource_name=resource, configs=[op])],
            validate_only=validate_only,
        )
        resp = self._send(req, "IncrementalAlterConfigs", self._target(resource))
        [result] = resp.responses
        _raise_for(result)

    def close(self) -> None:
        manager, net = getattr(self, "_manager", None), getattr(self, "_net", None)
        try:
            if manager is not None:
                manager.close()
            if net is not None:
                net.stop(timeout_ms=2000)
        except Exception:  # pragma: no cover - best effort on shutdown
            pass
        self._manager = self._net = None


def _raise_for(answer: Any, prefix: str = "") -> None:
    """A response (or one result of it) carrying an error code: the QuotaError naming Kafka's error and its message."""
    if answer.error_code:
        err = Errors.for_code(answer.error_code)
        raise QuotaError(f"{prefix}{_error_name(err)}: {answer.error_message or err.description}")


def _error_name(err: type) -> str:
    """``InvalidRequestError`` -> ``INVALID_REQUEST`` (Kafka's own error names)."""
    name = getattr(err, "message", None) or err.__name__
    return str(name)


def _short(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0][:200]
