"""What a user does with kubectl against the node through the real API server: get and describe
the node, logs of a pod (with --tail, -f and --previous)."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from tests.cluster.controlplane import ControlPlane, binary
from tests.cluster.node import Node
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]


def _pod(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    body = json.loads(plane.kubectl("get", "pod", name, "-n", namespace, "-o", "json").stdout)
    assert isinstance(body, dict)
    return body


def _apply(plane: ControlPlane, namespace: str, node: Node, name: str, command: list[str]) -> None:
    plane.kubectl("apply", "-f", "-", input_=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node.name, "automountServiceAccountToken": False,
                 "containers": [{"name": "main", "image": "busybox:1.36", "command": command}]},
    }))


def test_get_and_describe_node(node: Node, control_plane: ControlPlane) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    row = control_plane.kubectl("get", "nodes", node.name, "-o", "wide", "--no-headers").stdout.split()
    assert row[0] == node.name and row[1] == "Ready" and row[4].startswith("v1.34.")
    assert row[5] == control_plane.node_ip  # INTERNAL-IP
    described = control_plane.kubectl("describe", "node", node.name).stdout
    for needle in ("KubeletReady", "kubelet is posting ready status", "Capacity:", "Allocatable:",
                   f"InternalIP:  {control_plane.node_ip}", f"Hostname:    {node.name}", "Container Runtime Version:",
                   "Kubelet Version:", "Non-terminated Pods:"):
        assert needle in described, needle


def test_logs_tail_follow_and_previous(node: Node, control_plane: ControlPlane, namespace: str) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    # Counts lines, then exits 1 after 30 of them: the restart gives a --previous.
    _apply(control_plane, namespace, node, "counter",
           ["sh", "-c", "i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo line-$i; sleep 0.1; done; exit 1"])
    wait_for(lambda: "line-30" in control_plane.kubectl("logs", "counter", "-n", namespace, check=False).stdout
             or _restarts(control_plane, namespace) > 0, timeout=40, what="30 lines written")
    wait_for(lambda: _restarts(control_plane, namespace) >= 1, timeout=40, what="a restart")
    previous = control_plane.kubectl("logs", "counter", "-n", namespace, "--previous").stdout.splitlines()
    assert previous == [f"line-{i}" for i in range(1, 31)]
    wait_for(lambda: "line-5" in control_plane.kubectl("logs", "counter", "-n", namespace, check=False).stdout,
             timeout=30, what="the new instance logging")
    tail = control_plane.kubectl("logs", "counter", "-n", namespace, "--tail=2").stdout.splitlines()
    assert len(tail) == 2 and all(t.startswith("line-") for t in tail)
    # -f streams lines written after it started.
    follow = subprocess.Popen([binary("kubectl"), f"--kubeconfig={control_plane.admin}", "logs", "-f", "counter",
                               "-n", namespace, "--tail=0"], stdout=subprocess.PIPE, text=True)
    try:
        assert follow.stdout is not None
        started = time.monotonic()
        line = follow.stdout.readline()
        assert line.startswith("line-") and time.monotonic() - started < 30
    finally:
        follow.kill()
        follow.communicate()


def _restarts(plane: ControlPlane, namespace: str) -> int:
    statuses = _pod(plane, namespace, "counter").get("status", {}).get("containerStatuses") or [{}]
    return int(statuses[0].get("restartCount", 0))
