"""The exec/attach bridge against a fake WebSocket and a fake session.

Each test runs one bridge to its end in its own event loop and then checks that no task of the
bridge is left (asyncio.all_tasks) and that the session was closed exactly as it should be.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from kubeletapi.errors import InvalidInput, Unavailable
from kubeletapi.runtime.streaming import STDERR, STDOUT, StreamOptions
from kubeletapi.streaming.conn import ChannelConn
from kubeletapi.streaming.protocol import REMOTE_COMMAND, V1_BASE64, V4_BASE64, V4_BINARY, V5_BINARY
from kubeletapi.streaming.remotecommand import RemoteCommand, serve_remote_command
from tests.streaming.fakes import FakeContainer, FakeSession, FakeSocket

ALL = StreamOptions(stdin=True, stdout=True, stderr=True)
Scenario = Callable[[FakeSocket, FakeContainer], Awaitable[None]]


async def started(container: FakeContainer) -> FakeSession:
    while container.session is None:
        await asyncio.sleep(0)
    return container.session


def run(scenario: Scenario, request: RemoteCommand, proto: str = V4_BINARY,
        container: FakeContainer | None = None, idle: float | None = None) -> tuple[FakeSocket, FakeContainer]:
    """Serve `request` while `scenario` plays the client; assert that nothing is left running."""
    ws = FakeSocket()
    target = container or FakeContainer()

    async def main() -> None:
        before = asyncio.all_tasks()
        conn = ChannelConn(ws, REMOTE_COMMAND[proto], idle)
        server = asyncio.create_task(serve_remote_command(conn, request, target))
        await asyncio.wait_for(asyncio.gather(server, scenario(ws, target)), 5)
        assert asyncio.all_tasks() == before, "the bridge left tasks behind"

    asyncio.run(main())
    return ws, target


def echo_cmd() -> RemoteCommand:
    return RemoteCommand(ALL, ("cat",))


def test_exec_success_frames_in_order() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        session.emit(STDOUT, b"out1")
        session.emit(STDERR, b"err1")
        session.emit(STDOUT, b"out2")
        session.end(0)

    ws, target = run(client, RemoteCommand(ALL, ("sh", "-c", "x")))
    assert ws.sent == [b"\x01", b"\x01out1", b"\x02err1", b"\x01out2", b'\x03{"status":"Success"}']
    assert ws.closed_with == 1000
    assert target.calls == [("exec", ("sh", "-c", "x"), ALL)]
    assert target.session is not None and target.session.closed == 1


@pytest.mark.parametrize(
    ("proto", "status"),
    [
        pytest.param(V5_BINARY, b'\x03{"status":"Failure"', id="v5-json"),
        pytest.param(V4_BINARY, b'\x03{"status":"Failure"', id="v4-json"),
        pytest.param("channel.k8s.io", b"\x03command terminated with non-zero exit code: error executing command "
                     b"[sh -c exit 3], exit code 3", id="v1-text"),
        pytest.param("", b"\x03command terminated", id="no-protocol-is-v1"),
    ],
)
def test_non_zero_exit(proto: str, status: bytes) -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        (await started(target)).end(3)

    ws, _ = run(client, RemoteCommand(ALL, ("sh", "-c", "exit 3")), proto)
    last = ws.sent[-1]
    assert isinstance(last, bytes) and last.startswith(status)
    if status.startswith(b'\x03{'):
        body = json.loads(last[1:])
        assert body["reason"] == "NonZeroExitCode"
        assert body["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}
    assert ws.closed_with == 1000


def test_v1_success_writes_no_status() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        session.emit(STDOUT, b"hi")
        session.end(0)

    ws, _ = run(client, echo_cmd(), "channel.k8s.io")
    assert ws.sent == [b"\x01", b"\x01hi"]
    assert ws.closed_with == 1000


@pytest.mark.parametrize("proto", [V4_BASE64, V1_BASE64])
def test_base64_framing_both_ways(proto: str) -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        ws.client_send("0aGVsbG8K")  # "hello\n" on stdin, as a text frame
        ws.client_send(b"0d29ybGQK")  # "world\n", in a binary frame: read the same way
        while len(session.stdin) < 2:
            await asyncio.sleep(0.001)
        session.emit(STDOUT, b"hello\n")
        session.end(1)

    ws, target = run(client, echo_cmd(), proto)
    assert target.session is not None and target.session.stdin == [b"hello\n", b"world\n"]
    assert ws.sent[:2] == ["1", "1aGVsbG8K"]
    assert isinstance(ws.sent[2], str) and ws.sent[2].startswith("3")  # status, base64 too


@pytest.mark.parametrize(
    ("opts", "ready"),
    [
        pytest.param(StreamOptions(stdin=True, stdout=True, stderr=True), b"\x01", id="stdout"),
        pytest.param(StreamOptions(stdin=True, stdout=False, stderr=True), b"\x02", id="stderr-without-stdout"),
        pytest.param(StreamOptions(stdin=True, stdout=False, stderr=False), b"\x03", id="error-without-outputs"),
    ],
)
def test_ready_frame_on_lowest_open_output(opts: StreamOptions, ready: bytes) -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        session.emit(STDOUT, b"dropped unless requested")
        session.emit(STDERR, b"dropped unless requested")
        session.end(0)

    ws, _ = run(client, RemoteCommand(opts, ("x",)))
    assert ws.sent[0] == ready
    outputs = {m[0] for m in ws.sent[1:-1] if isinstance(m, bytes)}
    assert outputs == {ch for ch, on in ((1, opts.stdout), (2, opts.stderr)) if on}


def test_stdin_in_order_with_backpressure() -> None:
    """While a stdin write is blocked, the bridge reads at most one message ahead."""

    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        session.stdin_gate.clear()
        for i in range(5):
            ws.client_send(b"\x00" + str(i).encode())
        await asyncio.wait_for(session.stdin_entered.wait(), 2)
        await asyncio.sleep(0.05)
        assert ws.receives == 2, "the socket was read ahead more than one message"
        assert ws.inbox.qsize() == 3
        session.stdin_gate.set()
        while len(session.stdin) < 5:
            await asyncio.sleep(0.001)
        session.end(0)

    _, target = run(client, echo_cmd())
    assert target.session is not None and target.session.stdin == [b"0", b"1", b"2", b"3", b"4"]


def test_v5_close_half_closes_stdin() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        ws.client_send(b"\x00abc")
        ws.client_send(b"\xff\x00")
        ws.client_send(b"\x00after close")  # dropped: stdin is closed
        while not session.stdin_closed:
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.01)
        session.emit(STDOUT, b"abc")
        session.end(0)

    ws, target = run(client, echo_cmd(), V5_BINARY)
    assert target.session is not None and target.session.stdin == [b"abc"]
    assert ws.sent[-1] == b'\x03{"status":"Success"}'


def test_close_signal_is_plain_data_before_v5() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        ws.client_send(b"\xff\x00")  # channel 255: ignored on v4
        ws.client_send(b"\x00x")
        while not session.stdin:
            await asyncio.sleep(0.001)
        session.end(0)

    _, target = run(client, echo_cmd(), V4_BINARY)
    assert target.session is not None and not target.session.stdin_closed


def test_resize_and_bad_resize() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        ws.client_send(b'\x04{"Width":80,"Height":24}')
        ws.client_send(b"\x04{not json")
        ws.client_send(b'\x04{"Width":100,"Height":50}')
        while len(session.resizes) < 2:
            await asyncio.sleep(0.001)
        session.end(0)

    ws, target = run(client, RemoteCommand(StreamOptions(stdin=True, stdout=True, stderr=False, tty=True), ("sh",)))
    assert target.session is not None and target.session.resizes == [(80, 24), (100, 50)]
    assert ws.sent[-1] == b'\x03{"status":"Success"}'


def test_unknown_and_unrequested_channels_are_ignored() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        for message in (b"\x01x", b"\x02x", b"\x03x", b"\x07x", b"\x00stdin not requested", b""):
            ws.client_send(message)
        await asyncio.sleep(0.02)
        session.end(0)

    _, target = run(client, RemoteCommand(StreamOptions(stdin=False, stdout=True, stderr=False), ("x",)))
    assert target.session is not None and target.session.stdin == []


@pytest.mark.parametrize("how", ["close-frame", "after-output"])
def test_client_disconnect_closes_the_session(how: str) -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        if how == "after-output":
            session.emit(STDOUT, b"x")
            await ws.wait_sent(2)
        ws.client_close()
        while not session.closed:
            await asyncio.sleep(0.001)

    ws, target = run(client, echo_cmd())
    assert target.session is not None and target.session.closed == 1
    assert all(not (isinstance(m, bytes) and m.startswith(b"\x03")) for m in ws.sent), "no status to a gone client"


def test_disconnect_while_stdin_is_blocked() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        session.stdin_gate.clear()
        ws.client_send(b"\x00stuck")
        await asyncio.wait_for(session.stdin_entered.wait(), 2)
        ws.client_close()

    _, target = run(client, echo_cmd())
    assert target.session is not None and target.session.closed == 1


def test_send_to_a_vanished_client_ends_the_stream() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        ws.gone = True  # writes fail, reads still hang: a peer reset seen on write first
        session.emit(STDOUT, b"x")

    _, target = run(client, echo_cmd())
    assert target.session is not None and target.session.closed == 1


def test_idle_timeout_closes_the_stream() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        ws.client_send(b"\x00keep alive")  # activity pushes the deadline
        await asyncio.sleep(0.1)
        assert not session.closed
        while not session.closed:
            await asyncio.sleep(0.01)

    ws, target = run(client, echo_cmd(), idle=0.15)
    assert target.session is not None and target.session.closed == 1
    assert ws.closed_with == 1000
    assert not any(isinstance(m, bytes) and m.startswith(b"\x03") for m in ws.sent)


def test_output_error_is_an_internal_error() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        (await started(target)).fail(Unavailable("the shim died"))

    ws, target = run(client, echo_cmd())
    assert ws.sent[-1] == (b'\x03{"status":"Failure","message":"Internal error occurred: error executing command in '
                           b'container: the shim died","reason":"InternalError","code":500}')
    assert target.session is not None and target.session.closed == 1


def test_runtime_refusal_is_written_on_the_error_channel() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        await ws.wait_sent(2)

    refused = FakeContainer(refuse=InvalidInput("container 'main' is not running"))
    ws, _ = run(client, echo_cmd(), container=refused)
    assert ws.sent == [b"\x01", b'\x03{"status":"Failure","message":"Internal error occurred: error executing '
                                 b"command in container: container 'main' is not running\",\"reason\":"
                                 b'"InternalError","code":500}']
    assert ws.closed_with == 1000


def test_exec_without_command_never_reaches_the_runtime() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        await ws.wait_sent(2)

    ws, target = run(client, RemoteCommand(ALL, ()))
    assert target.calls == []
    assert b"error executing command in container: command must not be empty" in ws.sent[-1]


def test_attach_ends_with_success_whatever_the_exit_code() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        session = await started(target)
        session.emit(STDOUT, b"bye")
        session.end(3)

    ws, target = run(client, RemoteCommand(ALL, attach=True))
    assert target.calls == [("attach", (), ALL)]
    assert ws.sent[-1] == b'\x03{"status":"Success"}'


def test_attach_failure_names_attaching() -> None:
    async def client(ws: FakeSocket, target: FakeContainer) -> None:
        await ws.wait_sent(2)

    refused = FakeContainer(refuse=InvalidInput("no stdin"))
    ws, _ = run(client, RemoteCommand(ALL, attach=True), container=refused)
    assert b"Internal error occurred: error attaching to container: no stdin" in ws.sent[-1]
