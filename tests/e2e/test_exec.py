"""/exec, /attach and /portForward end to end: a real agent, real pods, real WebSocket clients.

One agent (module scope) with the pods of tests/e2e/streamnode.py. Clients: the official Python
client's WSClient (kubernetes.stream.ws_client) and the websockets library, with the admin client
certificate.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from kubernetes.client import Configuration
from kubernetes.stream.ws_client import PortForward, WSClient, create_websocket, get_websocket_url
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

from tests.e2e.streamnode import IDLE_S, READER, SHELL, WEB, Node, processes_with, stream_node
from tests.helpers import free_port
from tests.podtools import wait_for
from tests.streaming.wsclient import open_ws, refused

pytestmark = pytest.mark.e2e

@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with stream_node(tmp_path_factory.mktemp("exec")) as started:
        yield started


# --- a raw client --------------------------------------------------------------------------------


@dataclass
class Session:
    """What a raw client saw: frames (channel, payload) in order, and how the server closed."""

    frames: list[tuple[int, bytes]] = field(default_factory=list)
    close_code: int | None = None

    def channel(self, number: int) -> bytes:
        return b"".join(data for ch, data in self.frames if ch == number)


def decode(message: bytes | str, base64_proto: bool) -> tuple[int, bytes]:
    if base64_proto:
        assert isinstance(message, str), "base64 subprotocols send text frames"
        return ord(message[0]) - ord("0"), base64.b64decode(message[1:])
    assert isinstance(message, bytes), "binary subprotocols send binary frames"
    return message[0], message[1:]


def read_all(ws: ClientConnection, base64_proto: bool = False, timeout: float = 10) -> Session:
    session = Session()
    deadline = time.monotonic() + timeout
    try:
        while True:
            session.frames.append(decode(ws.recv(timeout=max(0.01, deadline - time.monotonic())), base64_proto))
    except ConnectionClosed:
        pass
    session.close_code = ws.protocol.close_rcvd.code if ws.protocol.close_rcvd else None
    return session


def read_until(ws: ClientConnection, channel: int, want: bytes, timeout: float = 10) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout
    while want not in got:
        ch, data = decode(ws.recv(timeout=max(0.01, deadline - time.monotonic())), False)
        if ch == channel:
            got += data
    return got


# --- the official client -------------------------------------------------------------------------


def k8s_config(node: Node) -> Configuration:
    """The official client's configuration: the node's secure URL, the admin certificate."""
    certs = node.agent.certs
    cfg = Configuration(host=node.agent.url())
    cfg.cert_file, cfg.key_file = str(certs / "admin.crt"), str(certs / "admin.key")
    cfg.ssl_ca_cert = str(certs / "ca.crt")
    return cfg


@contextlib.contextmanager
def k8s_client(node: Node, path: str) -> Iterator[WSClient]:
    url = get_websocket_url(node.agent.url(path=path))
    client = WSClient(k8s_config(node), url, headers=None, capture_all=True)
    try:
        yield client
    finally:
        client.close()
        client.sock.shutdown()  # close() skips a socket whose close frame was already answered


def test_kubernetes_client_echo(node: Node) -> None:
    with k8s_client(node, node.exec_path("echo", "hello")) as client:
        client.run_forever(timeout=10)
        assert client.subprotocol == "v5.channel.k8s.io"
        assert client.read_stdout() == "hello\n"  # (read_all() would drop the status channel too)
        assert client.returncode == 0


def test_kubernetes_client_exit_code(node: Node) -> None:
    with k8s_client(node, node.exec_path("sh", "-c", "echo oops >&2; exit 3")) as client:
        client.run_forever(timeout=10)
        assert client.read_stderr() == "oops\n"
        assert client.returncode == 3


# --- every subprotocol ---------------------------------------------------------------------------

SCRIPT = ("sh", "-c", "echo out; sleep 0.05; echo err >&2; exit 2")
NON_ZERO = b"command terminated with non-zero exit code: error executing command [sh -c echo out; sleep 0.05; " \
           b"echo err >&2; exit 2], exit code 2"


@pytest.mark.parametrize(
    ("offered", "chosen", "is_base64", "json_status"),
    [
        pytest.param(["v5.channel.k8s.io"], "v5.channel.k8s.io", False, True, id="v5"),
        pytest.param(["v4.channel.k8s.io"], "v4.channel.k8s.io", False, True, id="v4"),
        pytest.param(["v4.base64.channel.k8s.io"], "v4.base64.channel.k8s.io", True, True, id="v4-base64"),
        pytest.param(["channel.k8s.io"], "channel.k8s.io", False, False, id="v1"),
        pytest.param(["base64.channel.k8s.io"], "base64.channel.k8s.io", True, False, id="v1-base64"),
        pytest.param([], None, False, False, id="none"),
        pytest.param(["bogus", "v4.base64.channel.k8s.io", "v5.channel.k8s.io"], "v4.base64.channel.k8s.io",
                     True, True, id="first-supported-wins"),
    ],
)
def test_subprotocols(node: Node, offered: list[str], chosen: str | None, is_base64: bool, json_status: bool) -> None:
    with open_ws(node.agent, node.exec_path(*SCRIPT), offered) as ws:
        assert ws.subprotocol == chosen
        seen = read_all(ws, is_base64)
    assert seen.frames[0] == (1, b"")  # ready
    assert (seen.channel(1), seen.channel(2)) == (b"out\n", b"err\n")
    if json_status:
        assert json.loads(seen.channel(3)) == {
            "status": "Failure", "message": NON_ZERO.decode(), "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": "2"}]},
        }
    else:
        assert seen.channel(3) == NON_ZERO
    assert seen.close_code == 1000


def test_no_common_subprotocol_is_403(node: Node) -> None:
    assert refused(node.agent, node.exec_path("true"), subprotocols=["v2.channel.k8s.io"]) == (403, b"")
    assert refused(node.agent, f"/portForward/default/{WEB}?port=80", subprotocols=["channel.k8s.io"]) == (403, b"")


def test_success_status(node: Node) -> None:
    with open_ws(node.agent, node.exec_path("true", query="output=1"), ["v4.channel.k8s.io"]) as ws:
        seen = read_all(ws)
    assert seen.frames == [(1, b""), (3, b'{"status":"Success"}')]


# --- stdin, tty, attach --------------------------------------------------------------------------


def test_v5_close_ends_stdin(node: Node) -> None:
    with open_ws(node.agent, node.exec_path("cat", query="input=1&output=1"), ["v5.channel.k8s.io"]) as ws:
        ws.send(b"\x00hello ")
        ws.send(b"\x00world\n")
        ws.send(b"\xff\x00")
        seen = read_all(ws)
    assert seen.channel(1) == b"hello world\n"
    assert seen.channel(3) == b'{"status":"Success"}'


def test_tty_resize_seen_by_stty(node: Node) -> None:
    with open_ws(node.agent, node.exec_path("sh", query="input=1&output=1&tty=1"), ["v4.channel.k8s.io"]) as ws:
        ws.send(b'\x04{"Width":100,"Height":30}')
        got = b""
        deadline = time.monotonic() + 10
        while b"30 100" not in got and time.monotonic() < deadline:
            ws.send(b"\x00stty size\n")  # the size reaches the shell's terminal asynchronously
            with contextlib.suppress(TimeoutError):
                got += read_until(ws, 1, b"\n", timeout=0.5)
        assert b"30 100" in got
        ws.send(b"\x00exit 0\n")
        seen = read_all(ws)
    assert seen.channel(3) == b'{"status":"Success"}'


def test_attach_to_a_container_reading_stdin(node: Node) -> None:
    path = f"/attach/default/{READER}/echo?input=1&output=1&error=1"
    with open_ws(node.agent, path, ["v4.channel.k8s.io"]) as ws:
        assert decode(ws.recv(timeout=5), False) == (1, b"")
        deadline = time.monotonic() + 10
        got = b""
        while b"got: ping" not in got and time.monotonic() < deadline:
            ws.send(b"\x00ping\n")
            with contextlib.suppress(TimeoutError):
                got += read_until(ws, 1, b"got: ping", timeout=1)
        assert b"got: ping" in got


# --- port-forward --------------------------------------------------------------------------------


def test_port_forward_to_http_server(node: Node) -> None:
    port = node.web_port
    with open_ws(node.agent, f"/portForward/default/{WEB}?port={port}", ["v4.channel.k8s.io"]) as ws:
        prefix = struct.pack("<H", port)
        assert [decode(ws.recv(timeout=5), False) for _ in range(2)] == [(0, prefix), (1, prefix)]
        ws.send(b"\x00GET /hello.txt HTTP/1.0\r\nHost: pod\r\n\r\n")
        seen = read_all(ws)  # HTTP/1.0: the server closes, the port ends, the WebSocket closes
    response = seen.channel(0)
    assert response.startswith(b"HTTP/1.0 200 OK\r\n")
    assert response.endswith(b"\r\n\r\nhello from the pod\n")
    assert seen.channel(1) == b""
    assert seen.close_code == 1000


def test_kubernetes_client_port_forward(node: Node) -> None:
    url = get_websocket_url(node.agent.url(path=f"/portForward/default/{WEB}?port={node.web_port}"))
    ws = create_websocket(k8s_config(node), url, {"sec-websocket-protocol": "v4.channel.k8s.io"})
    forward = PortForward(ws, [node.web_port])
    sock = forward.socket(node.web_port)
    try:
        sock.settimeout(10)
        sock.sendall(b"GET /hello.txt HTTP/1.0\r\nHost: pod\r\n\r\n")
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
    finally:
        forward.close()
        forward.websocket.shutdown()
    assert response.startswith(b"HTTP/1.0 200 OK\r\n") and response.endswith(b"hello from the pod\n")
    assert forward.error(node.web_port) is None


def test_port_forward_base64_and_refused_port(node: Node) -> None:
    closed = free_port()
    path = f"/portForward/default/{WEB}?port={closed}"
    with open_ws(node.agent, path, ["v4.base64.channel.k8s.io"]) as ws:
        seen = read_all(ws, base64_proto=True)
    prefix = struct.pack("<H", closed)
    assert seen.frames[:2] == [(0, prefix), (1, prefix)]
    error = seen.channel(1)[2:].decode()
    assert error.startswith(f"error forwarding port {closed} to pod ")
    assert ", uid : " in error


# --- cleanup ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["reset", "fin", "close-frame"])
def test_client_that_vanishes_leaves_no_process(node: Node, how: str) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    path = node.exec_path("python3", "-c", "import time; time.sleep(1000)", marker, query="input=1&output=1")
    with open_ws(node.agent, path, ["v4.channel.k8s.io"]) as ws:
        assert decode(ws.recv(timeout=5), False) == (1, b"")
        wait_for(lambda: processes_with(marker), what="the exec'd process")
        if how == "reset":
            ws.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            ws.socket.close()  # RST: no close frame, no FIN
        elif how == "fin":
            ws.socket.shutdown(socket.SHUT_RDWR)  # a client killed: FIN, no close frame
        else:
            ws.close()
        wait_for(lambda: not processes_with(marker), timeout=10, what="the exec'd process gone")


def test_idle_stream_is_closed(node: Node) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    path = node.exec_path("python3", "-c", "import time; time.sleep(1000)", marker, query="output=1")
    started = time.monotonic()
    with open_ws(node.agent, path, ["v4.channel.k8s.io"]) as ws:
        seen = read_all(ws, timeout=IDLE_S + 8)
    assert IDLE_S - 0.2 <= time.monotonic() - started < IDLE_S + 5
    assert seen.frames == [(1, b"")] and seen.close_code == 1000
    wait_for(lambda: not processes_with(marker), timeout=10, what="the exec'd process gone")


# --- refusals with a real pod --------------------------------------------------------------------


def test_plain_requests_need_an_upgrade(node: Node) -> None:
    with node.agent.admin() as client:
        for path in (node.exec_path("ls"), f"/attach/default/{READER}/echo?output=1", f"/portForward/default/{WEB}"):
            response = client.get(node.agent.url(path=path))
            assert (response.status_code, response.text) == (500, "Upgrade request required\n"), path
            assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        pytest.param(f"/exec/default/{SHELL}/nope?output=1&command=ls", 500, 'container not found ("nope")',
                     id="unknown-container"),
        pytest.param(f"/exec/default/{SHELL}/done?output=1&command=ls", 500, 'container not found ("done")',
                     id="exited-container"),
        pytest.param(f"/exec/default/{SHELL}/wrong-uid/main?output=1&command=ls", 404, "pod does not exist",
                     id="exec-wrong-uid"),
        pytest.param(f"/portForward/default/{WEB}/wrong-uid?port=80", 404, "pod not found", id="pf-wrong-uid"),
    ],
)
def test_refusals(node: Node, path: str, status: int, body: str) -> None:
    assert refused(node.agent, path) == (status, body.encode())
    with node.agent.admin() as client:
        plain = client.get(node.agent.url(path=path))
    assert (plain.status_code, plain.text) == (status, body)


def test_exec_without_a_command_fails_in_the_stream(node: Node) -> None:
    with open_ws(node.agent, f"/exec/default/{SHELL}/main?output=1") as ws:
        seen = read_all(ws)
    assert seen.frames[0] == (1, b"")
    assert json.loads(seen.channel(3)) == {
        "status": "Failure", "reason": "InternalError", "code": 500,
        "message": "Internal error occurred: error executing command in container: command must not be empty",
    }


def test_runtime_refusal_is_an_internal_error_on_channel_3(node: Node) -> None:
    # `main` was not created with stdin: the runtime refuses to attach stdin to it.
    with open_ws(node.agent, f"/attach/default/{SHELL}/main?input=1&output=1", ["channel.k8s.io"]) as ws:
        seen = read_all(ws)
    assert seen.frames[0] == (1, b"")
    assert seen.channel(3).startswith(b"Internal error occurred: error attaching to container: ")
    assert seen.close_code == 1000


def test_exec_with_the_pod_uid(node: Node) -> None:
    with node.agent.admin() as client:
        items = client.get(node.agent.url(path="/pods")).json()["items"]
    uid = next(p["metadata"]["uid"] for p in items if p["metadata"]["name"] == SHELL)
    with open_ws(node.agent, f"/exec/default/{SHELL}/{uid}/main?output=1&command=echo&command=ok") as ws:
        assert read_all(ws).channel(1) == b"ok\n"


def test_read_only_port(node: Node) -> None:
    assert refused(node.agent, node.exec_path("ls"), listener="read-only") == (405, b"Debug endpoints are disabled.\n")
