"""The node's own PKI: a CA, the serving certificate, an admin client certificate and token.

Without --tls-cert-file the real kubelet self-signs a serving certificate whose only SAN is the
hostname, which is why metrics-server needs --kubelet-insecure-tls. We generate a small CA
instead, sign a serving certificate with SANs for the hostname, localhost, 127.0.0.1, ::1 and the
node IPs, and an admin client certificate (O=system:masters) plus a token for curl and kubectl.

Files are reused across restarts; an unreadable, expired, soon-expiring or mismatched file is
regenerated with a log line that says why. Private keys are written 0600, atomically.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubeletapi.pkifiles import (
    ADMIN_GROUP,
    ADMIN_USER,
    RENEW_BEFORE,
    IPAddress,
    NodePKI,
    read_admin_token,
    serving_names,
    token_file_ok,
    write_private,
)

# the files' names and the checks without cryptography live in pkifiles; these stay importable here
__all__ = ["ADMIN_GROUP", "ADMIN_USER", "RENEW_BEFORE", "NodePKI", "ensure_pki", "read_admin_token", "serving_sans",
           "write_private"]

log = logging.getLogger(__name__)

CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=365)


@dataclass(frozen=True)
class _Pair:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def ensure_pki(
    pki: NodePKI,
    hostname: str,
    node_ips: Sequence[IPAddress],
    now: dt.datetime,
    write_token: bool = True,
) -> None:
    """Create or repair every file of `pki`; leave valid files untouched."""
    pki.cert_dir.mkdir(parents=True, exist_ok=True)
    ca, reason = _load_ca(pki, now)
    if ca is None:
        log.info("Generating node CA in %s: %s", pki.cert_dir, reason)
        ca = _new_ca(hostname, now)
        _write_pair(ca, pki.ca_crt, pki.ca_key)
    sans = serving_sans(hostname, node_ips)
    reason = _leaf_problem(pki.serving_crt, pki.serving_key, ca, now, sans)
    if reason:
        log.info("Generating serving certificate %s: %s", pki.serving_crt, reason)
        leaf = _new_leaf(ca, f"{hostname}@{int(now.timestamp())}", (), now, sans)
        _write_pair(leaf, pki.serving_crt, pki.serving_key, chain=ca.cert)
    reason = _leaf_problem(pki.admin_crt, pki.admin_key, ca, now, None)
    if reason:
        log.info("Generating admin client certificate %s: %s", pki.admin_crt, reason)
        admin = _new_leaf(ca, ADMIN_USER, (ADMIN_GROUP,), now, None)
        _write_pair(admin, pki.admin_crt, pki.admin_key)
    if write_token and not token_file_ok(pki.tokens):
        log.info("Generating admin token file %s", pki.tokens)
        token = secrets.token_urlsafe(32)
        write_private(pki.tokens, f'{token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n'.encode())


def serving_sans(hostname: str, node_ips: Sequence[IPAddress]) -> list[x509.GeneralName]:
    """SANs of the serving certificate (pkifiles.serving_names) as x509 names."""
    return [x509.DNSName(n) if isinstance(n, str) else x509.IPAddress(n) for n in serving_names(hostname, node_ips)]


def _load_pair(crt: Path, key: Path) -> tuple[_Pair | None, str]:
    try:
        certs = x509.load_pem_x509_certificates(crt.read_bytes())
        private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    except FileNotFoundError as exc:
        return None, f"{exc.filename} does not exist"
    except (OSError, ValueError) as exc:
        return None, f"cannot read {crt.name}/{key.name}: {exc}"
    if not isinstance(private, ec.EllipticCurvePrivateKey):
        return None, f"{key} is not an ECDSA key"
    if certs[0].public_key() != private.public_key():
        return None, f"{key} does not match {crt}"
    return _Pair(certs[0], private), ""


def _expiry_problem(cert: x509.Certificate, now: dt.datetime, margin: dt.timedelta) -> str:
    if now < cert.not_valid_before_utc:
        return f"not valid before {cert.not_valid_before_utc.isoformat()}"
    if now >= cert.not_valid_after_utc:
        return f"expired at {cert.not_valid_after_utc.isoformat()}"
    if now + margin >= cert.not_valid_after_utc:
        return f"expires soon, at {cert.not_valid_after_utc.isoformat()}"
    return ""


def _load_ca(pki: NodePKI, now: dt.datetime) -> tuple[_Pair | None, str]:
    pair, reason = _load_pair(pki.ca_crt, pki.ca_key)
    if pair is None:
        return None, reason
    problem = _expiry_problem(pair.cert, now, RENEW_BEFORE)
    return (None, f"CA {problem}") if problem else (pair, "")


def _leaf_problem(
    crt: Path, key: Path, ca: _Pair, now: dt.datetime, sans: list[x509.GeneralName] | None
) -> str:
    pair, reason = _load_pair(crt, key)
    if pair is None:
        return reason
    try:
        pair.cert.verify_directly_issued_by(ca.cert)
    except (ValueError, TypeError, InvalidSignature):
        return "not signed by the current CA"
    problem = _expiry_problem(pair.cert, now, RENEW_BEFORE)
    if problem:
        return problem
    if sans is not None:
        have = pair.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        missing = [str(n.value) for n in sans if n not in have]
        if missing:
            return f"SANs lack {', '.join(missing)}"
    return ""


def _key_usage(signs_certificates: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
        key_agreement=False, key_cert_sign=signs_certificates, crl_sign=signs_certificates,
        encipher_only=False, decipher_only=False,
    )


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _new_ca(hostname: str, now: dt.datetime) -> _Pair:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hostname}-ca@{int(now.timestamp())}")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(signs_certificates=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _Pair(cert, key)


def _new_leaf(
    ca: _Pair,
    common_name: str,
    organizations: Sequence[str],
    now: dt.datetime,
    sans: list[x509.GeneralName] | None,
) -> _Pair:
    key = _new_key()
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    usage = ExtendedKeyUsageOID.SERVER_AUTH if sans is not None else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(min(now + LEAF_VALIDITY, ca.cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(signs_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False
        )
    )
    if sans is not None:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return _Pair(builder.sign(ca.key, hashes.SHA256()), key)


def _write_pair(pair: _Pair, crt: Path, key: Path, chain: x509.Certificate | None = None) -> None:
    key_pem = pair.key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    cert_pem = pair.cert.public_bytes(serialization.Encoding.PEM)
    if chain is not None:
        cert_pem += chain.public_bytes(serialization.Encoding.PEM)
    write_private(key, key_pem)
    crt.write_bytes(cert_pem)
    os.chmod(crt, 0o644)
