"""/exec, /attach and /portForward over SPDY/3.1 with client-go's own SPDY executor and port
forwarder (tests/cluster/k8s/spdyclient, what kubectl and the API server run), straight against a
real agent's secure port with the admin certificate, on the process runtime.

One agent (module scope) with the pods of tests/e2e/streamnode.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.e2e.streamnode import PAGE, READER, WEB, exec_path, stream_node
from tests.helpers import Agent
from tests.streaming.goclient import GoClient

pytestmark = pytest.mark.e2e

@dataclass
class Node:
    agent: Agent
    client: GoClient
    web_port: int
    www: Path


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    with stream_node(tmp_path_factory.mktemp("spdy")) as started:
        yield Node(started.agent, GoClient(started.agent), started.web_port, started.www)


def _shown(result: object) -> str:
    return f"client: {result!r}"


# --- exec ----------------------------------------------------------------------------------------


def test_echo_output_and_exit_zero(node: Node) -> None:
    result = node.client.run("exec", exec_path("echo", "hi"))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"hi\n", b""), _shown(result)


def test_remote_exit_code(node: Node) -> None:
    result = node.client.run("exec", exec_path("sh", "-c", "exit 3"))
    assert (result.returncode, result.stdout) == (3, b""), _shown(result)
    assert b"command terminated with exit code 3" in result.stderr, _shown(result)  # client-go's words


def test_stderr_is_separate(node: Node) -> None:
    result = node.client.run("exec", exec_path("sh", "-c", "echo out; echo err >&2"))
    assert (result.returncode, result.stdout, result.stderr) == (0, b"out\n", b"err\n"), _shown(result)


def test_stdin_round_trip_is_byte_identical(node: Node) -> None:
    data = os.urandom(1 << 20)
    result = node.client.run("exec", exec_path("cat", query="input=1&output=1&error=1"), stdin=data)
    assert result.returncode == 0, _shown(result)
    assert len(result.stdout) == len(data)
    assert result.stdout == data  # the end of stdin (a half-close) ended cat


def test_stdin_close_ends_the_command(node: Node) -> None:
    result = node.client.run("exec", exec_path("sh", "-c", "wc -c; echo done", query="input=1&output=1"),
                             stdin=b"12345", timeout=20)
    assert (result.returncode, result.stdout.split()) == (0, [b"5", b"done"]), _shown(result)


@pytest.mark.parametrize(("protocol", "exit_code", "message"), [
    # v4: the exit code as the status's NonZeroExitCode cause; client-go exits with it
    pytest.param("v4.channel.k8s.io", 3, b"command terminated with exit code 3", id="v4"),
    # v3, v2: the error stream's text only, an error for client-go
    pytest.param("v3.channel.k8s.io", 1, b"error executing remote command: command terminated with non-zero exit code",
                 id="v3"),
    pytest.param("v2.channel.k8s.io", 1, b"error executing remote command: command terminated with non-zero exit code",
                 id="v2"),
    # v1: client-go's handler returns at the first of the error stream's text (then stdout may
    # not be copied yet) and the end of stdout and stderr (then the text is not read), against
    # the real kubelet too: 0 with all the output, or 1 with the text and maybe the output
    pytest.param("channel.k8s.io", None,
                 b"Error executing remote command: command terminated with non-zero exit code", id="v1"),
])
def test_every_protocol(node: Node, protocol: str, exit_code: int | None, message: bytes) -> None:
    flags = ("-protocol", protocol)
    result = node.client.run("exec", exec_path("echo", "hi"), flags=flags)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"hi\n", b""), _shown(result)
    result = node.client.run("exec", exec_path("sh", "-c", "echo out; exit 3"), flags=flags)
    if exit_code is None and result.returncode == 0:  # v1, the output first
        assert result.stdout == b"out\n", _shown(result)
    elif exit_code is None:  # v1, the error stream first
        assert (result.returncode, result.stdout in (b"", b"out\n")) == (1, True), _shown(result)
        assert message in result.stderr, _shown(result)
    else:
        assert (result.returncode, result.stdout) == (exit_code, b"out\n"), _shown(result)
        assert message in result.stderr, _shown(result)


def test_tty_size_and_resize_seen_by_stty(node: Node) -> None:
    # The sizes reach the terminal asynchronously: the shell waits (up to 5 s) for the second one.
    script = 'i=0; while [ "$(stty size)" != "30 100" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; stty size'
    running = node.client.start("exec", exec_path("sh", "-c", script, query="input=1&output=1&tty=1"),
                                flags=("-size", "80x24", "-size", "100x30"))
    running.proc.wait(20)  # the remote shell's exit ends the client, stdin still open
    code, out, err = running.finish()
    assert (code, out) == (0, b"30 100\r\n"), (code, out, err)


def test_tty_exit_code(node: Node) -> None:
    result = node.client.run("exec", exec_path("sh", "-c", "exit 4", query="input=1&output=1&tty=1"),
                             flags=("-size", "80x24"))
    assert result.returncode == 4, _shown(result)


def test_attach_to_a_container_reading_stdin(node: Node) -> None:
    running = node.client.start("attach", f"/attach/default/{READER}/echo?input=1&output=1&error=1")
    running.send(b"ping\n")
    running.wait_output(b"got: ping\n")
    running.send(b"pong\n")
    assert running.wait_output(b"got: pong\n") == b"got: ping\ngot: pong\n"
    running.stop()


# --- port-forward --------------------------------------------------------------------------------


def test_port_forward_to_http_server(node: Node) -> None:
    path = f"/portForward/default/{WEB}"
    with node.client.port_forward(path, f"0:{node.web_port}", f"0:{node.web_port}") as (running, ports):
        assert len(ports) == 2
        for port in ports * 3:  # one connection (one stream pair) each
            reply = httpx.get(f"http://127.0.0.1:{port}/hello.txt", timeout=10)
            assert (reply.status_code, reply.content) == (200, PAGE)

        def fetch(i: int) -> tuple[int, bytes]:
            reply = httpx.get(f"http://127.0.0.1:{ports[i % 2]}/hello.txt", timeout=20)
            return reply.status_code, reply.content

        with ThreadPoolExecutor(10) as pool:
            assert list(pool.map(fetch, range(20))) == [(200, PAGE)] * 20
        code, _, err = running.finish()  # stdin closed: the forwarder stops
    assert code == 0, err


def test_port_forward_large_download(node: Node) -> None:
    body = os.urandom(8 << 20)
    (node.www / "big.bin").write_bytes(body)
    with node.client.port_forward(f"/portForward/default/{WEB}", f"0:{node.web_port}") as (_, ports):
        reply = httpx.get(f"http://127.0.0.1:{ports[0]}/big.bin", timeout=30)
    assert reply.status_code == 200
    assert reply.content == body


# --- negotiation ---------------------------------------------------------------------------------


def test_negotiates_v4_for_exec_and_portforward(node: Node) -> None:
    offered = ["v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"]
    result = node.client.run("dial", exec_path("true"), *offered)
    assert (result.returncode, result.stdout) == (0, b'status 101 protocol "v4.channel.k8s.io"\n'), _shown(result)
    result = node.client.run("dial", f"/portForward/default/{WEB}", "portforward.k8s.io")
    assert (result.returncode, result.stdout) == (0, b'status 101 protocol "portforward.k8s.io"\n'), _shown(result)


@pytest.mark.parametrize(("path", "offered", "accepted"), [
    pytest.param(exec_path("true"), "v9.channel.k8s.io",
                 '["v4.channel.k8s.io" "v3.channel.k8s.io" "v2.channel.k8s.io" "channel.k8s.io"]', id="exec"),
    pytest.param(f"/portForward/default/{WEB}", "channel.k8s.io", '["portforward.k8s.io"]', id="portforward"),
])
def test_unknown_protocol_is_refused_with_403(node: Node, path: str, offered: str, accepted: str) -> None:
    result = node.client.run("dial", path, offered)
    assert result.returncode == 1, _shown(result)
    err = result.stderr.decode()
    assert f"status 403, accepted {accepted}: unable to upgrade connection: " in err, err
    assert "unable to negotiate protocol" in err, err
