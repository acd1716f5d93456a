"""The TLS alert of every refused handshake on the secure port, with real TLS clients (server/tls.py)."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import LOOPBACK, Agent, client_cert, load_ca, make_ca, tls_client_context


def handshake(agent: Agent, ctx: ssl.SSLContext) -> tuple[str, str]:
    """(TLS version, OpenSSL cipher name) of a completed handshake and request; raises ssl.SSLError."""
    with socket.create_connection((LOOPBACK, agent.kubelet.port("secure")), timeout=10) as raw, \
            ctx.wrap_socket(raw, server_hostname=LOOPBACK) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert sock.recv(12) == b"HTTP/1.1 401"  # TLS 1.3 refusals arrive after the handshake: read
        version, cipher = sock.version(), sock.cipher()
    assert version is not None and cipher is not None
    return version, cipher[0]


def client(agent: Agent, version: ssl.TLSVersion | None = None, ciphers: str | None = None,
           cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    ctx = tls_client_context(agent.certs / "ca.crt", cert)
    if ciphers is not None:
        ctx.set_ciphers(ciphers)
    if version is not None:
        ctx.minimum_version = ctx.maximum_version = version
    return ctx


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1 is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_old_versions_get_a_protocol_version_alert(start_agent: Callable[..., Agent]) -> None:
    """A TLS 1.0 or 1.1 client (one that can: OpenSSL security level 0) is refused with the
    protocol_version alert."""
    default = start_agent()
    for version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
        with pytest.raises(ssl.SSLError, match="alert protocol version"):
            handshake(default, client(default, version, "DEFAULT:@SECLEVEL=0"))


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLSv1.2", "TLSv1.3"])
def test_a_refused_client_certificate_gets_an_alert(agent: Agent, tmp_path: Path, version: ssl.TLSVersion) -> None:
    """The client's error names the reason instead of an unexplained EOF (or, in TLS 1.3, a
    connection that looks established and then reads nothing)."""
    ca, key, _ = make_ca(tmp_path, "other-ca")
    foreign = client_cert(tmp_path, ca, key, "mallory", ["system:masters"])
    with pytest.raises(ssl.SSLError, match="alert unknown ca"):
        handshake(agent, client(agent, version, cert=(foreign.cert, foreign.key)))
    node_ca, node_key = load_ca(agent.certs)
    now = dt.datetime.now(dt.UTC)
    expired = client_cert(tmp_path, node_ca, node_key, "old", not_before=now - dt.timedelta(days=2),
                          not_after=now - dt.timedelta(days=1))
    with pytest.raises(ssl.SSLError, match="alert certificate expired"):
        handshake(agent, client(agent, version, cert=(expired.cert, expired.key)))
