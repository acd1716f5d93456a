"""TLS for the secure listener: the server context, the TLS protocol and the ASGI TLS extension.

server_context() applies tlsMinVersion and tlsCipherSuites (config/tlsnames.py: the kubelet's Go
names, mapped to OpenSSL's). As Go, the configured suites are preferred in Go's order whatever
order they are listed in, TLS 1.3 suites are not configurable, and with tlsMinVersion
VersionTLS13 the list is ignored (logged, as the kubelet does). Suites this OpenSSL cannot offer
(RC4, 3DES) are left out with a warning; when no TLS 1.2 suite is left, only TLS 1.3 is served,
which is what Go does with such a list. VersionTLS10 and VersionTLS11 are honoured: OpenSSL 3
negotiates them only at security level 0, so that level is set for them.

ServingContext holds the secure listener's current context: a rotated serving certificate gets a
fresh context (an SSLContext cannot swap its certificate chain safely in place), which every new
connection takes; open connections keep the context they began with, so none is dropped.

TLSProtocol is asyncio's TLS protocol with one fix: when a handshake fails (a client certificate
refused, a protocol version or cipher not allowed) asyncio drops the connection without sending
the alert OpenSSL prepared; here it is sent first, as Go does, so the client's error names the
reason (e.g. "tlsv1 alert unknown ca", "tlsv1 alert protocol version").

uvicorn does not put the peer certificate in the ASGI scope. with_tls_extension() computes the ASGI
"tls" extension once per connection (from the transport's SSL object) and wraps the app for that
connection so every request or WebSocket scope carries scope["extensions"]["tls"] with
`client_cert_chain` (PEM, leaf first), `client_cert_name`, `tls_version` and `cipher_suite`.

Client certificates are requested and, when presented, verified against the client CA during the
handshake (ssl.CERT_OPTIONAL). Go's kubelet instead accepts any certificate in the handshake and
answers 401 later; Python's ssl module cannot request a certificate without verifying it, so a
certificate from another CA, or an expired one, fails the handshake here (OpenSSL also checks
the clientAuth purpose). The x509 authenticator therefore trusts a chain that reached it and
only re-checks the validity window.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import warnings
from asyncio.sslproto import SSLProtocol
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from kubeletapi.config.tlsnames import CipherSuite, go_defaults, suites, tls_problems
from kubeletapi.errors import StartupError

log = logging.getLogger(__name__)

# tlsMinVersion -> the context's minimum; "" is TLS 1.2 (Go's crypto/tls server default).
TLS_VERSIONS = {
    "": ssl.TLSVersion.TLSv1_2,
    "VersionTLS10": ssl.TLSVersion.TLSv1,
    "VersionTLS11": ssl.TLSVersion.TLSv1_1,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
_WIRE_VERSIONS = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}
# ssl's getpeercert() names -> RFC 4514 short names.
_RDN_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
}


def server_context(
    cert_file: Path, key_file: Path, client_ca: Path | None, min_version: str = "",
    cipher_suites: Sequence[str] = (),
) -> ssl.SSLContext:
    """A TLS server context; StartupError names the file or the setting that cannot be used."""
    problems = tls_problems(cipher_suites, min_version)
    if problems:
        raise StartupError("invalid configuration: " + "; ".join(f"{p.fields[0]}: {p.message}" for p in problems))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _apply_protocol(ctx, min_version, cipher_suites)
    for path in (cert_file, key_file):
        try:
            path.read_bytes()
        except OSError as exc:
            raise StartupError(f"cannot read TLS file {path}: {exc.strerror}") from exc
    try:
        ctx.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, ValueError) as exc:
        raise StartupError(f"cannot load TLS certificate {cert_file} with key {key_file}: {exc}") from exc
    if client_ca is not None:
        try:
            ctx.load_verify_locations(cafile=str(client_ca))
        except (OSError, ssl.SSLError) as exc:
            raise StartupError(f"cannot read client CA file {client_ca}: {exc}") from exc
        ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.options |= ssl.OP_NO_COMPRESSION
    return ctx


class ServingContext:
    """The secure listener's context, replaced by load() when the serving certificate changes."""

    def __init__(self, cert_file: Path, key_file: Path, client_ca: Path | None, min_version: str = "",
                 cipher_suites: Sequence[str] = ()) -> None:
        self._client_ca = client_ca
        self._min_version = min_version
        self._cipher_suites = tuple(cipher_suites)
        self.current = server_context(cert_file, key_file, client_ca, min_version, cipher_suites)

    def load(self, cert_file: Path, key_file: Path) -> None:
        """New handshakes present this certificate; StartupError (the old one stays) if it
        cannot be loaded."""
        self.current = server_context(cert_file, key_file, self._client_ca, self._min_version, self._cipher_suites)

    def __call__(self) -> ssl.SSLContext:
        return self.current


