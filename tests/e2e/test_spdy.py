"""/exec, /attach and /portForward over SPDY/3.1 end to end: a real agent, real pods, the raw SPDY
client of tests/streaming/spdyclient.py (frames on the wire, as the API server sends them)."""

from __future__ import annotations

import json
import os
import socket
import struct
import time
import uuid
from collections.abc import Iterator

import pytest

from kubeletapi.spdy import frames as fr
from tests.e2e.streamnode import IDLE_S, READER, WEB, Node, processes_with, stream_node
from tests.helpers import free_port
from tests.podtools import wait_for
from tests.streaming.spdyclient import SpdyClient, upgrade

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with stream_node(tmp_path_factory.mktemp("spdy")) as started:
        yield started


def _exec(node: Node, *cmd: str, query: str = "output=1&error=1") -> SpdyClient:
    answer = upgrade(node.agent, node.exec_path(*cmd, query=query))
    assert answer.status == 101, (answer.status, answer.body)
    assert answer.client is not None
    return answer.client


def _outputs(frames: list[fr.Frame], ids: dict[int, str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for frame in frames:
        if isinstance(frame, fr.Data) and frame.stream_id in ids:
            out[ids[frame.stream_id]] = out.get(ids[frame.stream_id], b"") + frame.data
    return out


def test_exec_output_and_status(node: Node) -> None:
    client = _exec(node, "sh", "-c", "echo out; echo err >&2; exit 3")
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdout", "stderr")}
    frames = client.frames_until_closed()
    client.close()
    replies = [f.stream_id for f in frames if isinstance(f, fr.SynReply)]
    assert sorted(replies) == sorted(ids)
    out = _outputs(frames, ids)
    assert out["stdout"] == b"out\n"
    assert out["stderr"] == b"err\n"
    status = json.loads(out["error"])
    assert status["reason"] == "NonZeroExitCode"
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]
    assert isinstance(frames[-1], fr.GoAway)


def _collect(client: SpdyClient, ids: dict[int, str], until: bytes, stream: str, timeout: float = 10) -> bytes:
    """Read frames until `until` shows up on `stream`; what that stream carried."""
    got = b""
    deadline = time.monotonic() + timeout
    while until not in got and time.monotonic() < deadline:
        frame = client.frame(timeout=max(0.1, deadline - time.monotonic()))
        if frame is None:
            break
        if isinstance(frame, fr.Data) and ids.get(frame.stream_id) == stream:
            got += frame.data
    return got


def test_stdin_fin_ends_the_command(node: Node) -> None:
    client = _exec(node, "cat", query="input=1&output=1")
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdin", "stdout")}
    stdin = next(i for i, t in ids.items() if t == "stdin")
    payload = os.urandom(1 << 20)
    for start in range(0, len(payload), 32768):
        client.data(stdin, payload[start:start + 32768])
    client.data(stdin, b"", fin=True)
    out = _outputs(client.frames_until_closed(), ids)
    client.close()
    assert out["stdout"] == payload
    assert out["error"] == b'{"status":"Success"}'


def test_tty_resize(node: Node) -> None:
    client = _exec(node, "sh", query="input=1&output=1&tty=1")
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdin", "stdout", "resize")}
    stream = {t: i for i, t in ids.items()}
    client.data(stream["resize"], b'{"Width":100,')  # one size split over two frames
    client.data(stream["resize"], b'"Height":30}\n')
    got = b""
    deadline = time.monotonic() + 10
    while b"30 100" not in got and time.monotonic() < deadline:
        client.data(stream["stdin"], b"stty size\n")
        got += _collect(client, ids, b"\n", "stdout", timeout=0.5)
    assert b"30 100" in got
    client.data(stream["stdin"], b"exit 0\n")
    out = _outputs(client.frames_until_closed(), ids)
    client.close()
    assert out["error"] == b'{"status":"Success"}'


EXIT_2 = b"command terminated with non-zero exit code: error executing command [sh -c exit 2], exit code 2"


@pytest.mark.parametrize("version", ["v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"])
def test_older_versions_write_the_message(node: Node, version: str) -> None:
    answer = upgrade(node.agent, node.exec_path("sh", "-c", "exit 2", query="output=1"), (version,))
    assert answer.status == 101 and answer.header("X-Stream-Protocol-Version") == [version]
    assert answer.client is not None
    ids = {answer.client.open({"streamtype": t}): t for t in ("error", "stdout")}
    out = _outputs(answer.client.frames_until_closed(), ids)
    answer.client.close()
    assert out.get("error") == EXIT_2


def test_attach(node: Node) -> None:
    answer = upgrade(node.agent, f"/attach/default/{READER}/echo?input=1&output=1&error=1")
    assert answer.status == 101 and answer.client is not None
    client = answer.client
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdin", "stdout", "stderr")}
    stdin = next(i for i, t in ids.items() if t == "stdin")
    got = b""
    deadline = time.monotonic() + 10
    while b"got: ping" not in got and time.monotonic() < deadline:
        client.data(stdin, b"ping\n")
        got += _collect(client, ids, b"got: ping", "stdout", timeout=1)
    client.close()
    assert b"got: ping" in got


def test_ping_is_answered(node: Node) -> None:
    client = _exec(node, "sleep", "5", query="output=1")
    client.send(fr.ping(7))
    assert client.frame() == fr.Ping(7)
    client.close()


def test_port_forward_pairs(node: Node) -> None:
    closed = free_port()
    answer = upgrade(node.agent, f"/portForward/default/{WEB}", ("portforward.k8s.io",))
    assert answer.status == 101 and answer.client is not None
    client = answer.client
    ids: dict[int, str] = {}
    for request, port in (("1", node.web_port), ("2", node.web_port), ("3", closed)):
        for kind in ("error", "data"):
            ids[client.open({"streamtype": kind, "port": str(port), "requestid": request})] = f"{kind}{request}"
    data = {t: i for i, t in ids.items()}
    for request in ("1", "2"):
        client.data(data[f"data{request}"], b"GET /hello.txt HTTP/1.0\r\nHost: pod\r\n\r\n")
    finished: set[str] = set()
    out: dict[str, bytes] = {}
    while not {"data1", "data2", "error3"} <= finished:
        frame = client.frame()
        assert frame is not None, out
        if isinstance(frame, (fr.Data, fr.RstStream)) and frame.stream_id in ids:
            name = ids[frame.stream_id]
            if isinstance(frame, fr.Data):
                out[name] = out.get(name, b"") + frame.data
            if isinstance(frame, fr.RstStream) or frame.fin:
                finished.add(name)
    client.close()
    for request in ("1", "2"):
        assert out[f"data{request}"].startswith(b"HTTP/1.0 200 OK\r\n")
        assert out[f"data{request}"].endswith(b"hello from the pod\n")
    assert out["error3"].decode().startswith(f"error forwarding port {closed} to pod ")


@pytest.mark.parametrize("how", ["reset", "fin"])
def test_client_that_vanishes_leaves_no_process(node: Node, how: str) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    client = _exec(node, "python3", "-c", "import time; time.sleep(1000)", marker, query="input=1&output=1")
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdin", "stdout")}
    assert len(ids) == 3
    wait_for(lambda: processes_with(marker), what="the exec'd process")
    if how == "reset":
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        client.sock.shutdown(socket.SHUT_RDWR)
    client.sock.close()
    wait_for(lambda: not processes_with(marker), timeout=10, what="the exec'd process gone")


def test_idle_connection_is_closed(node: Node) -> None:
    marker = f"marker-{uuid.uuid4().hex}"
    client = _exec(node, "python3", "-c", "import time; time.sleep(1000)", marker, query="output=1")
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdout")}
    started = time.monotonic()
    frames = client.frames_until_closed(timeout=IDLE_S + 8)
    client.close()
    assert IDLE_S - 0.2 <= time.monotonic() - started < IDLE_S + 5
    assert {f.stream_id for f in frames if isinstance(f, fr.RstStream)} == set(ids)
    assert isinstance(frames[-1], fr.GoAway)
    wait_for(lambda: not processes_with(marker), timeout=10, what="the exec'd process gone")


NEGOTIATION = ("unable to upgrade: unable to negotiate protocol: client supports [v9.channel.k8s.io], "
               "server accepts [{}]\n")


def test_handshake_refusals(node: Node) -> None:
    path = node.exec_path("true", query="output=1")
    missing = upgrade(node.agent, path, ())
    assert (missing.status, missing.body) == (400, b"unable to upgrade: X-Stream-Protocol-Version is required\n")
    unknown = upgrade(node.agent, path, ("v9.channel.k8s.io",))
    message = NEGOTIATION.format("v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io")
    assert (unknown.status, unknown.body.decode()) == (403, message * 2)
    assert unknown.header("X-Accepted-Stream-Protocol-Versions") == [
        "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"]
    pf = upgrade(node.agent, f"/portForward/default/{WEB}", ("v9.channel.k8s.io",))
    assert (pf.status, pf.body.decode()) == (403, NEGOTIATION.format("portforward.k8s.io"))
    bare = upgrade(node.agent, f"/portForward/default/{WEB}", ())
    assert (bare.status, bare.body) == (200, b"")
    gone = upgrade(node.agent, "/exec/default/nopod/c?output=1")
    assert (gone.status, gone.body) == (404, b"pod does not exist")


def test_other_paths_answer_as_usual(node: Node) -> None:
    answer = upgrade(node.agent, "/healthz", method="GET")
    assert (answer.status, answer.body) == (200, b"ok")
    assert answer.header("connection") == ["close"]


def test_authorization_is_checked(node: Node) -> None:
    answer = upgrade(node.agent, node.exec_path("true", query="output=1"), cert=False)
    assert answer.status == 401
