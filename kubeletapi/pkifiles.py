"""The node's PKI files (kubeletapi.pki makes them) and a check, with the ssl module only, that
the files a previous start left are all still good.

kubeletapi.pki needs cryptography (~10 MiB of mapped library, ~50 modules) to make and inspect
certificates. A node that restarts on good files needs neither: `current()` proves them with an
in-memory TLS handshake between the serving pair and the admin pair, each verified against the CA
by OpenSSL (the ssl module), and reads the validity and SANs OpenSSL decoded. It only answers
"nothing to do": any doubt (a file missing, unreadable, expired, short of a SAN, not verifiable,
or a clock that disagrees with the real time) returns False and ensure_pki decides, with its
messages, what to regenerate. So the check may be stricter than ensure_pki's, never looser.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeletapi.atomicfile import write_atomic

ADMIN_USER = "kubeletapi-admin"
ADMIN_GROUP = "system:masters"
# Regenerate a leaf this close to expiry: the kubernetes-mixin warns at 7 days.
RENEW_BEFORE = dt.timedelta(days=7)
# DER of the id-ecPublicKey algorithm identifier (1.2.840.10045.2.1) in a PKCS#8 key.
_EC_KEY_OID = bytes.fromhex("06072a8648ce3d0201")
_HANDSHAKE_ROUNDS = 8

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class NodePKI:
    """Where the generated material lives."""

    cert_dir: Path
    ca_crt: Path
    ca_key: Path
    serving_crt: Path
    serving_key: Path
    admin_crt: Path
    admin_key: Path
    tokens: Path
    kubeconfig: Path

    @classmethod
    def under(cls, cert_dir: Path) -> NodePKI:
        return cls(
            cert_dir=cert_dir,
            ca_crt=cert_dir / "ca.crt",
            ca_key=cert_dir / "ca.key",
            serving_crt=cert_dir / "kubelet.crt",
            serving_key=cert_dir / "kubelet.key",
            admin_crt=cert_dir / "admin.crt",
            admin_key=cert_dir / "admin.key",
            tokens=cert_dir / "tokens.csv",
            kubeconfig=cert_dir / "admin.kubeconfig",
        )


def serving_names(hostname: str, node_ips: Sequence[IPAddress]) -> list[str | IPAddress]:
    """SANs of the serving certificate: hostname, localhost and every loopback and node IP."""
    names: list[str | IPAddress] = []
    for name in dict.fromkeys([hostname, "localhost"]):
        try:
            names.append(ipaddress.ip_address(name))
        except ValueError:
            names.append(name)
    for ip in dict.fromkeys([ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"), *node_ips]):
        if ip not in names:
            names.append(ip)
    return names


def read_admin_token(path: Path) -> str:
    """The token of the first line of a generated tokens.csv."""
    return path.read_text().split(",", 1)[0].strip()


def token_file_ok(path: Path) -> bool:
    try:
        return bool(read_admin_token(path))
    except OSError:
        return False


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically with mode 0600."""
    write_atomic(path, data, mode=0o600)


def current(pki: NodePKI, hostname: str, node_ips: Sequence[IPAddress], now: dt.datetime,
            write_token: bool = True) -> bool:
    """True when ensure_pki would leave every file of `pki` untouched (see the module's doc)."""
    if write_token and not token_file_ok(pki.tokens):
        return False
    try:
        if not all(_ec_key(key) for key in (pki.ca_key, pki.serving_key, pki.admin_key)):
            return False
        ca = _ca_cert(pki, now)
        if ca is None:
            return False
        serving, admin = _handshake(pki)
    except (OSError, ssl.SSLError, ValueError):
        return False
    if not all(_valid(cert, now, RENEW_BEFORE) for cert in (ca, serving, admin)):
        return False
    have = {_san(kind, value) for kind, value in serving.get("subjectAltName", ())}
    return all(name in have for name in serving_names(hostname, node_ips))


