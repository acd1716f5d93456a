"""tlsCipherSuites and tlsMinVersion applied on the secure port, and the TLS alert of every refused
handshake, with real TLS clients (config/tlsnames.py, server/tls.py)."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest

from kubeletapi.cli import configuration
from kubeletapi.config.tlsnames import BY_NAME, CIPHER_SUITES, LEGACY_NAMES, tls_problems
from kubeletapi.errors import ConfigError
from tests.helpers import LOOPBACK, Agent, agent_args, client_cert, load_ca, make_ca, tls_client_context


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


def test_configured_suites_are_the_only_tls12_suites(start_agent: Callable[..., Agent]) -> None:
    agent = start_agent("--tls-cipher-suites",
                        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305")
    tls12 = ssl.TLSVersion.TLSv1_2
    assert handshake(agent, client(agent, tls12, "ECDHE-ECDSA-CHACHA20-POLY1305")) == (
        "TLSv1.2", "ECDHE-ECDSA-CHACHA20-POLY1305")  # the legacy Go name works
    # Offered both, the server picks Go's preference (AES before ChaCha20), not the client's.
    assert handshake(agent, client(agent, tls12, "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES256-GCM-SHA384"))[1] \
        == "ECDHE-ECDSA-AES256-GCM-SHA384"
    with pytest.raises(ssl.SSLError, match="handshake failure"):  # the server's alert, by name
        handshake(agent, client(agent, tls12, "ECDHE-ECDSA-AES128-GCM-SHA256"))
    assert handshake(agent, client(agent))[0] == "TLSv1.3"  # TLS 1.3 suites are not configurable


def test_default_suites_unchanged(agent: Agent) -> None:
    tls12 = ssl.TLSVersion.TLSv1_2
    assert handshake(agent, client(agent, tls12, "ECDHE-ECDSA-AES128-GCM-SHA256"))[1] == "ECDHE-ECDSA-AES128-GCM-SHA256"


def test_min_version_tls13_refuses_tls12_with_an_alert(start_agent: Callable[..., Agent]) -> None:
    agent = start_agent("--tls-min-version", "VersionTLS13")
    with pytest.raises(ssl.SSLError, match="alert protocol version"):
        handshake(agent, client(agent, ssl.TLSVersion.TLSv1_2))
    assert handshake(agent, client(agent))[0] == "TLSv1.3"


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1 is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_old_versions_get_a_protocol_version_alert_unless_allowed(start_agent: Callable[..., Agent]) -> None:
    """A TLS 1.0 or 1.1 client (one that can: OpenSSL security level 0) is refused with the
    protocol_version alert by default; tlsMinVersion VersionTLS10 lets it in, as on the kubelet."""
    default = start_agent()
    for version in (ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1):
        with pytest.raises(ssl.SSLError, match="alert protocol version"):
            handshake(default, client(default, version, "DEFAULT:@SECLEVEL=0"))
    legacy = start_agent("--tls-min-version", "VersionTLS10")
    assert handshake(legacy, client(legacy, ssl.TLSVersion.TLSv1, "DEFAULT:@SECLEVEL=0")) == (
        "TLSv1", "ECDHE-ECDSA-AES128-SHA")  # Go's first suite a TLS 1.0 client can use


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


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_BOGUS_SUITE"],
         "tlsCipherSuites (--tls-cipher-suites, given on the command line): Cipher suite TLS_BOGUS_SUITE not "
         "supported or doesn't exist"),
        (["--tls-cipher-suites", "ECDHE-RSA-AES128-GCM-SHA256"],  # an OpenSSL name is not a kubelet name
         "Cipher suite ECDHE-RSA-AES128-GCM-SHA256 not supported or doesn't exist"),
        (["--tls-min-version", "VersionTLS14"],
         "tlsMinVersion (--tls-min-version, given on the command line): unknown tls version 'VersionTLS14'"),
        (["--tls-min-version", "TLSv1.2"], "unknown tls version 'TLSv1.2'"),
    ],
)
def test_unknown_names_are_refused(tmp_path: Path, flags: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match="invalid configuration") as exc:
        configuration(agent_args(tmp_path, *flags))
    assert message in str(exc.value)


def test_names_are_the_kubelets() -> None:
    """Every name component-base accepts (Go's secure and insecure suites, the two legacy names)."""
    assert len(CIPHER_SUITES) == 25 and set(LEGACY_NAMES) <= set(BY_NAME)
    assert tls_problems([s.go_name for s in CIPHER_SUITES] + list(LEGACY_NAMES), "VersionTLS11") == []
    assert tls_problems([], "") == []


def test_openssl_names_have_the_iana_ids() -> None:
    """The OpenSSL name of each suite is the one with Go's id (for every suite this OpenSSL has)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.set_ciphers("ALL:@SECLEVEL=0")
    ids = {c["name"]: c["id"] & 0xFFFF for c in ctx.get_ciphers()}
    known = [s for s in CIPHER_SUITES if s.openssl_name in ids]
    assert len(known) >= 17  # all but RC4 and 3DES, which OpenSSL 3 leaves to its legacy provider
    for suite in known:
        assert ids[suite.openssl_name] == suite.iana_id, suite.go_name
    for suite in CIPHER_SUITES:
        if not suite.openssl_name:
            assert ids[suite.go_name] == suite.iana_id  # TLS 1.3: OpenSSL uses the IANA names
