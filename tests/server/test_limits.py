"""Every listener's limits through real sockets (plain and TLS): request heads (431), bodies (413),
the header timeout, all before any authentication work (server/limits.py, server/protocols.py)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from kubeletapi.server.limits import GO_READ_SLOP, MAX_BODY_BYTES, MAX_HEADER_BYTES, Limits
from tests.apiserver_double import APIServerDouble
from tests.helpers import LOOPBACK, Agent, tls_client_context

LISTENERS = ("read-only", "healthz", "secure")
GO_431 = (b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
          b"Connection: close\r\n\r\n431 Request Header Fields Too Large")
GO_413 = (b"HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
          b"Connection: close\r\n\r\n413 Request Entity Too Large")


def connect(agent: Agent, listener: str, timeout: float = 10) -> socket.socket:
    sock = socket.create_connection((LOOPBACK, agent.kubelet.port(listener)), timeout=timeout)
    if listener != "secure":
        return sock
    return tls_client_context(agent.certs / "ca.crt").wrap_socket(sock, server_hostname=LOOPBACK)


def auth(agent: Agent, listener: str) -> bytes:
    return f"Authorization: Bearer {agent.token()}\r\n".encode() if listener == "secure" else b""


def exchange(sock: socket.socket, data: bytes) -> bytes:
    """Send `data` (as far as the agent takes it), then everything the agent answers until it closes."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError):
        sock.sendall(data)
    return read_to_end(sock)


def read_to_end(sock: socket.socket) -> bytes:
    reply = bytearray()
    try:
        while chunk := sock.recv(65536):
            reply += chunk
    except (ConnectionResetError, ssl.SSLError):
        pass
    finally:
        sock.close()
    return bytes(reply)


def head_of(size: int, prefix: bytes) -> bytes:
    """A GET /healthz head of exactly `size` bytes on the wire (request line and final CRLF included)."""
    start = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + prefix + b"X-Pad: "
    return start + b"a" * (size - len(start) - 4) + b"\r\n\r\n"


@pytest.mark.parametrize("listener", LISTENERS)
def test_request_head_limit_is_gos(start_agent: Callable[..., Agent], listener: str) -> None:
    """net/http reads MaxHeaderBytes (1 MiB, the kubelet's setting) + 4096 bytes for a head: a head of
    exactly that many bytes is served, one byte more gets its 431, verbatim, and the connection ends."""
    agent = start_agent()
    limit = MAX_HEADER_BYTES + GO_READ_SLOP
    served = exchange(connect(agent, listener), head_of(limit, auth(agent, listener)))
    assert served.startswith(b"HTTP/1.1 200 OK\r\n") and served.endswith(b"\r\n\r\nok")
    assert exchange(connect(agent, listener), head_of(limit + 1, auth(agent, listener))) == GO_431


def socket_buffers_max() -> int:
    """The most a TCP connection on this machine can hold in flight: the sender's send buffer and
    the receiver's receive buffer at their autotuning maxima (net.ipv4.tcp_wmem / tcp_rmem)."""
    def top(name: str) -> int:
        return int(Path(f"/proc/sys/net/ipv4/{name}").read_text().split()[2])
    return top("tcp_wmem") + top("tcp_rmem")


@pytest.mark.parametrize("listener", ["read-only", "secure"])
def test_a_huge_head_is_refused_early(start_agent: Callable[..., Agent], listener: str) -> None:
    """A header of twice what the sockets can buffer: the agent stops reading after the limit and
    drops the connection, so the sender cannot push more than the limit plus the sockets' buffers
    (plus TLS's 256 KiB read buffer); /healthz answers meanwhile. (A fixed 16 MiB bound failed on
    this machine, whose tcp_rmem lets a receive buffer autotune up to 32 MiB under load.)"""
    agent = start_agent()
    sock = connect(agent, listener, timeout=5)
    bound = MAX_HEADER_BYTES + GO_READ_SLOP + socket_buffers_max() + (1 << 20)
    sent = 0
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        while sent < 2 * bound:
            sent += sock.send(b"a" * 65536)
    except (BrokenPipeError, ConnectionResetError, ssl.SSLError, TimeoutError):
        pass
    assert read_to_end(sock) == GO_431
    assert sent < bound, (sent, bound)  # everything went through: the agent kept reading
    with httpx.Client(timeout=10) as client:
        assert client.get(agent.url("healthz", "/healthz")).text == "ok"


@pytest.fixture
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[APIServerDouble]:
    double = APIServerDouble(tmp_path_factory.mktemp("apiserver"), users={"alice-token": {"username": "alice"}},
                             allow={("alice", "stats")})
    yield double
    double.close()