def _ec_key(path: Path) -> bool:
    """A PKCS#8 PEM key of the EC algorithm, as pki writes them."""
    lines = path.read_text().split()
    if lines[:3] != ["-----BEGIN", "PRIVATE", "KEY-----"]:
        return False
    body = base64.b64decode("".join(lines[3:lines.index("-----END")]))
    return _EC_KEY_OID in body[:32]


def _ca_cert(pki: NodePKI, now: dt.datetime) -> dict[str, Any] | None:
    """The CA's decoded certificate, if its key matches it; None otherwise."""
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(pki.ca_crt, pki.ca_key)  # SSLError if not
    store = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    store.load_verify_locations(pki.ca_crt)
    cas = store.get_ca_certs()
    return cas[0] if len(cas) == 1 else None


def _handshake(pki: NodePKI) -> tuple[dict[str, Any], dict[str, Any]]:
    """A TLS handshake in memory: the serving pair as server, the admin pair as client, each
    verified against the CA. Returns the serving and the admin certificate as OpenSSL decoded them."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pki.serving_crt, pki.serving_key)
    server.load_verify_locations(pki.ca_crt)
    server.verify_mode = ssl.CERT_REQUIRED
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    client.load_verify_locations(pki.ca_crt)
    client.load_cert_chain(pki.admin_crt, pki.admin_key)
    serving, admin = _in_memory(server, client)
    if not admin:
        raise ValueError("the admin certificate was not verified")
    return serving, admin


def serving_not_after(crt: Path, key: Path) -> float | None:
    """When the certificate in `crt` (served with `key`) expires; None when it cannot be read
    (server_context() reports that). Read by OpenSSL, with the certificate as its own trust
    anchor; only when OpenSSL will not (expired, not the key's, not a serving certificate) by
    cryptography, which reads any date."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    client.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    try:
        server.load_cert_chain(crt, key)
        client.load_verify_locations(crt)
        cert, _ = _in_memory(server, client)
        return float(ssl.cert_time_to_seconds(cert["notAfter"]))
    except (OSError, ssl.SSLError, ValueError, KeyError):
        pass
    from cryptography import x509  # noqa: PLC0415 - see the docstring

    try:
        return x509.load_pem_x509_certificate(crt.read_bytes()).not_valid_after_utc.timestamp()
    except (OSError, ValueError):
        return None


def _in_memory(server: ssl.SSLContext, client: ssl.SSLContext) -> tuple[dict[str, Any], dict[str, Any]]:
    """Handshake `client` with `server` over memory buffers; the certificate each side verified
    of the other (the client's side raises if the server's was not)."""
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    ends = ((client.wrap_bio(c_in, c_out), c_out, s_in), (server.wrap_bio(s_in, s_out, server_side=True), s_out, c_in))
    done = [False, False]
    for _ in range(_HANDSHAKE_ROUNDS):
        for i, (end, out, peer_in) in enumerate(ends):
            if not done[i]:
                try:
                    end.do_handshake()
                    done[i] = True
                except ssl.SSLWantReadError:
                    pass
            peer_in.write(out.read())
        if all(done):
            break
    if not all(done):
        raise ValueError("the handshake did not complete")
    seen_by_client = ends[0][0].getpeercert()
    if not seen_by_client:
        raise ValueError("the server's certificate was not verified")
    return seen_by_client, ends[1][0].getpeercert() or {}


def _valid(cert: dict[str, Any], now: dt.datetime, margin: dt.timedelta) -> bool:
    not_before = ssl.cert_time_to_seconds(cert["notBefore"])
    not_after = ssl.cert_time_to_seconds(cert["notAfter"])
    stamp = now.timestamp()
    return not_before <= stamp and stamp + margin.total_seconds() < not_after


def _san(kind: str, value: str) -> str | IPAddress:
    if kind == "IP Address":
        return ipaddress.ip_address(value.strip())
    return value
