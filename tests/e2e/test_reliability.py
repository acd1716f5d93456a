"""Attacks on a running agent that must cost no pod (issue: reliability)."""

from __future__ import annotations

import socket
import time
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_pods_restart import all_running, flag, pids_with
from tests.helpers import LOOPBACK, AgentProcess, agent_args, purge
from tests.podtools import container, manifest, status_of, wait_for, write

pytestmark = pytest.mark.e2e

FD_LIMIT = 128  # soft and hard: the agent cannot raise it


def open_fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def test_descriptor_exhaustion_costs_no_static_pod(tmp_path: Path) -> None:
    """The agent runs out of file descriptors (idle connections it accepted): its manifest
    directory cannot be listed for a while. Its pod keeps running, untouched."""
    manifests = tmp_path / "manifests"
    args = agent_args(tmp_path, "--pod-manifest-path", str(manifests), "--file-check-frequency", "1s")
    marker = f"keep-{uuid.uuid4().hex}"
    write(manifests, "keep.yaml", manifest("keep", container("main", ["sh", "-c", f"sleep 3600 # {marker}"])))
    agent = AgentProcess(args, wrapper=["prlimit", f"--nofile={FD_LIMIT}:{FD_LIMIT}"])
    held: list[socket.socket] = []
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
        before = wait_for(lambda: all_running(args, ["keep"]), what="pod running")["keep-testnode"]
        pids = pids_with(marker)
        assert pids
        port = int(flag(args, "--read-only-port"))
        for _ in range(FD_LIMIT * 2):  # the kernel queues them; the agent accepts until it has no descriptor left
            held.append(socket.create_connection((LOOPBACK, port), timeout=5))
        wait_for(lambda: open_fds(agent.proc.pid) >= FD_LIMIT - 2, timeout=20, what="the agent out of descriptors")
        time.sleep(3.5)  # three scans of the manifest directory without a descriptor to list it
        assert open_fds(agent.proc.pid) >= FD_LIMIT - 2, "the agent got its descriptors back too early"
    finally:
        for sock in held:
            sock.close()
    try:
        wait_for(lambda: open_fds(agent.proc.pid) < FD_LIMIT // 2, timeout=20, what="descriptors back")
        # Longer than a pod worker's retry of a failed kill (5 s): a kill decided during the
        # shortage would have been carried out by now.
        time.sleep(6)
        after = wait_for(lambda: all_running(args, ["keep"]), timeout=20, what="pod still running")["keep-testnode"]
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert status_of(after, "main")["containerID"] == status_of(before, "main")["containerID"]
        assert status_of(after, "main")["restartCount"] == 0
        assert pids_with(marker) == pids  # the same process, never stopped
    finally:
        _, out = agent.stop()
        purge(args)
    assert "Too many open files; keeping its pods" in out, out[-3000:]
    assert "removed" not in out and "stopping container" not in out, out[-3000:]
