"""Attacks on a running agent that must cost no pod (issue: reliability)."""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_pods_restart import all_running, flag, pids_with
from tests.helpers import LOOPBACK, Agent, AgentProcess, agent_args, purge, tls_client_context
from tests.podtools import container, manifest, pods, running, status_of, wait_for, write

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


def manifests_of(admin_url: str, client: httpx.Client) -> dict[str, dict[str, str]]:
    return {Path(r["origin"]).name: r for r in client.get(admin_url).json()["items"]}


def test_a_duplicate_never_displaces_the_running_pod_across_a_restart(tmp_path: Path) -> None:
    """b.yaml's pod runs; while the agent is down, a-dup.yaml (sorting first) defines the same
    pod name. After the restart the running pod keeps running and the newcomer is rejected."""
    manifests = tmp_path / "manifests"
    args = agent_args(tmp_path, "--pod-manifest-path", str(manifests))
    marker = f"first-{uuid.uuid4().hex}"
    write(manifests, "b.yaml", manifest("web", container("main", ["sh", "-c", f"sleep 3600 # {marker}"])))
    agent = AgentProcess(args)
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
        before = wait_for(lambda: all_running(args, ["web"]), what="web running")["web-testnode"]
        pids = pids_with(marker)
        agent.kill()
        write(manifests, "a-dup.yaml", manifest("web", container("main", ["sleep", "3601"])))
        agent = AgentProcess(args)
        agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
        url = f"https://{LOOPBACK}:{flag(args, '--port')}/manifests"
        certs = tmp_path / "certs"
        tls = tls_client_context(certs / "ca.crt", (certs / "admin.crt", certs / "admin.key"))

        def settled() -> dict[str, dict[str, str]] | None:
            with httpx.Client(verify=tls, timeout=5) as client:
                found = manifests_of(url, client)
            return found if len(found) == 2 else None

        records = wait_for(settled, what="both manifests judged")
        time.sleep(2)  # a wrong winner would be syncing by now: the other pod killed as an orphan
        after = wait_for(lambda: all_running(args, ["web"]), what="web running")["web-testnode"]
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert status_of(after, "main")["containerID"] == status_of(before, "main")["containerID"]
        assert pids_with(marker) == pids
        assert records["b.yaml"]["state"] == "accepted"
        assert records["a-dup.yaml"]["state"] == "rejected"
        assert records["a-dup.yaml"]["reason"] == (
            f"pod default/web-testnode is already defined by {manifests / 'b.yaml'}")
    finally:
        _, out = agent.stop()
        purge(args)
    rejected = f"static pod manifest rejected: {manifests / 'a-dup.yaml'}: pod default/web-testnode is already"
    assert rejected in out, out[-3000:]  # the line names the rejected file first


def test_a_manifest_copying_a_pods_uid_is_rejected(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    manifests = tmp_path / "manifests"
    uid = uuid.uuid4().hex
    victim = manifest("victim", container("main", ["sleep", "300"])).replace(
        "metadata:\n  name: victim\n", f"metadata:\n  name: victim\n  uid: {uid}\n")
    write(manifests, "victim.yaml", victim)
    first = wait_for(lambda: running(agent, "victim"), what="victim running")
    assert first["metadata"]["uid"] == uid
    write(manifests, "impostor.yaml", victim.replace("name: victim\n", "name: impostor\n", 1))
    with agent.admin() as client:
        records = wait_for(lambda: (r := manifests_of(agent.url(path="/manifests"), client)) and len(r) == 2 and r,
                           what="the impostor judged")
    assert records["impostor.yaml"]["state"] == "rejected"
    assert records["impostor.yaml"]["reason"] == (
        f"pod UID {uid} is already used by pod default/victim-testnode ({manifests / 'victim.yaml'})")
    time.sleep(1)
    names = {name for name, pod in pods(agent).items()}
    assert names == {"victim-testnode"}
    now = running(agent, "victim")
    assert now is not None and status_of(now, "main")["containerID"] == status_of(first, "main")["containerID"]


def test_a_blocked_event_loop_shows_in_syncloop_metrics_and_log(
    start_agent: Callable[..., Agent], caplog: pytest.LogCaptureFixture
) -> None:
    agent = start_agent()
    with httpx.Client(timeout=10) as client:
        assert client.get(agent.url("read-only", "/healthz/syncloop")).status_code == 200

        async def block_the_loop() -> None:
            time.sleep(2.5)  # a step that holds the whole agent

        caplog.set_level(logging.WARNING, logger="kubeletapi.loopwatch")
        agent.run(block_the_loop())
        failing = client.get(agent.url("read-only", "/healthz/syncloop"))
        verbose = client.get(agent.url("read-only", "/healthz?verbose"))
        metrics = client.get(agent.url("read-only", "/metrics")).text
    assert failing.status_code == 500
    assert verbose.status_code == 500 and "[-]syncloop failed: reason withheld" in verbose.text
    count = next(line for line in metrics.splitlines() if line.startswith("kubeletapi_event_loop_lag_seconds_count"))
    assert float(count.split()[-1]) > 0
    within_a_second = next(line for line in metrics.splitlines()
                           if line.startswith('kubeletapi_event_loop_lag_seconds_bucket{le="1"}'))
    assert float(within_a_second.split()[-1]) < float(count.split()[-1])  # one heartbeat waited over 1 s
    blocked = [r.getMessage() for r in caplog.records if "the event loop has been blocked" in r.getMessage()]
    assert blocked and "block_the_loop" in blocked[0]


def test_healthz_waits_for_the_pod_sources(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    """Until the manifest path has been read once, /pods may miss pods: /healthz says so."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")  # the manifest path below it cannot be read (ENOTDIR): no news
    agent = start_agent("--pod-manifest-path", str(blocker / "manifests"), "--file-check-frequency", "1s")
    with httpx.Client(timeout=10) as client:
        assert client.get(agent.url("read-only", "/healthz/syncloop")).status_code == 500
        assert client.get(agent.url("read-only", "/healthz/ping")).status_code == 200
        blocker.unlink()
        write(blocker / "manifests", "p.yaml", manifest("p", container("c", ["sleep", "300"])))
        wait_for(lambda: client.get(agent.url("read-only", "/healthz")).status_code == 200, timeout=15,
                 what="healthz once the sources are read")
        assert "p-testnode" in pods(agent)
