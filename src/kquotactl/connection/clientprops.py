"""``--command-config``: the Java client properties operators already pass to kafka-configs, read into
the few settings kquotactl's Kafka client needs. Pure: no network, no client library.

Supported: ``security.protocol``, ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256/512), ``sasl.jaas.config``
(PlainLoginModule / ScramLoginModule with username and password), PEM trust/key stores
(``ssl.truststore.location``/``ssl.keystore.location`` with ``.type=PEM``, ``ssl.key.password``),
``ssl.endpoint.identification.algorithm``, ``client.id``, ``request.timeout.ms``,
``default.api.timeout.ms``. Anything that would silently change behaviour if ignored (JKS stores, GSSAPI,
OAuth, custom callback handlers) is refused with a message saying what to use instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kquotactl.core.errors import UsageError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

# Accepted and not needed by a one-shot admin call (they tune Java client internals).
IGNORED = frozenset(
    {
        "bootstrap.servers",  # kafka-configs overrides it with --bootstrap-server too
        "bootstrap.controllers",
        "retries",
        "retry.backoff.ms",
        "retry.backoff.max.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "connections.max.idle.ms",
        "metadata.max.age.ms",
        "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
        "client.dns.lookup",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.cipher.suites",
        "ssl.truststore.type",
        "ssl.keystore.type",
        "ssl.truststore.password",  # PEM trust stores have no password
        "ssl.keystore.password",  # PEM key stores: the key password is ssl.key.password
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.buffer.seconds",
        "metrics.num.samples",
        "metrics.sample.window.ms",
        "metrics.recording.level",
        "metric.reporters",
        "auto.include.jmx.reporter",
        "enable.metrics.push",
    }
)


@dataclass(frozen=True)
class ClientSettings:
    """How to reach and authenticate to brokers. ``__repr__`` never shows the password."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_password: str | None = None
    ssl_check_hostname: bool = True
    client_id: str = "kquotactl"
    request_timeout: float | None = None  # seconds, from request.timeout.ms (--timeout wins when given)

    def __repr__(self) -> str:
        return (
            f"ClientSettings(security_protocol={self.security_protocol!r}, sasl_mechanism={self.sasl_mechanism!r}, "
            f"sasl_username={self.sasl_username!r}, ssl_cafile={self.ssl_cafile!r}, client_id={self.client_id!r})"
        )

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")


def kafka_python_config(bootstrap: str, s: ClientSettings, request_timeout: float) -> dict[str, object]:
    """The one mapping from client settings to the admin client's configuration (kafka-python's keyword names).

    Every admin command (quotas, broker configs, cluster metadata) connects with exactly these settings.
    """
    return {
        "bootstrap_servers": bootstrap,
        "client_id": s.client_id,
        "request_timeout_ms": int(request_timeout * 1000),
        "security_protocol": s.security_protocol,
        "sasl_mechanism": s.sasl_mechanism,
        "sasl_plain_username": s.sasl_username,
        "sasl_plain_password": s.sasl_password,
        "ssl_cafile": s.ssl_cafile,
        # one PEM file with the certificate and its key, as Java's PEM key stores are
        "ssl_certfile": s.ssl_certfile,
        "ssl_password": s.ssl_password,
        "ssl_check_hostname": s.ssl_check_hostname,
        "reconnect_backoff_ms": 50,
        "reconnect_backoff_max_ms": 500,
    }


def librdkafka_config(bootstrap: str, s: ClientSettings, client_id: str) -> dict[str, object]:
    """The same settings as a librdkafka (confluent-kafka) client's configuration: ``verify --drive``'s producer
    authenticates exactly as the admin client does, under its own ``client_id``."""
    out: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "security.protocol": s.security_protocol.lower(),
    }
    if s.uses_sasl:
        out.update(
            {"sasl.mechanism": s.sasl_mechanism, "sasl.username": s.sasl_username, "sasl.password": s.sasl_password}
        )
    if s.uses_ssl:
        if s.ssl_cafile:
            out["ssl.ca.location"] = s.ssl_cafile
        if s.ssl_certfile:  # one PEM file with the certificate and its key
            out["ssl.certificate.location"] = s.ssl_certfile
            out["ssl.key.location"] = s.ssl_certfile
        if s.ssl_password:
            out["ssl.key.password"] = s.ssl_password
        out["ssl.endpoint.identification.algorithm"] = "https" if s.ssl_check_hostname else "none"
    return out


