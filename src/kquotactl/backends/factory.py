"""Which cluster to talk to, and how: flags > environment > context, then open the right backend.

Backends are imported here, lazily, so a command only pays for the client library it uses.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kquotactl.connection.cluster import (
    ConnectionOptions,
)
from kquotactl.core.errors import UsageError

if TYPE_CHECKING:
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.backends.zookeeper.session import TlsSettings, ZkSettings


def zk_settings(opts: ConnectionOptions) -> ZkSettings:
    from kquotactl.backends.zookeeper.session import ZkSettings

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
            raise UsageError(f"{opts.said('zk_auth')} must be digest:USER:PASSWORD or sasl:USER:PASSWORD")
    if opts.zk_sasl_jaas:
        from kquotactl.connection.jaas import read_section, zookeeper_sasl_options

        sasl = zookeeper_sasl_options(read_section(opts.zk_sasl_jaas, "Client"))
    tls = zk_tls_settings(opts.zk_tls_config_file, opts.said("zk_tls_config_file")) if opts.zk_tls_config_file else None
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
        source=opts.sources.get("zookeeper", ""),
    )


def zk_tls_settings(path: str, given: str = "--zk-tls-config-file") -> TlsSettings:
    """Kafka's ``zookeeper.ssl.*`` client properties (``--zk-tls-config-file``), PEM stores only."""
    from kquotactl.backends.zookeeper.session import TlsSettings
    from kquotactl.connection.clientprops import load_properties

    if not os.path.isfile(path):
        raise UsageError(f"{given} {path}: no such file (a properties file with zookeeper.ssl.* keys)")
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
    """The backend ``opts`` name, connected. Its client threads start with SIGINT and SIGTERM blocked, so that
    Ctrl-C reaches the main thread (:func:`kquotactl.backends.base.signals_held`)."""
    from kquotactl.backends.base import signals_held

    with signals_held():
        return _open_backend(opts.check())


def _open_backend(opts: ConnectionOptions) -> QuotaBackend:
    if opts.zookeeper:
        from kquotactl.backends.zookeeper.backend import ZooKeeperBackend

        return ZooKeeperBackend(zk_settings(opts))
    try:
        from kquotactl.backends.kafka.quotas import open_admin_backend
    except ImportError as e:
        if "kquotactl.backends.kafka.quotas" in str(e):
            raise UsageError(
                "the broker admin API backend (--bootstrap-server) is not available in this build"
            ) from None
        raise UsageError(
            f"--bootstrap-server needs the Kafka client library: pip install 'kquotactl[admin]' ({e})"
        ) from None
    return open_admin_backend(opts)