def _apply_protocol(ctx: ssl.SSLContext, min_version: str, names: Sequence[str]) -> None:
    """tlsMinVersion, then tlsCipherSuites, onto a fresh context."""
    minimum = TLS_VERSIONS[min_version]
    legacy = minimum < ssl.TLSVersion.TLSv1_2
    with warnings.catch_warnings():  # ssl deprecates the TLSv1 and TLSv1_1 members themselves
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx.minimum_version = minimum
    if minimum == ssl.TLSVersion.TLSv1_3:
        if names:
            log.info("Warning: TLS 1.3 cipher suites are not configurable, ignoring --tls-cipher-suites")
        return
    if not names and not legacy:
        return  # OpenSSL's defaults, as before
    # Without a list, TLS 1.0/1.1 get Go's default suites (its secure ones), which they can use.
    chosen = suites(names) if names else go_defaults()
    for suite in chosen:
        if suite.insecure:
            log.info("Use of insecure cipher detected. cipher=%s", suite.go_name)
    usable = [s for s in chosen if s.openssl_name and _available(s)]
    missing = [s.go_name for s in chosen if s.openssl_name and s not in usable]
    if missing:
        log.warning("tlsCipherSuites: %s not available in %s, left out", ", ".join(missing), ssl.OPENSSL_VERSION)
    if not usable:
        log.warning("tlsCipherSuites has no TLS 1.2 suite this server can use: only TLS 1.3 clients can connect")
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        return
    ctx.set_ciphers(":".join(s.openssl_name for s in usable) + (":@SECLEVEL=0" if legacy else ""))


def _available(suite: CipherSuite) -> bool:
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        probe.set_ciphers(suite.openssl_name + ":@SECLEVEL=0")
    except ssl.SSLError:
        return False
    return True


class TLSProtocol(SSLProtocol):
    """asyncio's server-side TLS protocol, sending the alert of a failed handshake before closing."""

    def __init__(self, app_protocol: asyncio.BaseProtocol, ctx: ssl.SSLContext, handshake_timeout_s: float) -> None:
        # typeshed wants a waiter Future and an int timeout; asyncio takes None and any positive number.
        super().__init__(asyncio.get_running_loop(), app_protocol, ctx, None,  # type: ignore[arg-type]
                         server_side=True, ssl_handshake_timeout=handshake_timeout_s)  # type: ignore[arg-type]

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        if handshake_exc is not None:
            self._process_outgoing()  # type: ignore[attr-defined] # writes what OpenSSL queued: the alert
        super()._on_handshake_complete(handshake_exc)

    def _do_shutdown(self) -> None:
        """Close as Go's tls.Conn.Close does: send close_notify, then close the socket once what is
        queued is written, without waiting for the peer's close_notify. asyncio waits for it (up to
        30 s); a client keeping an idle pooled connection never sends it, so at stop every idle TLS
        keep-alive connection held uvicorn's graceful shutdown until its timeout."""
        super()._do_shutdown()  # type: ignore[misc]
        if self._shutdown_timeout_handle is not None:  # type: ignore[attr-defined] # the peer's awaited
            self._on_shutdown_complete(None)  # type: ignore[attr-defined]


def tls_extension(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    """The ASGI TLS extension dict for a connection, or None on a plain connection."""
    sslobj = transport.get_extra_info("ssl_object")
    if sslobj is None:
        return None
    der = sslobj.getpeercert(binary_form=True)
    chain = [ssl.DER_cert_to_PEM_cert(der)] if der else []
    name = None
    if der:
        subject = sslobj.getpeercert().get("subject", ())
        name = ",".join(f"{_RDN_NAMES.get(k, k)}={v}" for rdn in reversed(subject) for k, v in rdn)
    cipher = sslobj.cipher()
    return {
        "server_cert": None,
        "client_cert_chain": chain,
        "client_cert_name": name,
        "client_cert_error": None,
        "tls_version": _WIRE_VERSIONS.get(sslobj.version() or ""),
        "cipher_suite": None if cipher is None else cipher[0],
    }


def with_tls_extension(app: ASGIApp, transport: asyncio.BaseTransport) -> ASGIApp:
    """`app` for one connection: with the TLS extension in every scope on a TLS connection."""
    ext = tls_extension(transport)
    return app if ext is None else _WithTLS(app, ext)


class _WithTLS:
    """Wraps the app of one connection to add the TLS extension to every scope."""

    __slots__ = ("app", "ext")

    def __init__(self, app: ASGIApp, ext: dict[str, Any]) -> None:
        self.app = app
        self.ext = ext

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["extensions"] = {**(scope.get("extensions") or {}), "tls": self.ext}
        await self.app(scope, receive, send)