def parse_client_properties(props: Mapping[str, str], source: str = "--command-config") -> ClientSettings:
    """Read Java client properties; raise :class:`UsageError` naming the property and the fix."""
    from kquotactl.connection.jaas import parse_module

    def get(name: str) -> str | None:
        v = props.get(name)
        return v.strip() if isinstance(v, str) else None

    protocol = (get("security.protocol") or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise UsageError(f"{source}: security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}")

    mechanism = (get("sasl.mechanism") or "GSSAPI").upper() if protocol.startswith("SASL_") else None
    user = password = None
    if mechanism is not None:
        if mechanism not in MECHANISMS:
            raise UsageError(
                f"{source}: sasl.mechanism={mechanism} is not supported (use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                + ("; Kafka's default is GSSAPI when sasl.mechanism is not set" if not get("sasl.mechanism") else "")
                + ")"
            )
        jaas = get("sasl.jaas.config")
        if not jaas:
            raise UsageError(
                f"{source}: sasl.jaas.config is required with {protocol}/{mechanism} (e.g. "
                'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";)'
            )
        module = parse_module(jaas)
        expected = "PlainLoginModule" if mechanism == "PLAIN" else "ScramLoginModule"
        if not module.class_name.endswith(expected):
            raise UsageError(f"{source}: sasl.mechanism={mechanism} needs {expected} in sasl.jaas.config")
        user, password = module.options.get("username"), module.options.get("password")
        if not user or password is None:
            raise UsageError(f"{source}: sasl.jaas.config lacks username or password")

    cafile = certfile = key_password = None
    check_hostname = True
    if protocol in ("SSL", "SASL_SSL"):
        for store in ("truststore", "keystore"):
            stype = (get(f"ssl.{store}.type") or "JKS").upper()
            loc = get(f"ssl.{store}.location")
            if get(f"ssl.{store}.certificates") or (store == "keystore" and get("ssl.keystore.key")):
                raise UsageError(
                    f"{source}: inline PEM (ssl.{store}.certificates / ssl.keystore.key) is not supported: put the PEM "
                    f"in a file and set ssl.{store}.location=FILE with ssl.{store}.type=PEM"
                )
            if not loc:
                continue
            if stype != "PEM":
                raise UsageError(
                    f"{source}: ssl.{store}.type={stype} is not supported: convert the store to PEM (keytool "
                    f"-importkeystore -deststoretype PKCS12, then openssl pkcs12 -in store.p12 -out store.pem -nodes) "
                    f"and set ssl.{store}.type=PEM"
                )
            if not os.path.exists(loc):
                raise UsageError(f"{source}: ssl.{store}.location {loc} does not exist")
            if store == "truststore":
                cafile = loc
            else:
                certfile = loc
        key_password = get("ssl.key.password")
        algo = props.get("ssl.endpoint.identification.algorithm")
        check_hostname = algo is None or algo.strip().lower() == "https"

    timeout = None
    for name in ("request.timeout.ms", "default.api.timeout.ms"):
        raw = get(name)
        if raw:
            try:
                ms = int(raw)
            except ValueError:
                raise UsageError(f"{source}: {name}={raw} is not a whole number of milliseconds") from None
            if ms <= 0:
                raise UsageError(f"{source}: {name} must be greater than 0")
            timeout = ms / 1000 if timeout is None else min(timeout, ms / 1000)

    unsupported = sorted(
        k
        for k in props
        if k.startswith(("sasl.kerberos.", "sasl.oauthbearer.", "sasl.login.callback", "sasl.client.callback"))
        or k
        in ("sasl.login.class", "ssl.engine.factory.class", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm")
    )
    if unsupported:
        raise UsageError(
            f"{source}: {', '.join(unsupported)} not supported (kquotactl speaks PLAIN and SCRAM over PEM TLS)"
        )
    return ClientSettings(
        security_protocol=protocol,
        sasl_mechanism=mechanism,
        sasl_username=user,
        sasl_password=password,
        ssl_cafile=cafile,
        ssl_certfile=certfile,
        ssl_password=key_password,
        ssl_check_hostname=check_hostname,
        client_id=get("client.id") or "kquotactl",
        request_timeout=timeout,
    )


def unknown_properties(props: Mapping[str, str]) -> list[str]:
    """Properties kquotactl neither uses nor knows to be harmless (reported as a warning, like Java clients)."""
    used = {
        "security.protocol",
        "sasl.mechanism",
        "sasl.jaas.config",
        "ssl.truststore.location",
        "ssl.keystore.location",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "client.id",
        "request.timeout.ms",
        "default.api.timeout.ms",
    }
    return sorted(k for k in props if k not in used and k not in IGNORED)


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a Java ``.properties`` file (``--add-config-file``, ``--command-config``, TLS configs)."""
    from jproperties import Properties  # small, but only needed on this path

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read properties file {str(p)!r}: {e.strerror or e}") from None
    props = Properties()
    try:
        props.load(data, "iso-8859-1")
    except Exception as e:  # jproperties raises a variety of parse errors
        raise UsageError(f"cannot parse properties file {str(p)!r}: {e}") from None
    return {k: v.data for k, v in props.items()}


def load_client_settings(path: str, given: str | None = None) -> tuple[ClientSettings, list[str]]:
    """Read a ``--command-config`` file: the settings, and warnings for properties that were ignored. ``given``: how
    the user named the file (``--command-config PATH``, ``KQUOTACTL_COMMAND_CONFIG=PATH``, ...)."""
    given = given or f"--command-config {path}"
    if not os.path.exists(path):
        raise UsageError(f"{given}: no such file")
    props = load_properties(path)
    settings = parse_client_properties(props, given)
    ignored = unknown_properties(props)
    warnings = [f"{given}: ignoring unknown properties: {', '.join(ignored)}"] if ignored else []
    return settings, warnings
