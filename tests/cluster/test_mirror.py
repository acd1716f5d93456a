"""Static pods in a cluster: each gets a mirror pod in the API server (the config.mirror
annotation, a controller owner reference to the Node, its status), which kubectl lists and reads
the logs of; a deleted mirror is created again without touching the static pod, an edited
manifest replaces it, a removed manifest deletes it. NodeRestriction's refusals are logged with
the mirror pod named, and other static pods are unaffected."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

MIRROR = "kubernetes.io/config.mirror"
HASH = "kubernetes.io/config.hash"


def _static(name: str, namespace: str, script: str, **spec: Any) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        # sleep as a container's PID 1 ignores SIGTERM: a short grace keeps removals quick on containerd
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", script]}],
                 "terminationGracePeriodSeconds": 2, **spec},
    })


def _with_manifests(node: Node, manifests: Path) -> None:
    manifests.mkdir(exist_ok=True)
    node.args += ["--pod-manifest-path", str(manifests)]


def _get(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    with plane.admin_client() as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return response.json() if response.status_code == 200 else None


def _running(pod: dict[str, Any] | None) -> dict[str, Any] | None:
    """The pod when it is Running with its one container running, else None."""
    status = (pod or {}).get("status") or {}
    containers = status.get("containerStatuses") or []
    ok = status.get("phase") == "Running" and len(containers) == 1 and "running" in containers[0]["state"]
    return pod if ok else None


def test_a_static_pod_is_mirrored_recreated_replaced_and_removed(
        node: Node, control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    _with_manifests(node, manifests)
    (manifests / "web.json").write_text(_static("web", namespace, "echo hello-from-static; exec sleep 3600"))
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    name = f"web-{node.name}"

    mirror = wait_for(lambda: _running(_get(control_plane, namespace, name)), timeout=30,
                      what="the mirror pod Running in the API")
    meta = mirror["metadata"]
    assert meta["annotations"][MIRROR] == meta["annotations"][HASH]
    assert meta["annotations"]["kubernetes.io/config.source"] == "file"
    node_uid = (node.get() or {})["metadata"]["uid"]
    assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node_uid,
                                        "controller": True}]
    assert mirror["spec"]["nodeName"] == node.name
    (container,) = mirror["status"]["containerStatuses"]
    assert container["restartCount"] == 0 and container["containerID"].startswith(node.scheme)
    kinds = {c["type"]: c["status"] for c in mirror["status"]["conditions"]}
    assert kinds["Ready"] == "True" and kinds["ContainersReady"] == "True"
    listed = control_plane.kubectl("get", "pods", "-A").stdout
    assert any(line.split()[:4] == [namespace, name, "1/1", "Running"] for line in listed.splitlines()), listed
    logs = control_plane.kubectl("logs", "-n", namespace, name).stdout
    assert "hello-from-static" in logs
    # /metrics: the API's mirror pod of this node (set each housekeeping) and the status writes that
    # made it Running, each timed from the change found to its write
    scrape = f"http://{node.address}:{node.flag('--read-only-port')}/metrics"
    metrics = wait_for(lambda: (t := httpx.get(scrape, timeout=10).text) and "\nkubelet_mirror_pods 1\n" in t and t,
                       timeout=10, what="kubelet_mirror_pods 1")
    synced = re.search(r"\nkubelet_pod_status_sync_duration_seconds_count (\d+)\n", metrics)
    assert synced is not None and int(synced.group(1)) >= 1, metrics[-3000:]

    # kubectl delete: the node deletes the mirror at once and creates a new one; the static pod runs on.
    control_plane.kubectl("delete", "pod", name, "-n", namespace, "--wait=false")

    def recreated() -> dict[str, Any] | None:
        pod = _running(_get(control_plane, namespace, name))
        return pod if pod is not None and pod["metadata"]["uid"] != meta["uid"] else None

    again = wait_for(recreated, timeout=30, what="a new mirror pod")
    (after,) = again["status"]["containerStatuses"]
    assert after["containerID"] == container["containerID"] and after["restartCount"] == 0
    assert after["state"]["running"]["startedAt"] == container["state"]["running"]["startedAt"]
    assert again["metadata"]["annotations"][MIRROR] == meta["annotations"][MIRROR]

    # An edited manifest is a new static pod: its mirror replaces the old one.
    (manifests / "web.json").write_text(_static("web", namespace, "echo edited; exec sleep 3600"))

    def replaced() -> dict[str, Any] | None:
        pod = _running(_get(control_plane, namespace, name))
        ok = pod is not None and pod["metadata"]["annotations"][MIRROR] != meta["annotations"][MIRROR]
        return pod if ok else None

    edited = wait_for(replaced, timeout=30, what="the mirror of the edited static pod")
    assert edited["metadata"]["annotations"][MIRROR] == edited["metadata"]["annotations"][HASH]
    assert edited["status"]["containerStatuses"][0]["containerID"] != container["containerID"]
    assert wait_for(lambda: "edited" in control_plane.kubectl("logs", "-n", namespace, name).stdout,
                    timeout=10, what="the edited pod's logs")

    # A removed manifest: the static pod stops and its mirror is deleted.
    (manifests / "web.json").unlink()
    wait_for(lambda: _get(control_plane, namespace, name) is None, timeout=30, what="the mirror pod deleted")


def test_refused_mirrors_are_logged_and_others_unaffected_and_a_restart_keeps_the_mirror(
        node: Node, control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    _with_manifests(node, manifests)
    # NodeRestriction refuses a mirror that references a configMap; a namespace the API lacks is
    # refused too.
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k", "optional": True}}}]
    (manifests / "refs.json").write_text(_static("refs", namespace, "exec sleep 3600", containers=[
        {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"], "env": env}]))
    (manifests / "lost.json").write_text(_static("lost", "no-such-namespace", "exec sleep 3600"))
    (manifests / "plain.json").write_text(_static("plain", namespace, "exec sleep 3600"))
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    plain = wait_for(lambda: _running(_get(control_plane, namespace, f"plain-{node.name}")), timeout=30,
                     what="the plain static pod's mirror Running")

    def logged() -> bool:
        text = node.log.read_text()
        refused = f'node "{node.name}" can not create pods that reference configmaps'
        return (f"mirror pod {namespace}/refs-{node.name}:" in text and refused in text
                and f"mirror pod no-such-namespace/lost-{node.name}:" in text)

    wait_for(logged, timeout=10, what="the refusals logged with the mirror pods named")
    assert _get(control_plane, namespace, f"refs-{node.name}") is None

    # The agent restarts: the mirror it finds is the static pod's; it is kept as it is.
    node.stop()
    before = len(node.log.read_text())
    node.start()
    wait_for(lambda: "Watching apiserver" in node.log.read_text()[before:], timeout=20,
             what="the restarted agent watching its pods")
    time.sleep(3)  # the mirror pods' passes run as soon as the pods are listed
    again = _running(_get(control_plane, namespace, f"plain-{node.name}"))
    assert again is not None and again["metadata"]["uid"] == plain["metadata"]["uid"]
    assert f"Creating a mirror pod for static pod {namespace}/plain-" not in node.log.read_text()[before:]
    assert again["status"]["containerStatuses"][0]["containerID"] == \
        plain["status"]["containerStatuses"][0]["containerID"]


@pytest.mark.node_args("--register-node=false")
def test_a_node_registered_by_someone_else_owns_its_mirrors(
        node: Node, control_plane: ControlPlane, namespace: str, tmp_path: Path) -> None:
    """registerNode false: the Node exists beforehand; the mirror's owner reference carries its UID."""
    with control_plane.admin_client() as client:
        created = client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                                    "metadata": {"name": node.name}})
    assert created.status_code == 201, created.text
    manifests = tmp_path / "manifests"
    _with_manifests(node, manifests)
    (manifests / "web.json").write_text(_static("web", namespace, "exec sleep 3600"))
    node.start()
    mirror = wait_for(lambda: _running(_get(control_plane, namespace, f"web-{node.name}")), timeout=30,
                      what="the mirror pod Running in the API")
    (owner,) = mirror["metadata"]["ownerReferences"]
    assert (owner["name"], owner["uid"]) == (node.name, created.json()["metadata"]["uid"])
