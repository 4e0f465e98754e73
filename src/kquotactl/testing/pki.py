"""A throw-away PKI for tests: a CA, and server / client certificates signed by it, as PEM files.

Generated with ``cryptography`` at test time (nothing checked in, nothing expires mid-run). Each leaf's
PEM bundle holds its unencrypted PKCS#8 key followed by its certificate, which is what ZooKeeper's and
Kafka's PEM key stores (``ssl.keystore.type=PEM``) and Python's ``ssl.load_cert_chain`` all read.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # cryptography loads when a PKI is made
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey


@dataclass(frozen=True)
class Leaf:
    """One certificate: ``bundle`` = key + certificate, ``cert`` and ``key`` separately."""

    bundle: Path
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    ca: Path  # the CA certificate (a PEM trust store)
    server: Leaf
    client: Leaf
    stranger: Leaf  # signed by another CA: must be refused


def _key() -> EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kq")])


def _cert(
    subject_key: EllipticCurvePrivateKey,
    cn: str,
    issuer_key: EllipticCurvePrivateKey,
    issuer_name: x509.Name | None,
    *,
    ca: bool,
    server: bool,
) -> x509.Certificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    now = dt.datetime.now(dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(issuer_name or _name(cn))
        .public_key(subject_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        b = b.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
    else:
        b = b.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        usages = (
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            if server
            else [ExtendedKeyUsageOID.CLIENT_AUTH]
        )
        b = b.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _write_leaf(directory: Path, name: str, key: EllipticCurvePrivateKey, cert: x509.Certificate) -> Leaf:
    from cryptography.hazmat.primitives import serialization

    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    leaf = Leaf(directory / f"{name}.pem", directory / f"{name}.crt", directory / f"{name}.key")
    leaf.bundle.write_bytes(key_pem + cert_pem)
    leaf.cert.write_bytes(cert_pem)
    leaf.key.write_bytes(key_pem)
    for p in (leaf.bundle, leaf.key):
        p.chmod(0o600)
    return leaf


def make_pki(directory: str | Path) -> Pki:
    """Generate a CA, a server certificate for 127.0.0.1/localhost, a client certificate, and a stranger's."""
    from cryptography.hazmat.primitives import serialization

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_cert = _cert(ca_key, "kquotactl test CA", ca_key, None, ca=True, server=False)
    (d / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    server_key, client_key = _key(), _key()
    server = _write_leaf(
        d, "server", server_key, _cert(server_key, "localhost", ca_key, ca_cert.subject, ca=False, server=True)
    )
    client = _write_leaf(
        d, "client", client_key, _cert(client_key, "kquotactl", ca_key, ca_cert.subject, ca=False, server=False)
    )
    other_ca = _key()
    stranger_key = _key()
    stranger = _write_leaf(
        d,
        "stranger",
        stranger_key,
        _cert(stranger_key, "stranger", other_ca, _name("other CA"), ca=False, server=False),
    )
    return Pki(ca=d / "ca.pem", server=server, client=client, stranger=stranger)
