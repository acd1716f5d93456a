"""Issue 13's attacks on the listeners of a real `python -m kubeletapi` process: idle connections at
the default soft file limit."""

from __future__ import annotations

import os
import resource
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import LOOPBACK, AgentProcess, agent_args

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
