"""Issue 13's attacks on the listeners of a real `python -m kubeletapi` process: idle connections at
the default soft file limit, and request heads of 64 MiB (memory, and /healthz meanwhile)."""

from __future__ import annotations

import os
import resource
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import LOOPBACK, AgentProcess, agent_args, tls_client_context

pytestmark = pytest.mark.e2e
SOFT_NOFILE = 1024


def port(args: list[str], flag: str) -> int:
    return int(args[args.index(flag) + 1])


@pytest.fixture
def started(tmp_path: Path) -> Iterator[tuple[AgentProcess, list[str]]]:
    """An agent started with a soft RLIMIT_NOFILE of 1024 (the usual default)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard < 2 * SOFT_NOFILE:
        pytest.skip(f"the hard open file limit ({hard}) leaves nothing to raise")
    args = agent_args(tmp_path)
    agent = AgentProcess(args, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT_NOFILE, hard)))
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{port(args, '--healthz-port')}/healthz")
        yield agent, args
    finally:
        agent.stop()


def open_files_limit(pid: int) -> tuple[int, int]:
    line = next(x for x in Path(f"/proc/{pid}/limits").read_text().splitlines() if x.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    return int(soft), int(hard)


def test_soft_file_limit_is_raised_to_the_hard_limit(started: tuple[AgentProcess, list[str]]) -> None:
    agent, _ = started
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert open_files_limit(agent.proc.pid) == (hard, hard)
    _, out = agent.stop()
    assert f"Open file limit (RLIMIT_NOFILE): raised the soft limit from {SOFT_NOFILE} to the hard limit {hard}" in out


def test_1100_idle_connections_leave_the_agent_serving(started: tuple[AgentProcess, list[str]]) -> None:
    """The attack of the issue: more idle connections than the default soft limit. Every one is
    accepted (the agent holds them until the header timeout) and every listener still serves."""
    agent, args = started
    before = len(os.listdir(f"/proc/{agent.proc.pid}/fd"))
    previous = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (previous[1], previous[1]))  # this test's own sockets
    socks: list[socket.socket] = []
    try:
        socks = [socket.create_connection((LOOPBACK, port(args, "--read-only-port"))) for _ in range(1100)]
        with httpx.Client(timeout=10) as client:
            for flag in ("--read-only-port", "--healthz-port"):
                assert client.get(f"http://{LOOPBACK}:{port(args, flag)}/healthz").text == "ok"
        assert len(os.listdir(f"/proc/{agent.proc.pid}/fd")) >= before + 1100
    finally:
        for sock in socks:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, previous)


def peak_rss_kib(pid: int) -> int:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1])


def send_huge_head(address: tuple[str, int], ctx: ssl.SSLContext | None, size: int) -> bytes:
    """Stream a request head of `size` bytes; the agent's answer."""
    raw = socket.create_connection(address, timeout=30)
    sock = ctx.wrap_socket(raw, server_hostname=LOOPBACK) if ctx else raw
    with sock:
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
            chunk = b"a" * (1 << 20)
            for _ in range(size >> 20):
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass
        answer = b""
        try:
            while chunk := sock.recv(4096):
                answer += chunk
        except (ConnectionResetError, ssl.SSLError):
            pass
        return answer


@pytest.mark.skipif(os.geteuid() != 0, reason="resetting the peak RSS (/proc/<pid>/clear_refs) needs root")
def test_64mib_heads_cost_no_memory(started: tuple[AgentProcess, list[str]]) -> None:
    """Before issue 13 one 64 MiB header cost 128 MB of RSS and, 4 at once, stalled /healthz for
    seconds. Now each is refused after 1 MiB: 2 on each port at once, the peak RSS grows by a few
    MiB and /healthz answers throughout."""
    agent, args = started
    ctx = tls_client_context(Path(args[args.index("--cert-dir") + 1]) / "ca.crt")
    Path(f"/proc/{agent.proc.pid}/clear_refs").write_text("5")  # the peak RSS starts again from here
    before = peak_rss_kib(agent.proc.pid)
    answers: list[bytes] = []
    attackers = [
        threading.Thread(target=lambda a=address, c=tls: answers.append(send_huge_head(a, c, 64 << 20)))
        for address, tls in [((LOOPBACK, port(args, "--read-only-port")), None),
                             ((LOOPBACK, port(args, "--port")), ctx)] * 2
    ]
    for thread in attackers:
        thread.start()
    with httpx.Client(timeout=10) as client:
        while any(t.is_alive() for t in attackers):
            assert client.get(f"http://{LOOPBACK}:{port(args, '--healthz-port')}/healthz").text == "ok"
    for thread in attackers:
        thread.join()
    assert [a.split(b"\r\n", 1)[0] for a in answers] == [b"HTTP/1.1 431 Request Header Fields Too Large"] * 4
    grown_mib = (peak_rss_kib(agent.proc.pid) - before) / 1024
    assert grown_mib < 16, f"peak RSS grew by {grown_mib:.1f} MiB"
