"""A kill -9 of the agent on containerd leaves its containers running, and the next agent adopts
them (same container, no restart, no log line lost).

In a module of its own: no other agent may share the session's private containerd meanwhile. The
agent owns its runtime, as the kubelet does, and kills the pods no source of its own defines; the
module agent of test_cri_pods.py used to kill this test's pod once it noticed it, and the test
failed whenever that happened after the pod was first seen Running (a container ID changed).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cri.cleanup import purge_cri
from tests.cri.fixtures import CRIEnv
from tests.e2e.test_cri_pods import TICKER, bb
from tests.helpers import AgentProcess, agent_args, purge
from tests.podtools import manifest, status_of, wait_for, write

pytestmark = [pytest.mark.e2e, pytest.mark.cri]


def test_agent_kill_9_leaves_containers_untouched(cri_env: CRIEnv, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    write(manifests, "keep.yaml", manifest("keep", bb("main", TICKER)))
    args = agent_args(tmp_path, "--container-runtime=remote", "--container-runtime-endpoint", cri_env.endpoint,
                      "--pod-manifest-path", str(manifests))
    agent_log = tmp_path / "agents.log"  # both agents', shown when the containers were not kept
    first = AgentProcess(args, log=agent_log)
    second: AgentProcess | None = None
    try:
        health = f"http://127.0.0.1:{args[args.index('--healthz-port') + 1]}/healthz"
        read_only = f"http://127.0.0.1:{args[args.index('--read-only-port') + 1]}/pods"
        first.wait_healthy(health)

        def keep() -> dict[str, Any] | None:
            items = httpx.get(read_only, timeout=5).json()["items"]
            pod = next((p for p in items if p["metadata"]["name"] == "keep-testnode"), None)
            return pod if pod and pod["status"].get("phase") == "Running" else None

        before = status_of(wait_for(keep, what="keep running"), "main")
        os.kill(first.proc.pid, signal.SIGKILL)
        first.kill()
        time.sleep(0.5)
        second = AgentProcess(args, log=agent_log)
        second.wait_healthy(health)
        after = status_of(wait_for(keep, what="keep running again"), "main")
        assert after["containerID"] == before["containerID"], agent_log.read_text()
        assert after["restartCount"] == 0 and after["state"]["running"]["startedAt"] == \
            before["state"]["running"]["startedAt"]
        log = Path(tmp_path / "logs").glob("default_keep-testnode_*/main/0.log")
        lines = [line.split(" ", 3)[3] for line in next(log).read_text().splitlines()]
        ticks = [int(t.split()[1]) for t in lines if t.startswith("tick")]
        assert ticks == list(range(len(ticks)))  # the container ran on, no line lost
    finally:
        for agent in (first, second):
            if agent is not None and agent.proc.poll() is None:
                agent.kill()
        purge_cri(cri_env.endpoint, args)
        purge(args)
