"""Which cluster to talk to, and how: flags > environment > context, then open the right backend.

Backends are imported here, lazily, so a command only pays for the client library it uses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kquotactl.errors import UsageError

if TYPE_CHECKING:
    from kquotactl.backends import QuotaBackend
    from kquotactl.backends.zookeeper import TlsSettings

ENV_ZOOKEEPER = "KQUOTACTL_ZOOKEEPER"
ENV_BOOTSTRAP = "KQUOTACTL_BOOTSTRAP_SERVER"
ENV_COMMAND_CONFIG = "KQUOTACTL_COMMAND_CONFIG"
ENV_ZK_AUTH = "KQUOTACTL_ZK_AUTH"


@dataclass
class ConnectionOptions:
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    bootstrap_controller: str | None = None
    command_config: str | None = None
    connect_timeout: float = 10.0
    timeout: float = 30.0
    zk_auth: list[str] = field(default_factory=list)
    zk_sasl_jaas: str | None = None
    zk_tls_config_file: str | None = None
    zk_acl: str = "open"
    allow_no_brokers: bool = False  # write into a ZooKeeper chroot without /brokers (a cluster not started yet)

    def __repr__(self) -> str:  # zk_auth holds passwords
        return (
            f"ConnectionOptions(zookeeper={self.zookeeper!r}, bootstrap_server={self.bootstrap_server!r}, "
            f"bootstrap_controller={self.bootstrap_controller!r})"
        )

    @property
    def target(self) -> str:
        return self.zookeeper or self.bootstrap_server or self.bootstrap_controller or "?"

    def with_env(self, env: Mapping[str, str] | None = None) -> ConnectionOptions:
        """Fill what flags left empty from the environment (flags win)."""
        env = os.environ if env is None else env
        out = self
        if not (self.zookeeper or self.bootstrap_server or self.bootstrap_controller):
            if env.get(ENV_ZOOKEEPER):
                out = replace(out, zookeeper=env[ENV_ZOOKEEPER])
            elif env.get(ENV_BOOTSTRAP):
                out = replace(out, bootstrap_server=env[ENV_BOOTSTRAP])
        if not out.command_config and env.get(ENV_COMMAND_CONFIG):
            out = replace(out, command_config=env[ENV_COMMAND_CONFIG])
        if not out.zk_auth and env.get(ENV_ZK_AUTH):
            out = replace(out, zk_auth=[env[ENV_ZK_AUTH]])
        if not out.zk_sasl_jaas:
            m = re.search(r"-Djava\.security\.auth\.login\.config=(\S+)", env.get("KAFKA_OPTS", ""))
            if m and out.zookeeper:
                out = replace(out, zk_sasl_jaas=m.group(1))
        return out

    def check(self) -> ConnectionOptions:
        given = [
            n
            for n, v in (
                ("--zookeeper", self.zookeeper),
                ("--bootstrap-server", self.bootstrap_server),
                ("--bootstrap-controller", self.bootstrap_controller),
            )
            if v
        ]
        if not given:
            raise UsageError(
                "no cluster given: pass --zookeeper HOST:PORT[/chroot] or --bootstrap-server HOST:PORT "
                f"(or set {ENV_ZOOKEEPER} / {ENV_BOOTSTRAP}, or pick a context: --context NAME, "
                "KQUOTACTL_CONTEXT, or `kquotactl config use-context NAME`)"
            )
        if len(given) > 1:
            raise UsageError(
                f"Only one of --bootstrap-server, --bootstrap-controller or --zookeeper can be specified "
                f"(got {', '.join(given)})"
            )
        if self.zk_tls_config_file and not self.zookeeper:
            raise UsageError("Only the --zookeeper option can be used with the --zk-tls-config-file option.")
        if (self.zk_auth or self.zk_sasl_jaas or self.zk_acl != "open" or self.allow_no_brokers) and not self.zookeeper:
            raise UsageError("--zk-auth, --zk-sasl-jaas, --zk-acl and --allow-no-brokers apply to --zookeeper only")
        if self.command_config and self.zookeeper:
            raise UsageError("--command-config applies to --bootstrap-server/--bootstrap-controller only")
        return self


def unreachable(hosts: list[tuple[str, int]], timeout: float) -> str | None:
    """Why none of ``hosts`` can be reached, when that is certain at once; None when one accepts a connection
    or might still (no answer yet: the caller's own connect time-out decides).

    kazoo and Kafka clients retry a refused connection until their time-out and then report only "timed out";
    a plain TCP connect first tells "connection refused" and "unknown host" apart in milliseconds.
    """
    import socket

    causes: list[str] = []
    for host, port in hosts:
        where = f"{host}:{port}"
        try:
            addrs = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as e:
            causes.append(f"{where}: unknown host ({getattr(e, 'strerror', None) or e})")
            continue
        refused = []
        for family, kind, proto, _, addr in addrs:
            sock = socket.socket(family, kind, proto)
            sock.settimeout(min(timeout, 3.0))
            try:
                sock.connect(addr)
                return None
            except ConnectionRefusedError:
                refused.append("connection refused")
            except OSError as e:
                if isinstance(e, TimeoutError):
                    return None  # a firewall that drops packets, or a slow network: let the client wait
                refused.append(e.strerror or str(e))
            finally:
                sock.close()
        causes.append(f"{where}: {', '.join(dict.fromkeys(refused))}")
    if len(hosts) == 1:  # the caller names the address already
        return causes[0].split(": ", 1)[1]
    return "; ".join(causes)


def zk_settings(opts: ConnectionOptions):  # -> ZkSettings (kazoo-free import)
    from kquotactl.backends.zookeeper import ZkSettings

    digest: list[str] = []
    sasl: dict[str, str] | None = None
    for auth in opts.zk_auth:
        scheme, _, cred = auth.partition(":")
        if scheme == "digest" and ":" in cred:
            digest.append(cred)
        elif scheme == "sasl" and ":" in cred:
            user, _, password = cred.partition(":")
            sasl = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
        else:
            raise UsageError("--zk-auth must be digest:USER:PASSWORD or sasl:USER:PASSWORD")
    if opts.zk_sasl_jaas:
        from kquotactl.jaas import read_section, zookeeper_sasl_options

        sasl = zookeeper_sasl_options(read_section(opts.zk_sasl_jaas, "Client"))
    tls = zk_tls_settings(opts.zk_tls_config_file) if opts.zk_tls_config_file else None
    if opts.zk_acl not in ("open", "secure"):
        raise UsageError("--zk-acl must be 'open' or 'secure'")
    return ZkSettings(
        connect=opts.zookeeper or "",
        connect_timeout=opts.connect_timeout,
        op_timeout=opts.timeout,
        digest_auth=digest,
        sasl=sasl,
        tls=tls,
        secure_acl=opts.zk_acl == "secure",
        allow_no_brokers=opts.allow_no_brokers,
    )


def zk_tls_settings(path: str) -> TlsSettings:
    """Kafka's ``zookeeper.ssl.*`` client properties (``--zk-tls-config-file``), PEM stores only."""
    from kquotactl.backends.zookeeper import TlsSettings
    from kquotactl.grammar import load_properties

    if not os.path.isfile(path):
        raise UsageError(f"--zk-tls-config-file {path}: no such file (a properties file with zookeeper.ssl.* keys)")
    props = load_properties(path)

    def get(name: str) -> str | None:
        return props.get("zookeeper." + name) or props.get(name)

    known = {
        "ssl.client.enable",
        "clientCnxnSocket",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "ssl.endpoint.identification.enable",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.cipher.suites",
        "ssl.crl.enable",
        "ssl.ocsp.enable",
        "ssl.hostnameVerification",
    }
    unknown = sorted(k for k in props if k.removeprefix("zookeeper.") not in known)
    if unknown:
        raise UsageError(f"{path}: unknown ZooKeeper TLS properties: {', '.join(unknown)}")
    if (get("ssl.client.enable") or "true").lower() != "true":
        raise UsageError(f"{path}: zookeeper.ssl.client.enable is not true")
    for store in ("keystore", "truststore"):
        stype = (get(f"ssl.{store}.type") or "").upper()
        loc = get(f"ssl.{store}.location")
        if loc and stype not in ("PEM", "") and not loc.endswith((".pem", ".crt")):
            raise UsageError(
                f"{path}: zookeeper.ssl.{store}.type {stype or 'JKS'} is not supported: convert the store to PEM "
                f"(e.g. openssl pkcs12 -in store.p12 -out store.pem -nodes) and set zookeeper.ssl.{store}.type=PEM"
            )
        if loc and not os.path.exists(loc):
            raise UsageError(f"{path}: zookeeper.ssl.{store}.location {loc} does not exist")
    verify_host = get("ssl.endpoint.identification.enable") or get("ssl.hostnameVerification") or "true"
    return TlsSettings(
        ca=get("ssl.truststore.location"),
        certfile=get("ssl.keystore.location"),
        # the PEM key store holds the key and the certificate; kazoo sends no client certificate without a keyfile
        keyfile=get("ssl.keystore.location"),
        keyfile_password=get("ssl.keystore.password"),
        verify_certs=True,
        check_hostname=verify_host.lower() == "true",
    )


def open_backend(opts: ConnectionOptions) -> QuotaBackend:
    opts = opts.check()
    if opts.zookeeper:
        from kquotactl.backends.zookeeper import ZooKeeperBackend

        return ZooKeeperBackend(zk_settings(opts))
    try:
        from kquotactl.backends.admin import open_admin_backend  # type: ignore[import-not-found]
    except ImportError as e:
        if "kquotactl.backends.admin" in str(e):
            raise UsageError(
                "the broker admin API backend (--bootstrap-server) is not available in this build"
            ) from None
        raise UsageError(
            f"--bootstrap-server needs the Kafka client library: pip install 'kquotactl[admin]' ({e})"
        ) from None
    return open_admin_backend(opts)
