"""Pods from the API server: scheduled onto the node, run, reported (status patches), measured
(the pod startup SLI's families on /metrics and its log line), and deleted gracefully (the
container sees SIGTERM; the node deletes the pod once it stopped)."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from kubeletapi.api.core_v1 import parse_time
from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]


def _pods(plane: ControlPlane, namespace: str, selector: str) -> list[dict[str, Any]]:
    out = plane.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o", "json").stdout
    items = json.loads(out)["items"]
    assert isinstance(items, list)
    return items


def _running_and_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
    return status.get("phase") == "Running" and ready is not None and ready["status"] == "True"


def test_a_deployment_runs_on_the_node(node: Node, control_plane: ControlPlane, namespace: str) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    control_plane.kubectl("create", "deployment", "sleeper", "-n", namespace, "--replicas=3",
                          "--image=busybox:1.36", "--", "sleep", "3600")

    def all_running() -> list[dict[str, Any]] | None:
        items = _pods(control_plane, namespace, "app=sleeper")
        return items if len(items) == 3 and all(_running_and_ready(p) for p in items) else None

    pods = wait_for(all_running, timeout=60, what="3 replicas Running and Ready")
    for pod in pods:
        assert pod["spec"]["nodeName"] == node.name
        status = pod["status"]
        assert status["podIP"] == control_plane.node_ip and status["hostIP"] == control_plane.node_ip
        assert status["podIPs"] == [{"ip": control_plane.node_ip}]
        assert status["observedGeneration"] == pod["metadata"]["generation"]
        (container,) = status["containerStatuses"]
        assert container["ready"] is True and "running" in container["state"]
        assert container["containerID"].startswith(node.scheme)
        kinds = {c["type"]: c["status"] for c in status["conditions"]}
        assert kinds == {"PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
                         "ContainersReady": "True", "PodScheduled": "True"}
    wide = control_plane.kubectl("get", "pods", "-n", namespace, "-o", "wide").stdout
    assert wide.count("Running") == 3 and control_plane.node_ip in wide


def test_a_deleted_pod_terminates_gracefully_and_is_removed(node: Node, control_plane: ControlPlane,
                                                             namespace: str, tmp_path_factory: pytest.TempPathFactory
                                                             ) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    out = tmp_path_factory.mktemp("graceful")
    script = "trap 'echo got-sigterm > /out/sigterm; exit 0' TERM; while true; do sleep 0.2; done"
    manifest = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "graceful", "namespace": namespace},
        "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 20, "automountServiceAccountToken": False,
                 "volumes": [{"name": "out", "hostPath": {"path": str(out), "type": "Directory"}}],
                 "containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", script],
                                 "volumeMounts": [{"name": "out", "mountPath": "/out"}]}]},
    }
    before = _startup_sli(node)
    assert before["kubelet_first_network_pod_start_sli_duration_seconds"] == 0  # shown from the start
    control_plane.kubectl("apply", "-f", "-", input_=json.dumps(manifest))

    def running() -> dict[str, Any] | None:
        pod = _get_pod(control_plane, namespace, "graceful")
        return pod if pod is not None and _running_and_ready(pod) else None

    pod = wait_for(running, timeout=30, what="the pod Running")
    _check_startup_sli(node, pod, before)
    started = time.monotonic()
    control_plane.kubectl("delete", "pod", "graceful", "-n", namespace, "--wait=false")
    wait_for(lambda: _get_pod(control_plane, namespace, "graceful") is None, timeout=30,
             what="the node deletes the pod from the API server")
    assert (out / "sigterm").read_text().strip() == "got-sigterm"
    assert time.monotonic() - started < 20  # the container exited on SIGTERM, not at the grace period's end


SLI_COUNTS = ("kubelet_pod_start_sli_duration_seconds", "kubelet_pod_start_total_duration_seconds")


def _startup_sli(node: Node) -> dict[str, float]:
    """The pod startup SLI's samples on the node's /metrics (a histogram not shown yet: count and sum 0)."""
    text = httpx.get(f"http://{node.address}:{node.flag('--read-only-port')}/metrics", timeout=10).text
    out = {f"{name}_{part}": 0.0 for name in SLI_COUNTS for part in ("count", "sum")}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in out or name == "kubelet_first_network_pod_start_sli_duration_seconds":
            out[name] = float(value)
    return out


def _check_startup_sli(node: Node, pod: dict[str, Any], before: dict[str, float]) -> None:
    """The pod, created through the API server, counted once by both histograms, within its
    creationTimestamp to now (at least to its container's start); the node's first network pod."""
    def counted() -> dict[str, float] | None:
        now = _startup_sli(node)
        return now if now["kubelet_pod_start_total_duration_seconds_count"] > before[
            "kubelet_pod_start_total_duration_seconds_count"] else None

    after = wait_for(counted, timeout=10, what="the pod's startup measured")
    seen = time.time()
    created = parse_time(pod["metadata"]["creationTimestamp"]).timestamp()
    running = parse_time(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]).timestamp()
    for name in SLI_COUNTS:
        assert after[f"{name}_count"] == before[f"{name}_count"] + 1, (name, before, after)
    sli, total = (after[f"{name}_sum"] - before[f"{name}_sum"] for name in SLI_COUNTS)
    assert running - created <= total <= seen - created, (created, running, seen, total)
    assert 0 < sli <= total
    assert after["kubelet_first_network_pod_start_sli_duration_seconds"] > 0  # not hostNetwork: the first one
    logged = f'Observed pod startup duration pod="{pod["metadata"]["namespace"]}/graceful" podStartSLOduration='
    assert logged in node.log.read_text(errors="replace")


def _get_pod(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    with plane.admin_client() as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return response.json() if response.status_code == 200 else None
