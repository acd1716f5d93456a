"""Hostile SPDY clients against a real agent, after a real 101 on /exec of a `sleep` whose argument
is unique to the test (30.<random digits> seconds: the marker pgrep looks for on the host, where
the process runtime runs it): garbage instead of frames, a bad frame in the middle of a session,
a header block that inflates to over 1 MiB, a client that vanishes. Each time the agent answers
GOAWAY PROTOCOL_ERROR (or nothing, to a client that left) and closes the connection, the
exec'd process is gone soon after, and a normal exec on another connection at the same time
runs to its end."""

from __future__ import annotations

import json
import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kubeletapi.spdy import frames as fr
from tests.e2e.streamnode import Node, stream_node
from tests.podtools import wait_for
from tests.streaming.spdyclient import SpdyClient, upgrade

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with stream_node(tmp_path_factory.mktemp("spdybad")) as started:
        yield started

OUTPUTS = ("error", "stdout", "stderr")


def _marker() -> str:
    return f"30.{random.randrange(10**8, 10**9)}"


def _running(marker: str) -> list[int]:
    done = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True, check=False)
    return [int(pid) for pid in done.stdout.split()]


def _upgraded(node: Node, *cmd: str) -> SpdyClient:
    answer = upgrade(node.agent, node.exec_path(*cmd))
    assert answer.status == 101, (answer.status, answer.body)
    assert answer.client is not None
    return answer.client


def _sleeping(node: Node) -> tuple[SpdyClient, str]:
    """A session whose `sleep` runs: its streams opened and replied to, its process seen."""
    marker = _marker()
    client = _upgraded(node, "sleep", marker)
    for kind in OUTPUTS:
        client.open({"streamtype": kind})
    replies = [client.frame() for _ in OUTPUTS]
    assert all(isinstance(f, fr.SynReply) for f in replies), replies
    wait_for(lambda: bool(_running(marker)), what=f"sleep {marker} running")
    return client, marker


def _ends_with_goaway(client: SpdyClient) -> None:
    frames = client.frames_until_closed(timeout=10)
    client.close()
    goaways = [f for f in frames if isinstance(f, fr.GoAway)]
    assert goaways == [fr.GoAway(goaways[0].last_good_stream_id, fr.GOAWAY_PROTOCOL_ERROR)], frames
    assert frames[-1] == goaways[0], frames
    assert all(isinstance(f, fr.RstStream | fr.GoAway | fr.Ping) for f in frames), frames


def _gone(marker: str) -> None:
    wait_for(lambda: not _running(marker), timeout=10, what=f"sleep {marker} gone")


def _meanwhile(clients: list[SpdyClient], call: Callable[[], None]) -> None:
    """Run `call` while the clients ping every half second: the module's agent closes a
    connection idle for 2 s (streamingConnectionIdleTimeout)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    ping = 1
    while thread.is_alive():
        for client in clients:
            client.send(fr.ping(ping))
        ping += 2
        thread.join(0.5)
    if errors:
        raise errors[0]


def _normal_exec(node: Node) -> None:
    client = _upgraded(node, "sh", "-c", "echo normal; exit 4")
    ids = {client.open({"streamtype": kind}): kind for kind in OUTPUTS}
    frames = client.frames_until_closed(timeout=10)
    client.close()
    out: dict[str, bytes] = {}
    for frame in frames:
        if isinstance(frame, fr.Data) and frame.stream_id in ids:
            out[ids[frame.stream_id]] = out.get(ids[frame.stream_id], b"") + frame.data
    assert out["stdout"] == b"normal\n"
    assert json.loads(out["error"])["details"]["causes"] == [{"reason": "ExitCode", "message": "4"}]


def _header_bomb(client: SpdyClient) -> bytes:
    """A SYN_STREAM whose block inflates to 2 MiB (about 2 KiB compressed), in the client's
    deflate context so that the block itself is valid zlib."""
    block = client.compressor.compress({"big": ["a" * (2 << 20)]})
    return fr._control(fr.SYN_STREAM, 0, (client.next_id).to_bytes(4, "big") + b"\0" * 6 + block)


def test_garbage_instead_of_frames(node: Node) -> None:
    marker = _marker()
    client = _upgraded(node, "sleep", marker)
    client.send(bytes(range(255, -1, -1)))  # a control frame of version 0x7ffe, and more
    _ends_with_goaway(client)
    assert not _running(marker)


@pytest.mark.parametrize("bad", ["bad_version", "rst_status_0", "unknown_type", "header_bomb", "bad_zlib"])
def test_a_bad_frame_mid_session_ends_it_and_the_process(node: Node, bad: str) -> None:
    client, marker = _sleeping(node)
    _meanwhile([client], lambda: _normal_exec(node))  # another connection works while this one is open
    frame = {
        "bad_version": b"\x80\x02" + fr.ping(1)[2:],  # a SPDY/2 PING
        "rst_status_0": fr.rst_stream(1, 0),
        "unknown_type": b"\x80\x03\x00\x63\x00\x00\x00\x04abcd",
        "header_bomb": _header_bomb(client),
        "bad_zlib": fr._control(fr.HEADERS, 0, b"\0\0\0\x01" + b"\xde\xad\xbe\xef" * 4),
    }[bad]
    client.send(frame)
    _ends_with_goaway(client)
    _gone(marker)
    _normal_exec(node)


def test_a_client_that_vanishes_mid_stream(node: Node) -> None:
    client, marker = _sleeping(node)
    client.data(1, b"half a fra")
    client.send(fr.data_frame(3, b"x" * 100)[:50])  # and half a frame
    client.sock.close()
    _gone(marker)
    _normal_exec(node)


def test_many_hostile_connections_at_once(node: Node) -> None:
    """Four sessions, each with its process, then each ended by a different bad input, while a
    normal exec runs in between: no process is left and the agent still serves."""
    sessions: list[tuple[SpdyClient, str]] = []
    for _ in range(4):
        sessions.append(_sleeping(node))
        for client, _ in sessions:
            client.send(fr.ping(1))  # none of them idles out meanwhile
    started = time.monotonic()
    for i, (client, _) in enumerate(sessions):
        if i % 2:
            client.sock.close()
        else:
            client.send(fr.goaway(0)[:6] + b"\xff\xff")  # GOAWAY whose length is wrong
            _ends_with_goaway(client)
    _normal_exec(node)
    for _, marker in sessions:
        _gone(marker)
    assert time.monotonic() - started < 20
