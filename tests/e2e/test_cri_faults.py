"""Faults on containerd: the runtime going away under a running agent, a missing image with pull
policy Never, sandboxes the agent does not own left NOTREADY. Each test has its own private
containerd (it kills or confuses it), stopped by PID at the end."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeletapi.runtime.cri import CRIRuntime
from kubeletapi.runtime.types import PodMeta, SandboxConfig, SandboxState
from tests.cri import containerd, images
from tests.cri.cleanup import list_sandboxes, purge_cri
from tests.cri.fixtures import CRIEnv
from tests.e2e.test_cri_pods import IMAGE, TICKER, bb
from tests.helpers import Agent, agent_args
from tests.podtools import manifest, pods, polled, status_of, wait_for, write

pytestmark = [pytest.mark.e2e, pytest.mark.cri]


@dataclass
class Node:
    agent: Agent
    daemon: containerd.PrivateContainerd
    manifests: Path

    def pod(self, name: str) -> dict[str, Any] | None:
        return pods(self.agent).get(f"{name}-testnode")

    def running(self, name: str) -> dict[str, Any] | None:
        pod = self.pod(name)
        return pod if pod and pod["status"].get("phase") == "Running" else None


@pytest.fixture
def node(cri_env: CRIEnv, tmp_path: Path) -> Iterator[Node]:
    """A containerd of its own (the session's images), an agent on it with one running pod."""
    daemon = containerd.PrivateContainerd()
    args: list[str] = []
    try:
        daemon.start()
        daemon.import_images(images.build_all())
        manifests = tmp_path / "manifests"
        write(manifests, "steady.yaml", manifest("steady", bb("main", TICKER)))
        args = agent_args(tmp_path, "--container-runtime=remote", "--container-runtime-endpoint", daemon.endpoint,
                          "--pod-manifest-path", str(manifests), "--housekeeping-interval", "1s")
        agent = Agent(args)
        try:
            node = Node(agent, daemon, manifests)
            wait_for(lambda: node.running("steady"), what="steady running")
            yield node
        finally:
            agent.close()
    finally:
        try:
            if not daemon.running:  # killed by the test and not restarted: back for the clean-up
                daemon.start()
            if args:
                purge_cri(daemon.endpoint, args)
        finally:
            daemon.stop()


def _get(node: Node, path: str) -> httpx.Response:
    with node.agent.admin() as client:
        return client.get(node.agent.url(path=path))


def _summary_pod(node: Node, name: str) -> dict[str, Any] | None:
    node.agent.run(node.agent.kubelet.stats.housekeeper.collect())
    summary = _get(node, "/stats/summary")
    assert summary.status_code == 200, summary.text
    return next((p for p in summary.json()["pods"] if p["podRef"]["name"] == f"{name}-testnode"), None)


def test_containerd_stopped_under_a_running_agent(node: Node) -> None:
    before = status_of(node.running("steady") or {}, "main")
    wait_for(lambda: _summary_pod(node, "steady"), interval=0.3, what="steady in the summary (the PLEG relisted)")
    node.daemon.kill_daemon()
    # The API keeps serving: health, the last known pods, stats from cgroups alone.
    assert _get(node, "/healthz").text == "ok"
    assert status_of(node.pod("steady") or {}, "main")["containerID"] == before["containerID"]
    steady = _summary_pod(node, "steady")
    assert steady is not None and steady["containers"][0]["memory"]["workingSetBytes"] > 0  # the cgroup readers
    # A pod added meanwhile cannot start: its status says why.
    write(node.manifests, "late.yaml", manifest("late", bb("main", TICKER)))

    def late_waiting() -> dict[str, Any] | None:
        pod = node.pod("late")
        waiting = polled(pod, "main")["state"].get("waiting") if pod and pod["status"].get(
            "containerStatuses") else None
        return waiting if waiting and "unavailable" in waiting.get("message", "") else None

    waiting = wait_for(late_waiting, timeout=20, what="late waiting on the runtime")
    assert node.daemon.endpoint in waiting["message"]
    # containerd returns: the new pod starts, the old one was never touched.
    node.daemon.start()
    wait_for(lambda: node.running("late"), timeout=30, what="late running after containerd returned")
    after = status_of(node.running("steady") or {}, "main")
    assert (after["containerID"], after["restartCount"]) == (before["containerID"], 0)


def test_missing_image_with_pull_policy_never(node: Node) -> None:
    write(node.manifests, "never.yaml", manifest("never", bb("main", ["true"]).replace(
        IMAGE, "localhost/absent:1").replace("IfNotPresent", "Never")))

    def waiting() -> dict[str, Any] | None:
        pod = node.pod("never")
        statuses = pod["status"].get("containerStatuses") if pod else None
        return statuses[0]["state"].get("waiting") if statuses else None

    state = wait_for(waiting, what="never waiting")
    assert state == {"reason": "ErrImageNeverPull",
                     "message": 'Container image "localhost/absent:1" is not present with pull policy of Never'}
    assert node.running("steady")


def test_a_notready_sandbox_is_cleaned_up_and_stats_go_on(node: Node, tmp_path: Path) -> None:
    """A sandbox that no manifest defines, stopped (NOTREADY) and without a cgroup parent (what
    makes containerd's ListPodSandboxStats fail as a whole): the summary still has the running
    pod's runtime figures, and the agent removes the stray sandbox as an orphan."""
    async def stray() -> str:
        runtime = CRIRuntime(node.daemon.endpoint)
        try:
            sid = await runtime.run_pod_sandbox(SandboxConfig(
                meta=PodMeta("stray", "default", "stray-uid"), hostname="", log_directory=str(tmp_path / "stray"),
                cgroup_parent="",  # what breaks ListPodSandboxStats
                labels={"io.kubernetes.pod.uid": "stray-uid", "io.kubernetes.pod.name": "stray",
                        "io.kubernetes.pod.namespace": "default"}))
            await runtime.stop_pod_sandbox(sid)
            (listed,) = [s for s in await runtime.list_pod_sandboxes() if s.id == sid]
            assert listed.state is SandboxState.NOTREADY
            return sid
        finally:
            await runtime.close()

    wait_for(lambda: _summary_pod(node, "steady"), interval=0.3, what="steady in the summary (the PLEG relisted)")
    sid = asyncio.run(stray())
    steady = _summary_pod(node, "steady")
    assert steady is not None
    assert steady["cpu"]["usageCoreNanoSeconds"] > 0 and steady["containers"][0]["cpu"]["usageCoreNanoSeconds"] > 0

    wait_for(lambda: sid not in {s.id for s in list_sandboxes(node.daemon.endpoint)}, timeout=20, interval=0.5,
             what="stray removed")
    assert node.running("steady")
