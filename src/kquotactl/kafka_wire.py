"""The only module that imports kafka-python: KIP-546 requests (and broker configs) over its wire code.

kafka-python ships the generated ``DescribeClientQuotasRequest`` / ``AlterClientQuotasRequest`` messages and a
connection manager that negotiates versions, speaks SASL (PLAIN/SCRAM) and TLS. confluent-kafka (librdkafka)
has no client-quota admin API yet; when it gains one, this file is the one to rewrite: the backend only sees
:class:`QuotaWire` with plain tuples in and out.

We talk to one bootstrap node directly (no Metadata round trip): both APIs are answered by any broker (and
AlterClientQuotas by a KRaft controller), which also makes ``--bootstrap-controller`` work. Every wait is
bounded by the connect or request timeout. Importing kafka-python costs ~180 ms, so this module is only
imported when a ``--bootstrap-server`` command runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import kafka.errors as Errors
from kafka.admin.client import KafkaAdminClient
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest

from kquotactl.clientprops import ClientSettings
from kquotactl.errors import BackendUnavailable, QuotaError

log = logging.getLogger("kquotactl.wire")

# (entity_type, name or None for the default)
WireEntity = list[tuple[str, str | None]]
# (entity_type, match_type 0/1/2, match)
WireComponent = tuple[str, int, str | None]
# (key, value, remove)
WireOp = tuple[str, float, bool]

BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
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
        cfg.update(
            bootstrap_servers=bootstrap,
            client_id=settings.client_id,
            metrics=None,
            request_timeout_ms=int(request_timeout * 1000),
            security_protocol=settings.security_protocol,
            sasl_mechanism=settings.sasl_mechanism,
            sasl_plain_username=settings.sasl_username,
            sasl_plain_password=settings.sasl_password,
            ssl_cafile=settings.ssl_cafile,
            ssl_certfile=settings.ssl_certfile,
            ssl_password=settings.ssl_password,
            ssl_check_hostname=settings.ssl_check_hostname,
            reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=500,
        )
        try:
            self._net = NetworkSelector(**cfg)
            self._manager = KafkaConnectionManager(self._net, **cfg)
        except (ValueError, Errors.KafkaConfigurationError) as e:
            raise QuotaError(f"bad bootstrap address {bootstrap!r}: {e}") from None
        self._net.start()
        self._conn = None
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

    async def _connect(self):
        """Try the bootstrap addresses in turn until one completes the handshake (ApiVersions, SASL)."""
        errors: list[str] = []
        for node in self._manager.cluster.bootstrap_brokers():
            where = f"{node.host}:{node.port}"
            stale = self._manager._conns.get(node.node_id)
            if stale is not None and stale.closed:  # a reconnect: drop the closed connection and its backoff
                self._manager._conns.pop(node.node_id, None)
                self._manager.reset_backoff(node.node_id)
            try:
                conn = self._manager.get_connection(
                    node.node_id,
                    timeout_ms=int(self.connect_timeout * 1000),
                    pop_on_close=False,
                    refresh_metadata_on_err=False,
                )
                await self._manager.wait_for(conn.init_future, int(self.connect_timeout * 1000))
                log.debug("connected to %s (broker version %s)", where, conn.broker_version)
                return conn
            except Exception as e:
                auth = await self._auth_error(e, locals().get("conn"))
                if auth is not None:
                    raise auth from None
                errors.append(f"{where}: {_short(e)}")
        raise BackendUnavailable(
            f"cannot connect to Kafka {self.what} within {self.connect_timeout:g}s ({'; '.join(errors)})"
            + (" — TLS: check security.protocol and the trust store" if self.settings.uses_ssl else "")
        )

    async def _auth_error(self, exc: Exception, conn) -> QuotaError | None:
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

    def _send(self, request, what: str):
        async def go():
            if self._conn.closed:  # closed while idle (connections.max.idle.ms, a broker restart): reconnect first
                log.debug("connection to %s closed; reconnecting", self.bootstrap)
                self._conn = await self._connect()
            # A broker that throttles us (request quotas apply to admin requests too) pauses the connection
            # for throttle_time_ms (KIP-219): wait it out, within the request timeout.
            deadline = time.monotonic() + self.request_timeout
            while self._conn.paused and "throttle" in self._conn.paused and time.monotonic() < deadline:
                await self._net.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
            fut = self._conn.send_request(request, request_timeout_ms=int(self.request_timeout * 1000))
            return await self._manager.wait_for(fut, int(self.request_timeout * 1000) + 1000)

        try:
            return self._manager.run(go)
        except Errors.IncompatibleBrokerVersion:
            if self.controller and isinstance(request, DescribeClientQuotasRequest):
                raise BackendUnavailable(
                    f"Kafka {self.what}: KRaft controllers do not serve DescribeClientQuotas; "
                    "use --bootstrap-server with a broker address"
                ) from None
            raise BackendUnavailable(
                f"Kafka {self.what} does not support {what} (API {request.API_KEY}): client quotas through the "
                "admin API need Kafka 2.6 or later; use --zookeeper for older ZooKeeper-mode clusters"
            ) from None
        except Errors.KafkaTimeoutError:
            raise BackendUnavailable(
                f"Kafka {self.what} did not answer {what} within {self.request_timeout:g}s (raise --timeout?)"
            ) from None
        except Errors.KafkaError as e:
            raise BackendUnavailable(f"{what} to Kafka {self.what} failed: {_short(e)}") from None

    def describe(self, components: Sequence[WireComponent], strict: bool) -> list[tuple[WireEntity, dict[str, float]]]:
        C = DescribeClientQuotasRequest.ComponentData
        req = DescribeClientQuotasRequest(
            components=[C(entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict
        )
        log.debug("DescribeClientQuotas components=%s strict=%s", list(components), strict)
        resp = self._send(req, "DescribeClientQuotas")
        if resp.error_code:
            err = Errors.for_code(resp.error_code)
            raise QuotaError(f"{_error_name(err)}: {resp.error_message or err.description}")
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
        log.info("AlterClientQuotas %d entries validate_only=%s", len(entries), validate_only)
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

    # -- broker configs (the cluster-wide default broker resource, which librdkafka cannot address) --------

    def broker_configs(self, resource: str) -> dict[str, tuple[str | None, str]]:
        """DescribeConfigs of one BROKER resource (``""`` = the cluster-wide default): {name: (value, source)}."""
        R = DescribeConfigsRequest.DescribeConfigsResource
        req = DescribeConfigsRequest(
            resources=[R(resource_type=BROKER_RESOURCE, resource_name=resource, configuration_keys=None)],
            include_synonyms=False,
            include_documentation=False,
        )
        resp = self._send(req, "DescribeConfigs")
        [result] = resp.results
        if result.error_code:
            err = Errors.for_code(result.error_code)
            raise QuotaError(f"DescribeConfigs: {_error_name(err)}: {result.error_message or err.description}")
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
        resp = self._send(req, "IncrementalAlterConfigs")
        [result] = resp.responses
        if result.error_code:
            err = Errors.for_code(result.error_code)
            raise QuotaError(f"{_error_name(err)}: {result.error_message or err.description}")

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


def _error_name(err: type) -> str:
    """``InvalidRequestError`` -> ``INVALID_REQUEST`` (Kafka's own error names)."""
    name = getattr(err, "message", None) or err.__name__
    return str(name)


def _short(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0][:200]
