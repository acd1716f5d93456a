"""TLS for the secure listener: the server context, the TLS protocol and the ASGI TLS extension.

TLSProtocol is asyncio's TLS protocol with one fix: when a handshake fails (a client certificate
refused, a protocol version or cipher not allowed) asyncio drops the connection without sending
the alert OpenSSL prepared; here it is sent first, as Go does, so the client's error names the
reason (e.g. "tlsv1 alert unknown ca", "tlsv1 alert protocol version").

uvicorn does not put the peer certificate in the ASGI scope. The protocol classes below compute
the ASGI "tls" extension once per connection (from the transport's SSL object) and wrap the app
for that connection so every request or WebSocket scope carries scope["extensions"]["tls"] with
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
import ssl
from asyncio.sslproto import SSLProtocol
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from kubeletapi.errors import StartupError

# Go's crypto/tls default minimum is TLS 1.2; tlsMinVersion values map onto these.
TLS_VERSIONS = {
    "": ssl.TLSVersion.TLSv1_2,
    "VersionTLS12": ssl.TLSVersion.TLSv1_2,
    "VersionTLS13": ssl.TLSVersion.TLSv1_3,
}
_WIRE_VERSIONS = {"TLSv1.2": 0x0303, "TLSv1.3": 0x0304}
# ssl's getpeercert() names -> RFC 4514 short names.
_RDN_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
}


def server_context(cert_file: Path, key_file: Path, client_ca: Path | None, min_version: str = "") -> ssl.SSLContext:
    """A TLS server context; StartupError names the file that cannot be used."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    if min_version not in TLS_VERSIONS:
        raise StartupError(f"unsupported tlsMinVersion {min_version!r}; use VersionTLS12 or VersionTLS13")
    ctx.minimum_version = TLS_VERSIONS[min_version]
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


class _WithTLS:
    """Wraps the app of one connection to add the TLS extension to every scope."""

    __slots__ = ("app", "ext")

    def __init__(self, app: ASGIApp, ext: dict[str, Any]) -> None:
        self.app = app
        self.ext = ext

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["extensions"] = {**(scope.get("extensions") or {}), "tls": self.ext}
        await self.app(scope, receive, send)


class TLSHttpToolsProtocol(HttpToolsProtocol):
    """httptools HTTP/1.1 protocol that adds the ASGI TLS extension."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ext = tls_extension(transport)
        if ext is not None:
            self.app = _WithTLS(self.config.loaded_app, ext)


class WebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, quiet about handshakes refused with an HTTP answer.

    A handshake the agent refuses (401, 403, 404, 405, 500 for exec) is answered through the ASGI
    `websocket.http.response` extension; uvicorn then still logs "ASGI callable returned without
    completing handshake." at ERROR, as if the app had forgotten to answer. Once the refusal's
    last body message is sent the handshake is over: marking it so silences the false error and
    changes nothing else (uvicorn has already written the response and closed the transport).
    """

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.http.response.body" and not message.get("more_body", False):
            self.handshake_complete = True


class TLSWebSocketProtocol(WebSocketProtocol):
    """WebSocket protocol (after an upgrade on a TLS connection) that adds the TLS extension."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        ext = tls_extension(transport)
        if ext is not None:
            self.app = _WithTLS(self.config.loaded_app, ext)
