"""imagePullSecrets on containerd against a real registry that requires authentication: a private
distribution registry on loopback (tests/cluster/registry.py: htpasswd auth, TLS from the
cluster's CA) holding busybox pushed from the session's containerd, nothing pulled from anywhere
else. A pod whose kubernetes.io/dockerconfigjson Secret holds the registry's credentials runs;
a pod without a secret and one with a wrong password fail with the registry's 401 in their
waiting message and a Failed event, and leave the first pod alone. Containerd only: the process
runtime pulls nothing."""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.cluster.registry import PrivateRegistry, missing
from tests.cri.fixtures import CRIEnv
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

Json = dict[str, Any]

USER = "puller"
PASSWORD = secrets.token_hex(8)
GREETING = "hello from the private registry"


@pytest.fixture(scope="module")
def registry(control_plane: ControlPlane, cluster_cri: CRIEnv,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateRegistry]:
    """The registry, trusted by the session's containerd, holding <host>/test/busybox:1.36; the
    containerd keeps no image of that name, so a pod's pull goes to the registry."""
    if problem := missing():
        pytest.fail(f"the pull secrets test needs {problem}")  # never a silent skip: make deb installs it
    reg = PrivateRegistry(tmp_path_factory.mktemp("registry"), control_plane.pki, {USER: PASSWORD})
    daemon = cluster_cri.containerd
    reg.start()
    try:
        reg.trust(daemon.hosts_dir)
        daemon.tag(cluster_cri.busybox, image(reg))
        daemon.push(image(reg), f"{USER}:{PASSWORD}")
        daemon.remove_image(image(reg))
        yield reg
    finally:
        reg.stop()
        shutil.rmtree(daemon.hosts_dir / reg.host, ignore_errors=True)
        if daemon.running:  # the tag and the digest name the pull left, so later tests see busybox's own
            daemon.remove_images(f"{reg.host}/")


def image(reg: PrivateRegistry) -> str:
    return f"{reg.host}/test/busybox:1.36"


def _pod(namespace: str, name: str, node: str, image_: str, *pull_secrets: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node, "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
            "imagePullSecrets": [{"name": s} for s in pull_secrets],
            "containers": [{"name": "main", "image": image_, "imagePullPolicy": "Always",
                            "command": ["sh", "-c", f"echo {GREETING}; exec sleep 3600"]}],
        },
    })


def _get(plane: ControlPlane, namespace: str, name: str) -> Json:
    pod: Json = json.loads(plane.kubectl("get", "pod", name, "-n", namespace, "-o", "json").stdout)
    return pod


def _main(pod: Json) -> Json:
    statuses = pod.get("status", {}).get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == "main"), {})


def _pull_failure(plane: ControlPlane, namespace: str, name: str) -> Json | None:
    waiting = _main(_get(plane, namespace, name)).get("state", {}).get("waiting") or {}
    return waiting if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff") else None


def _failed_events(plane: ControlPlane, namespace: str, name: str) -> list[Json]:
    out = plane.kubectl("get", "events", "-n", namespace, "--field-selector",
                        f"involvedObject.kind=Pod,involvedObject.name={name},reason=Failed", "-o", "json").stdout
    items: list[Json] = json.loads(out)["items"]
    return [e for e in items if e["source"].get("component") == "kubelet"]


def _secret(plane: ControlPlane, namespace: str, name: str, server: str, password: str) -> None:
    plane.kubectl("create", "secret", "docker-registry", name, "-n", namespace, f"--docker-server={server}",
                  f"--docker-username={USER}", f"--docker-password={password}")


def test_a_pull_secret_pulls_from_a_private_registry_and_a_pod_without_one_fails(
        control_plane: ControlPlane, cluster_cri: CRIEnv, registry: PrivateRegistry, namespace: str,
        tmp_path: Path) -> None:
    ref = image(registry)
    node = Node(control_plane, tmp_path, runtime="containerd", cri_endpoint=cluster_cri.endpoint)
    try:
        node.start()
        wait_for(node.ready, timeout=10, what="node Ready")
        _secret(control_plane, namespace, "registry-creds", registry.host, PASSWORD)
        _secret(control_plane, namespace, "wrong-creds", registry.host, "not-" + PASSWORD)
        pods = [_pod(namespace, "private", node.name, ref, "registry-creds"),
                _pod(namespace, "anonymous", node.name, ref),
                _pod(namespace, "wrong", node.name, ref, "wrong-creds")]
        control_plane.kubectl("apply", "-f", "-", input_="\n".join(pods))

        wait_for(lambda: _main(_get(control_plane, namespace, "private")).get("state", {}).get("running"),
                 timeout=60, what="the pod with the pull secret running")
        wait_for(lambda: GREETING in control_plane.kubectl("logs", "private", "-n", namespace, check=False).stdout,
                 timeout=20, what="its output in kubectl logs")
        pulled = [r for r in registry.requests() if r.get("http.request.method") in ("GET", "HEAD")
                  and r.get("http.request.uri") == "/v2/test/busybox/manifests/1.36"
                  and r.get("http.response.status") == 200]
        assert pulled, f"the registry served no manifest:\n{registry.log_tail()}"

        for name in ("anonymous", "wrong"):
            waiting = wait_for(lambda n=name: _pull_failure(control_plane, namespace, n),
                               timeout=60, what=f"{name}: ErrImagePull or ImagePullBackOff")
            assert "401 Unauthorized" in waiting["message"], waiting
            assert ref in waiting["message"], waiting
            failed = wait_for(lambda n=name: _failed_events(control_plane, namespace, n),
                              timeout=20, what=f"{name}: a Failed event")
            assert failed[0]["type"] == "Warning"
            assert failed[0]["message"].startswith(f'Failed to pull image "{ref}": '), failed[0]
            assert "401 Unauthorized" in failed[0]["message"], failed[0]

        private = _get(control_plane, namespace, "private")
        assert private["status"]["phase"] == "Running"
        assert _main(private)["restartCount"] == 0 and _main(private)["state"].get("running")
        assert _main(private)["imageID"], private["status"]
    finally:
        node.remove()
