"""The node joins a real control plane: registration with the kubelet's fields, status, lease,
NotReady when the agent stops and Ready again when it returns."""

from __future__ import annotations

import json
import ssl
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.conftest import NODE_LEVEL
from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e,
              pytest.mark.node_args("--node-labels", "tier=test,kubeletapi.dev/role=edge")]


def test_registers_with_the_kubelets_fields_and_is_ready_within_5s(node: Node, control_plane: ControlPlane) -> None:
    started = time.monotonic()
    node.start()
    wait_for(node.ready, timeout=5 - (time.monotonic() - started) + 3, interval=0.1, what="node Ready")
    got = node.get()
    assert got is not None
    labels = got["metadata"]["labels"]
    expected = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "beta.kubernetes.io/os": "linux",
                "tier": "test", "kubeletapi.dev/role": "edge"}
    for key, value in expected.items():
        assert labels[key] == value
    assert labels["kubernetes.io/arch"] == labels["beta.kubernetes.io/arch"] != ""
    assert got["metadata"]["annotations"]["volumes.kubernetes.io/controller-managed-attach-detach"] == "true"
    status = got["status"]
    assert status["addresses"] == [{"type": "InternalIP", "address": control_plane.node_ip},
                                   {"type": "Hostname", "address": node.name}]
    assert status["daemonEndpoints"]["kubeletEndpoint"]["Port"] == int(node.flag("--port"))
    assert set(status["capacity"]) >= {"cpu", "memory", "pods", "ephemeral-storage"}
    assert status["capacity"]["pods"] == "110"
    info = status["nodeInfo"]
    assert info["operatingSystem"] == "linux" and info["kernelVersion"] and info["bootID"] and info["machineID"]
    assert info["containerRuntimeVersion"].startswith(node.scheme)
    assert info["kubeletVersion"].startswith("v1.34.")
    kinds = [c["type"] for c in status["conditions"]]
    assert kinds[-1] == "Ready" and set(kinds) >= {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}
    reasons = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert reasons["MemoryPressure"] == ("False", "KubeletHasSufficientMemory",
                                         "kubelet has sufficient memory available")
    assert reasons["DiskPressure"] == ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure")
    assert reasons["PIDPressure"] == ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available")
    assert reasons["Ready"] == ("True", "KubeletReady", "kubelet is posting ready status")
    # A new Node: the startup phases of kubelet_node_startup_* are measured (each a gauge, 0 until then)
    metrics = httpx.get(f"http://{node.address}:{node.flag('--read-only-port')}/metrics", timeout=10).text
    phases = {line.split()[0]: float(line.split()[1]) for line in metrics.splitlines()
              if line.startswith("kubelet_node_startup_")}
    assert phases["kubelet_node_startup_registration_duration_seconds"] > 0, phases
    assert phases["kubelet_node_startup_pre_registration_duration_seconds"] > 0, phases
    total, before = (phases[f"kubelet_node_startup_{p}duration_seconds"] for p in ("", "pre_kubelet_"))
    assert total > before > 0, phases


@NODE_LEVEL
def test_lease_renewed_with_an_owner_reference_to_the_node(node: Node, control_plane: ControlPlane) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node.name}"
    first = wait_for(lambda: _get(control_plane, path), timeout=10, what="lease")
    spec = first["spec"]
    assert spec["holderIdentity"] == node.name and spec["leaseDurationSeconds"] == 40
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Node", node.name, node.get()["metadata"]["uid"])  # type: ignore[index]
    renewed = wait_for(lambda: (lease := _get(control_plane, path)) and lease["spec"]["renewTime"] != spec["renewTime"]
                       and lease, timeout=15, what="a renewal")
    assert renewed["spec"]["renewTime"] > spec["renewTime"]


