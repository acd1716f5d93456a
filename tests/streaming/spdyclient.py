"""A small blocking SPDY/3.1 client for tests: the upgrade request, then frames both ways.

It frames with kubeletapi.spdy.frames; client-go's own SPDY client
(tests/cluster/k8s/spdyclient, driven by tests/streaming/goclient.py) checks the server
independently. `upgrade()` sends the request and returns the answer's status, headers and, on
101, a SpdyClient over the same connection.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from kubeletapi.spdy import frames as fr
from tests.helpers import Listening, tls_client_context


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    client: SpdyClient | None = None

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]


@dataclass
class SpdyClient:
    sock: socket.socket
    buffer: bytes = b""
    parser: fr.FrameParser = field(default_factory=fr.FrameParser)
    compressor: fr.HeaderCompressor = field(default_factory=fr.HeaderCompressor)
    pending: list[fr.Frame] = field(default_factory=list)
    next_id: int = 1

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def open(self, headers: dict[str, str], fin: bool = False) -> int:
        stream_id = self.next_id
        self.next_id += 2
        self.send(fr.syn_stream(self.compressor, stream_id, {k: [v] for k, v in headers.items()}, fin))
        return stream_id

    def data(self, stream_id: int, data: bytes, fin: bool = False) -> None:
        self.send(fr.data_frame(stream_id, data, fin))

    def frame(self, timeout: float = 10) -> fr.Frame | None:
        """The next frame; None when the server closed the connection."""
        self.sock.settimeout(timeout)
        while not self.pending:
            if self.buffer:
                self.pending.extend(self.parser.feed(self.buffer))
                self.buffer = b""
                continue
            try:
                chunk = self.sock.recv(1 << 16)
            except (ConnectionResetError, ssl.SSLError):
                chunk = b""
            if not chunk:
                return None
            self.pending.extend(self.parser.feed(chunk))
        return self.pending.pop(0)

    def frames_until_closed(self, timeout: float = 10) -> list[fr.Frame]:
        out: list[fr.Frame] = []
        while (frame := self.frame(timeout)) is not None:
            out.append(frame)
        return out

    def close(self) -> None:
        self.sock.close()


def connect(node: Listening, cert: bool = True, timeout: float = 10) -> socket.socket:
    pair = (node.certs / "admin.crt", node.certs / "admin.key") if cert else None
    context = tls_client_context(Path(node.certs / "ca.crt"), pair)
    raw = socket.create_connection(("127.0.0.1", node.port("secure")), timeout=timeout)
    return context.wrap_socket(raw, server_hostname="localhost")


def upgrade(node: Listening, path: str, versions: tuple[str, ...] = ("v4.channel.k8s.io",),
            method: str = "POST", extra: tuple[tuple[str, str], ...] = (), timeout: float = 10,
            cert: bool = True) -> Answer:
    """Send an upgrade request for `path` to the node's secure port; the answer (a client on 101)."""
    return upgrade_on(connect(node, cert=cert, timeout=timeout), path, versions, method, extra)


def upgrade_on(sock: socket.socket, path: str, versions: tuple[str, ...] = ("v4.channel.k8s.io",),
               method: str = "POST", extra: tuple[tuple[str, str], ...] = ()) -> Answer:
    """Send an upgrade request for `path` on a connected socket; the answer (a client on 101)."""
    lines = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: Upgrade", "Upgrade: SPDY/3.1",
             *(f"X-Stream-Protocol-Version: {v}" for v in versions), *(f"{k}: {v}" for k, v in extra)]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    raw_head, _, rest = head.partition(b"\r\n\r\n")
    status_line, *fields = raw_head.decode("latin-1").split("\r\n")
    status = int(status_line.split()[1])
    headers = [(k, v.strip()) for k, _, v in (f.partition(":") for f in fields)]
    if status == 101:
        return Answer(status, headers, b"", SpdyClient(sock, rest))
    length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
    while len(rest) < length:
        chunk = sock.recv(4096)
        if not chunk:
            break
        rest += chunk
    sock.close()
    return Answer(status, headers, rest)
