"""Restart safety and scale: kill -9 the agent, restart it, nothing is restarted or lost; 110 pods."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.helpers import LOOPBACK, AgentProcess, agent_args, purge
from tests.podtools import container, flag, manifest, pod_list, status_of, wait_for, write

pytestmark = pytest.mark.e2e


def pids_with(marker: str) -> set[int]:
    return {p.pid for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or ())}


def all_running(args: list[str], names: list[str]) -> dict[str, dict[str, Any]] | None:
    current = pod_list(args)
    for name in names:
        pod = current.get(f"{name}-testnode")
        statuses = pod["status"].get("containerStatuses") or [] if pod is not None else []
        if not statuses or not all("running" in s["state"] for s in statuses):
            return None
    return current


def test_kill_9_and_restart_readopts_everything(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    args = agent_args(tmp_path, "--pod-manifest-path", str(manifests))
    marker = f"steady-{uuid.uuid4().hex}"
    write(manifests, "steady.yaml", manifest("steady", container("main", ["sh", "-c", f"sleep 3600 # {marker}"])))
    counter = "i=0; while :; do echo $i; i=$((i+1)); sleep 0.02; done"
    write(manifests, "logger.yaml", manifest("logger", container("log", ["sh", "-c", counter])))
    write(manifests, "quitter.yaml", manifest("quitter", container("q", ["sh", "-c", "sleep 3; exit 3"]),
                                              "restartPolicy: Never"))
    agent = AgentProcess(args)
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
        before = wait_for(lambda: all_running(args, ["steady", "logger", "quitter"]), what="pods running")
        pids_before = pids_with(marker)
        assert pids_before
        agent.kill()
        time.sleep(3.5)  # the quitter exits while no agent runs
        agent = AgentProcess(args)
        agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
        after = wait_for(lambda: all_running(args, ["steady", "logger"]), what="pods after restart")
        for name in ("steady-testnode", "logger-testnode"):
            old = status_of(before[name], before[name]["spec"]["containers"][0]["name"])
            new = status_of(after[name], after[name]["spec"]["containers"][0]["name"])
            assert (new["containerID"], new["restartCount"]) == (old["containerID"], old["restartCount"])
            assert after[name]["metadata"]["uid"] == before[name]["metadata"]["uid"]
        assert pids_with(marker) == pids_before
        quitter = wait_for(lambda: (p := pod_list(args).get("quitter-testnode")) and
                           p["status"]["phase"] == "Failed" and p, what="quitter seen exited")
        assert status_of(quitter, "q")["state"]["terminated"]["exitCode"] == 3
        time.sleep(0.5)
        log = next((tmp_path / "logs").glob("default_logger-testnode_*/log/0.log"))
        numbers = [int(line.split(" ", 3)[3]) for line in log.read_text().splitlines()]
        assert numbers == list(range(len(numbers))), "a log line was lost or repeated"
        assert len(numbers) > 100
        assert not list(log.parent.glob("1.log"))  # the same instance kept writing
    finally:
        code, out = agent.stop()
        purge(args)
    assert code == 0, out


@pytest.mark.slow
def test_110_pods_at_once(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    args = agent_args(tmp_path, "--pod-manifest-path", str(manifests))
    agent = AgentProcess(args)
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
        names = [f"p{i:03d}" for i in range(110)]
        for name in names:
            write(manifests, f"{name}.yaml", manifest(name, container("c", ["sleep", "3600"])))
        wait_for(lambda: all_running(args, names), timeout=120, interval=0.5, what="110 pods running")
        metrics = httpx.get(f"http://{LOOPBACK}:{flag(args, '--read-only-port')}/metrics", timeout=10).text
        assert "kubelet_running_pods 110\n" in metrics or wait_for(
            lambda: "kubelet_running_pods 110\n" in httpx.get(
                f"http://{LOOPBACK}:{flag(args, '--read-only-port')}/metrics", timeout=10).text, what="metric")
        for name in names[:55]:
            (manifests / f"{name}.yaml").unlink()
        wait_for(lambda: len(pod_list(args)) == 55, timeout=120, interval=0.5, what="55 pods removed")
    finally:
        code, out = agent.stop()
        purge(args)
    assert code == 0, out