def post_summary(length_header: bytes, token: str) -> bytes:
    return (b"POST /stats/summary HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            + f"Authorization: Bearer {token}\r\n".encode() + length_header + b"\r\n")


def test_oversized_head_and_declared_body_are_refused_before_authentication(
    start_agent: Callable[..., Agent], apiserver: APIServerDouble
) -> None:
    """With webhook authentication, the TokenReview the request would cost is never sent."""
    agent = start_agent("--kubeconfig", str(apiserver.kubeconfig))
    head = head_of(MAX_HEADER_BYTES + GO_READ_SLOP + 1, b"Authorization: Bearer alice-token\r\n")
    assert exchange(connect(agent, "secure"), head) == GO_431
    declared = post_summary(f"Content-Length: {MAX_BODY_BYTES + 1}\r\n".encode(), "alice-token")
    assert exchange(connect(agent, "secure"), declared) == GO_413  # no body sent: answered on the head
    assert apiserver.reviews == []
    with agent.client(token="alice-token") as client:  # the same token does reach the webhook
        assert client.get(agent.url(path="/stats/summary")).status_code == 200
    assert apiserver.kinds() == ["TokenReview", "SubjectAccessReview"]


@pytest.mark.parametrize("listener", ["read-only", "secure"])
def test_body_limit_on_both_ports(start_agent: Callable[..., Agent], listener: str) -> None:
    """POST /stats/summary (the one route that reads its body): a form of exactly the limit is read;
    one byte more is a 413, declared or streamed (chunked), and the agent keeps serving."""
    agent = start_agent()
    token = agent.token()
    form = b"only_cpu_and_memory=true&pad=" + b"a" * (MAX_BODY_BYTES - 29)
    assert len(form) == MAX_BODY_BYTES
    with httpx.Client(verify=tls_client_context(agent.certs / "ca.crt"), timeout=10) as client:
        ok = client.post(agent.url(listener, "/stats/summary"), content=form, headers={
            "Content-Type": "application/x-www-form-urlencoded", "Authorization": f"Bearer {token}"})
        assert ok.status_code == 200 and "network" not in ok.json()["node"]
    declared = post_summary(f"Content-Length: {len(form) + 1}\r\n".encode(), token) + form + b"b"
    assert exchange(connect(agent, listener), declared) == GO_413
    chunk = b"a" * 65536
    chunked = post_summary(b"Transfer-Encoding: chunked\r\n", token) + (b"10000\r\n" + chunk + b"\r\n") * 17
    assert exchange(connect(agent, listener), chunked) == GO_413
    with httpx.Client(timeout=10) as client:
        assert client.get(agent.url("healthz", "/healthz")).text == "ok"


def idle_sockets(agent: Agent) -> list[socket.socket]:
    """Connections that never complete a request head, of every kind an attacker can open."""
    socks = []
    for listener in LISTENERS:
        socks += [socket.create_connection((LOOPBACK, agent.kubelet.port(listener))) for _ in range(20)]
    for listener in ("read-only", "secure"):  # a partial head, in plain text and after a handshake
        for _ in range(5):
            sock = connect(agent, listener)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHo")
            socks.append(sock)
    socks += [connect(agent, "secure") for _ in range(5)]  # handshaken, then silent
    for _ in range(5):  # the first bytes of a ClientHello record, then nothing
        sock = socket.create_connection((LOOPBACK, agent.kubelet.port("secure")))
        sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00")
        socks.append(sock)
    return socks


def closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(1) == b""
    except (TimeoutError, ssl.SSLWantReadError):
        return False
    except (ConnectionResetError, ssl.SSLError):
        return True


def keep_alive_get(sock: socket.socket) -> bytes:
    """GET /healthz on an open keep-alive connection; the response (Content-Length framed)."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = b""
    while b"\r\n\r\nok" not in reply:
        chunk = sock.recv(4096)
        assert chunk, reply
        reply += chunk
    return reply


def test_idle_connections_are_closed_after_the_header_timeout(start_agent: Callable[..., Agent]) -> None:
    """Connections that send nothing, half a head, or stop after (or before) the TLS handshake are
    closed once the header timeout passes, on every listener; real requests are served meanwhile,
    and an idle keep-alive connection between requests is not cut (its limit stays IdleTimeout)."""
    agent = start_agent(limits=Limits(header_timeout_s=1.0))
    keep_alive = connect(agent, "read-only")
    assert keep_alive_get(keep_alive).startswith(b"HTTP/1.1 200 OK")
    socks = idle_sockets(agent)
    with agent.admin() as client:
        for listener in LISTENERS:
            assert client.get(agent.url(listener, "/healthz")).text == "ok"
    deadline = time.monotonic() + 15
    open_ = socks
    while open_ and time.monotonic() < deadline:
        open_ = [s for s in open_ if not closed_by_peer(s)]
    assert not open_, f"{len(open_)} of {len(socks)} idle connections still open"
    assert keep_alive_get(keep_alive).startswith(b"HTTP/1.1 200 OK")  # idle > the header timeout, still served
    for sock in [*socks, keep_alive]:
        sock.close()
