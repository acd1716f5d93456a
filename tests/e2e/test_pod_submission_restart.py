"""Submitted pods survive a restart of the agent (<root-dir>/submitted_pods.json): the same pods
are defined again and their containers re-adopted, not restarted; submitted with curl."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import LOOPBACK, AgentProcess, agent_args, purge
from tests.podtools import wait_for

pytestmark = pytest.mark.e2e


def flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def listed(args: list[str]) -> dict[str, dict[str, Any]]:
    try:
        items = httpx.get(f"http://{LOOPBACK}:{flag(args, '--read-only-port')}/pods", timeout=5).json()["items"]
    except httpx.HTTPError:
        return {}
    return {p["metadata"]["name"]: p for p in items}


def running(args: list[str], name: str) -> dict[str, Any] | None:
    pod = listed(args).get(name)
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
    return pod if statuses and "running" in statuses[0]["state"] else None


def start(args: list[str]) -> AgentProcess:
    agent = AgentProcess(args)
    agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
    return agent


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_submitted_pods_are_kept_across_a_restart(tmp_path: Path) -> None:
    args = agent_args(tmp_path, "--enable-pod-submission")
    certs = tmp_path / "certs"
    body = tmp_path / "pods.json"
    body.write_text(json.dumps({"apiVersion": "v1", "kind": "PodList", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
         "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["sleep", "3600"]}]}}]}))
    agent = start(args)
    try:
        out = subprocess.run(
            ["curl", "-sS", "--fail-with-body", "--cacert", str(certs / "ca.crt"), "--cert", str(certs / "admin.crt"),
             "--key", str(certs / "admin.key"), "-X", "POST", "-H", "Content-Type: application/json",
             "--data-binary", f"@{body}", f"https://{LOOPBACK}:{flag(args, '--port')}/submittedpods"],
            capture_output=True, text=True, timeout=30, check=True)
        assert json.loads(out.stdout)["items"][0]["metadata"]["name"] == "web-testnode"
        before = wait_for(lambda: running(args, "web-testnode"), what="web running")
        assert (tmp_path / "root" / "submitted_pods.json").read_bytes() == body.read_bytes()
        code, _ = agent.stop()
        assert code == 0
        agent = start(args)
        after = wait_for(lambda: running(args, "web-testnode"), what="web re-adopted")
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        was, now = before["status"]["containerStatuses"][0], after["status"]["containerStatuses"][0]
        assert (now["containerID"], now["restartCount"]) == (was["containerID"], 0)
    finally:
        agent.stop()
        purge(args)
