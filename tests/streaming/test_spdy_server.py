"""The SPDY upgrade through the real HTTP layer (TLS, authentication, the hijack of the connection)
with a fake container behind it (tests/streaming/fakes.py): sessions end cleanly, a client that
vanishes or misbehaves leaves no session and no task behind, and a shutdown closes upgraded
connections."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.spdy import frames as fr
from kubeletapi.streaming.spdy import remotecommand
from tests.fakehost import FakeHost, FakeNode
from tests.podtools import wait_for
from tests.streaming.fakes import FakeContainer, FakeSession
from tests.streaming.spdyclient import SpdyClient, upgrade
from tests.streaming.test_routes import RBAC

PATH = "/exec/ns/pod/c?command=sh&input=1&output=1"


class Setup:
    def __init__(self, node: FakeNode, container: FakeContainer) -> None:
        self.node = node
        self.container = container

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        self.node._loop.loop.call_soon_threadsafe(fn, *args)

    def tasks(self) -> int:
        async def count() -> int:
            return len(asyncio.all_tasks())
        return int(self.node._loop.run(count()))  # type: ignore[call-overload]

    def session(self) -> FakeSession:
        wait_for(lambda: self.container.session is not None, timeout=5, what="the session")
        assert self.container.session is not None
        return self.container.session

    def open(self) -> tuple[SpdyClient, dict[str, int]]:
        answer = upgrade(self.node, PATH)
        assert answer.status == 101 and answer.client is not None, (answer.status, answer.body)
        ids = {t: answer.client.open({"streamtype": t}) for t in ("error", "stdin", "stdout")}
        return answer.client, ids


@pytest.fixture
def setup(start_node: Callable[..., FakeNode]) -> Setup:
    container = FakeContainer()

    async def streams(namespace: str, pod: str, uid: str | None, name: str) -> FakeContainer:
        return container

    return Setup(start_node(host=FakeHost(container_streams=streams)), container)


def settled(setup: Setup, baseline: int) -> None:
    wait_for(lambda: setup.tasks() <= baseline, timeout=10, what=f"the loop back to {baseline} tasks")


def test_a_session_ends_with_its_status_and_leaves_no_task(setup: Setup) -> None:
    baseline = setup.tasks()
    client, ids = setup.open()
    session = setup.session()
    client.data(ids["stdin"], b"typed")
    client.data(ids["stdin"], b"", fin=True)
    wait_for(lambda: session.stdin_closed, timeout=5, what="stdin closed by FIN")
    assert session.stdin == [b"typed"]
    setup.call(session.emit, 1, b"printed")
    setup.call(session.end, 0)
    frames = client.frames_until_closed()
    client.close()
    data = {sid: b"".join(f.data for f in frames if isinstance(f, fr.Data) and f.stream_id == sid)
            for sid in ids.values()}
    assert data[ids["stdout"]] == b"printed"
    assert data[ids["error"]] == b'{"status":"Success"}'
    assert isinstance(frames[-1], fr.GoAway) and frames[-1].status == fr.GOAWAY_OK
    assert frames[-1].last_good_stream_id == ids["stdout"]
    settled(setup, baseline)


@pytest.mark.parametrize("how", ["reset", "fin"])
def test_a_vanished_client_closes_the_session(setup: Setup, how: str) -> None:
    baseline = setup.tasks()
    client, _ = setup.open()
    session = setup.session()
    if how == "reset":
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    else:
        client.sock.shutdown(socket.SHUT_RDWR)
    client.close()
    wait_for(lambda: session.closed >= 1, timeout=5, what="the session closed")
    settled(setup, baseline)


def test_a_bad_frame_ends_the_connection_with_goaway(setup: Setup) -> None:
    baseline = setup.tasks()
    client, _ = setup.open()
    session = setup.session()
    client.send(b"\x80\x03\x00\x63\x00\x00\x00\x00")  # control frame type 99: no such type
    frames = client.frames_until_closed()
    client.close()
    assert [f for f in frames if isinstance(f, fr.GoAway)] == [fr.GoAway(5, fr.GOAWAY_PROTOCOL_ERROR)]
    wait_for(lambda: session.closed >= 1, timeout=5, what="the session closed")
    settled(setup, baseline)


def test_streams_that_never_come_time_out(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remotecommand, "STREAM_CREATION_TIMEOUT_S", 0.5)
    baseline = setup.tasks()
    answer = upgrade(setup.node, PATH)
    assert answer.client is not None
    answer.client.open({"streamtype": "error"})
    started = time.monotonic()
    frames = answer.client.frames_until_closed()
    answer.client.close()
    assert 0.4 < time.monotonic() - started < 5
    assert isinstance(frames[-1], fr.GoAway)
    assert setup.container.session is None  # the command never started
    settled(setup, baseline)


def test_shutdown_closes_upgraded_connections(setup: Setup) -> None:
    client, _ = setup.open()
    session = setup.session()
    setup.node.close()
    assert client.frames_until_closed(timeout=10) is not None  # the connection ends, no hang
    client.close()
    assert session.closed >= 1


def test_upgrades_need_create_on_nodes_proxy(start_node: Callable[..., FakeNode], tmp_path: Path) -> None:
    """A SPDY upgrade is authorized as the HTTP request it is: POST is verb create on nodes/proxy."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("viewer-token,viewer,1\n")
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text(RBAC)
    node = start_node("--token-auth-file", str(tokens), "--authorization-rbac-file", str(rbac))
    forbidden = b"Forbidden (user=viewer, verb=create, resource=nodes, subresource(s)=[proxy])\n"
    for path in (PATH, "/attach/ns/pod/c?output=1", "/portForward/ns/pod"):
        answer = upgrade(node, path, cert=False, extra=(("Authorization", "Bearer viewer-token"),))
        assert (answer.status, answer.body) == (403, forbidden), path