def test_the_apiserver_reaches_the_node(node: Node, control_plane: ControlPlane) -> None:
    """kubectl get --raw through the API server's node proxy: client certificate and
    SubjectAccessReview against the real API server."""
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    healthz = control_plane.kubectl("get", "--raw", f"/api/v1/nodes/{node.name}/proxy/healthz")
    assert healthz.stdout == "ok"
    summary = control_plane.kubectl("get", "--raw", f"/api/v1/nodes/{node.name}/proxy/stats/summary")
    assert f'"nodeName": "{node.name}"' in summary.stdout
    # The web UI's views through the same path (authorized as nodes/ui, then nodes/proxy).
    view = json.loads(control_plane.kubectl("get", "--raw", f"/api/v1/nodes/{node.name}/proxy/ui/api/node").stdout)
    assert view["node"] == node.name and view["logs"] is True


@pytest.mark.node_args("--authorization-webhook-cache-unauthorized-ttl", "2s")
def test_service_account_tokens_are_reviewed_and_authorized_by_the_api_server(
        node: Node, control_plane: ControlPlane, namespace: str) -> None:
    """A bearer token at the node's own port (as metrics-server's): TokenReview authenticates it
    and SubjectAccessReview decides, both by the real API server; a new binding is seen once the
    cached refusal has expired (2 s here; 30 s by default)."""
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    control_plane.kubectl("create", "serviceaccount", "scraper", "-n", namespace)
    token = control_plane.kubectl("create", "token", "scraper", "-n", namespace).stdout.strip()
    url = f"https://{control_plane.node_ip}:{node.flag('--port')}/pods"
    tls = ssl.create_default_context(cafile=str(Path(node.flag("--cert-dir")) / "ca.crt"))
    with httpx.Client(verify=tls, timeout=10) as client:
        assert client.get(url, headers={"Authorization": "Bearer not-a-token"}).status_code == 401
        refused = client.get(url, headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 403
        user = f"system:serviceaccount:{namespace}:scraper"
        assert refused.text == f"Forbidden (user={user}, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
        control_plane.kubectl("create", "clusterrolebinding", f"scraper-{namespace}",
                              "--clusterrole=system:kubelet-api-admin", f"--serviceaccount={namespace}:scraper")
        try:
            def authorized() -> httpx.Response | None:
                response = client.get(url, headers={"Authorization": f"Bearer {token}"})
                return response if response.status_code == 200 else None

            allowed = wait_for(authorized, timeout=15, what="the binding honoured")
            assert allowed.json()["kind"] == "PodList"
        finally:
            control_plane.kubectl("delete", "clusterrolebinding", f"scraper-{namespace}")


@NODE_LEVEL
def test_stopped_node_goes_not_ready_and_returns(node: Node, control_plane: ControlPlane) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    node.stop()
    wait_for(lambda: (c := node.condition("Ready")) and c["status"] == "Unknown", timeout=60,
             what="the controller-manager marks the node not ready")
    node.start()
    wait_for(node.ready, timeout=20, what="Ready again")


def _get(plane: ControlPlane, path: str) -> dict[str, Any] | None:
    with plane.admin_client() as client:
        response = client.get(path)
    return response.json() if response.status_code == 200 else None


def test_a_node_identity_of_another_name_is_refused_and_the_refusal_logged(control_plane: ControlPlane,
                                                                           tmp_path: Path) -> None:
    """The Node authorizer and NodeRestriction let system:node:<a> write node <a> only: an agent
    registering another name is refused, says so naming the object, and keeps serving."""
    impostor = Node(control_plane, tmp_path)
    other = f"victim-{impostor.name}"
    impostor.args[impostor.args.index("--hostname-override") + 1] = other
    try:
        impostor.start()
        wait_for(lambda: "Unable to register node" in impostor.log.read_text(), timeout=15, what="the refusal")
        line = next(x for x in impostor.log.read_text().splitlines() if "Unable to register node" in x)
        assert f'nodes "{other}" is forbidden' in line and f"system:node:{impostor.name}" in line
        assert impostor.get() is None
        with control_plane.admin_client() as client:
            assert client.get(f"/api/v1/nodes/{other}").status_code == 404
    finally:
        impostor.remove()
