"""The API server away: at the agent's start (it serves its local API and its static pods, and
keeps trying), and for 60 s under 20 running pods (no container restarts; once it returns, the
watch resumes and statuses catch up within 10 s). A plane of this module's own: it is stopped
and started here."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.conftest import GRACE
from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.node import Node
from tests.podtools import container, manifest, wait_for, write

pytestmark = [pytest.mark.cluster, pytest.mark.e2e, pytest.mark.slow]

OUTAGE_S = 60


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, fabric: Fabric) -> Iterator[ControlPlane]:
    own = ControlPlane(tmp_path_factory.mktemp("outage-plane"), node_ip=fabric.host, api_address=fabric.host)
    own.start(node_monitor_grace_period=GRACE)
    try:
        yield own
    finally:
        own.stop()


def _api_pods(plane: ControlPlane, selector: str) -> list[dict[str, Any]]:
    items = json.loads(plane.kubectl("get", "pods", "-l", selector, "-o", "json").stdout)["items"]
    assert isinstance(items, list)
    return items


def _local_pods(node: Node) -> dict[str, dict[str, Any]]:
    url = f"http://{node.plane.node_ip}:{node.flag('--read-only-port')}/pods"
    return {p["metadata"]["name"]: p for p in httpx.get(url, timeout=10).json()["items"]}


def _node(plane: ControlPlane, tmp: Path, runtime: str, request: pytest.FixtureRequest, *extra: str) -> Node:
    endpoint = request.getfixturevalue("cluster_cri").endpoint if runtime == "containerd" else ""
    return Node(plane, tmp, *extra, runtime=runtime, cri_endpoint=endpoint)


# The outage is handled above the runtime (registration, the API pod source, the status manager):
# one runtime shows it (conftest.NODE_LEVEL's reason); the process runtime needs no module containerd.
@pytest.mark.parametrize("runtime", ["process"])
def test_an_unreachable_api_server_at_start_leaves_the_node_serving_and_retrying(
        plane: ControlPlane, tmp_path: Path, runtime: str, request: pytest.FixtureRequest) -> None:
    manifests = tmp_path / "manifests"
    write(manifests, "static.yaml", manifest("static", container("c", ["sleep", "3600"])))
    node = _node(plane, tmp_path, runtime, request, "--pod-manifest-path", str(manifests))
    plane.stop_apiserver()
    try:
        node.start()
        wait_for(lambda: (_local_pods(node).get(f"static-{node.name}") or {}).get("status", {}).get("phase")
                 == "Running", timeout=30, what="the static pod Running without an API server")
        wait_for(lambda: "Unable to register node" in node.log.read_text(), timeout=10, what="the reason logged")
        line = next(x for x in node.log.read_text().splitlines() if "Unable to register node" in x)
        assert plane.server in line and "connect" in line.lower()  # says where and why
    finally:
        plane.start_apiserver()
    try:
        wait_for(node.ready, timeout=30, what="registered and Ready once the API server answers")
    finally:
        node.remove()


@pytest.mark.parametrize("runtime", ["process"])
def test_sixty_seconds_without_the_api_server(plane: ControlPlane, tmp_path: Path, runtime: str,
                                              request: pytest.FixtureRequest) -> None:
    node = _node(plane, tmp_path, runtime, request)
    node.start()
    try:
        wait_for(node.ready, timeout=15, what="node Ready")
        template: dict[str, Any] = {"metadata": {"labels": {"app": "steady"}},
                    "spec": {"automountServiceAccountToken": False, "nodeName": node.name,
                             "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}
        for i in range(20):
            pod = {"apiVersion": "v1", "kind": "Pod", **template,
                   "metadata": {"name": f"steady-{i}", **template["metadata"]}}
            plane.kubectl("apply", "-f", "-", input_=json.dumps(pod))
        # One pod finishes during the outage: its new status must reach the API server afterwards.
        finisher = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "finisher", "labels": {"app": "finisher"}},
                    "spec": {**template["spec"], "restartPolicy": "Never", "containers": [
                        {"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 20; exit 0"]}]}}
        plane.kubectl("apply", "-f", "-", input_=json.dumps(finisher))
        wait_for(lambda: len(pods := _api_pods(plane, "app=steady")) == 20
                 and all(p["status"].get("phase") == "Running" for p in pods), timeout=60, what="20 pods Running")
        before = {p["metadata"]["name"]: p["status"]["containerStatuses"][0]["containerID"]
                  for p in _api_pods(plane, "app=steady")}
        plane.stop_apiserver()
        stopped = time.monotonic()
        try:
            wait_for(lambda: (_local_pods(node).get("finisher") or {}).get("status", {}).get("phase") == "Succeeded",
                     timeout=OUTAGE_S, what="the finisher Succeeded on the node during the outage")
            time.sleep(max(OUTAGE_S - (time.monotonic() - stopped), 0))
            local = _local_pods(node)
            assert all(local[n]["status"]["phase"] == "Running" for n in before)  # untouched by the outage
        finally:
            plane.start_apiserver()
        returned = time.monotonic()
        wait_for(lambda: (_api_pods(plane, "app=finisher") or [{}])[0].get("status", {}).get("phase") == "Succeeded",
                 timeout=10, interval=0.2, what="the finisher's Succeeded in the API within 10 s of its return")
        caught_up = time.monotonic() - returned
        after = {p["metadata"]["name"]: p["status"]["containerStatuses"][0] for p in _api_pods(plane, "app=steady")}
        assert {n: s["containerID"] for n, s in after.items()} == before  # no container restarted...
        assert all(s["restartCount"] == 0 and s["ready"] for s in after.values())  # ...and all still ready
        # The watch resumed: a pod created now runs.
        plane.kubectl("apply", "-f", "-", input_=json.dumps(
            {"apiVersion": "v1", "kind": "Pod", **template, "metadata": {"name": "after", "labels": {"app": "after"}}}))
        wait_for(lambda: (_api_pods(plane, "app=after") or [{}])[0].get("status", {}).get("phase") == "Running",
                 timeout=30, what="a pod created after the outage Running")
        print(f"statuses caught up {caught_up:.1f}s after the API server returned")
    finally:
        # The node goes first (its containers with it); then the pods it can no longer confirm,
        # so that the next runtime's pods of the same names start from nothing.
        node.remove()
        plane.kubectl("delete", "pods", "--all", "--grace-period=0", "--force", check=False)
