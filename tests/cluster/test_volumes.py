"""Volumes and env from the API server, seen from inside the containers (on each runtime): a
configMap volume and its update (the ..data symlink swap), env from a Secret (secretKeyRef,
envFrom with a prefix) and the kubelet's CreateContainerConfigError for a missing key, and the
projected service-account token of the kube-api-access volume used to call the API server."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tests.cluster.conftest import IMAGE
from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

SYNC_S = 5  # the nodes' --sync-frequency here: the longest an update may take to reach a volume
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _pod(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    with plane.admin_client() as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return response.json() if response.status_code == 200 else None


def _run(plane: ControlPlane, node: Node, namespace: str, name: str, script: str, **spec: Any) -> None:
    container = {"name": "main", "image": IMAGE, "command": ["sh", "-c", script], **spec.pop("container", {})}
    plane.kubectl("apply", "-f", "-", input_=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1, "containers": [container], **spec},
    }))


def _lines(plane: ControlPlane, namespace: str, name: str) -> dict[str, str]:
    """The pod's log lines `key=value` (the last of each key)."""
    out = plane.kubectl("logs", name, "-n", namespace, check=False).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _start(node: Node) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")


@pytest.mark.node_args("--sync-frequency", f"{SYNC_S}s")
def test_a_configmap_volume_and_its_update(node: Node, control_plane: ControlPlane, namespace: str) -> None:
    _start(node)
    control_plane.kubectl("create", "configmap", "cfg", "-n", namespace, "--from-literal=greeting=hello")
    script = ("while true; do echo \"greeting=$(cat /etc/cfg/greeting) link=$(readlink /etc/cfg/greeting)\"; "
              "touch /etc/cfg/new 2>/dev/null && echo writable=yes || echo writable=no; sleep 0.5; done")
    _run(control_plane, node, namespace, "reader", script, automountServiceAccountToken=False,
         volumes=[{"name": "cfg", "configMap": {"name": "cfg"}}],
         container={"volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]})
    seen = wait_for(lambda: _lines(control_plane, namespace, "reader").get("greeting"), timeout=60, interval=0.5,
                    what="the container reading the configMap")
    assert seen == "hello link=..data/greeting"  # the kubelet's layout: a link into the ..data swap
    assert _lines(control_plane, namespace, "reader")["writable"] == "no"  # mounted read-only
    control_plane.kubectl("patch", "configmap", "cfg", "-n", namespace, "-p", '{"data": {"greeting": "bonjour"}}')
    wait_for(lambda: _lines(control_plane, namespace, "reader")["greeting"] == "bonjour link=..data/greeting",
             timeout=2 * SYNC_S + 5, interval=0.5, what="the update in the file within the sync period")
    (container,) = (_pod(control_plane, namespace, "reader") or {})["status"]["containerStatuses"]
    assert container["restartCount"] == 0  # the file changed under the running container


def test_env_from_a_secret_and_a_missing_key(node: Node, control_plane: ControlPlane, namespace: str) -> None:
    _start(node)
    control_plane.kubectl("create", "secret", "generic", "creds", "-n", namespace,
                          "--from-literal=USER=admin", "--from-literal=PASSWORD=hunter2")
    env = [{"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}},
           {"name": "MAYBE", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "absent", "optional": True}}}]
    script = 'echo "pw=$PW"; echo "db_user=$DB_USER"; echo "db_password=$DB_PASSWORD"; echo "maybe=${MAYBE-unset}"; '
    _run(control_plane, node, namespace, "envy", script + "sleep 3600", automountServiceAccountToken=False,
         container={"env": env, "envFrom": [{"prefix": "DB_", "secretRef": {"name": "creds"}}]})
    missing = [{"name": "NOPE", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nope"}}}]
    _run(control_plane, node, namespace, "broken", "sleep 3600", automountServiceAccountToken=False,
         container={"env": missing})
    lines = wait_for(lambda: (found := _lines(control_plane, namespace, "envy")).get("maybe") and found,
                     timeout=60, interval=0.5, what="the container printing its env")
    assert lines == {"pw": "hunter2", "db_user": "admin", "db_password": "hunter2", "maybe": "unset"}

    def waiting() -> dict[str, Any] | None:
        status = (_pod(control_plane, namespace, "broken") or {}).get("status") or {}
        state = (status.get("containerStatuses") or [{}])[0].get("state") or {}
        found = state.get("waiting")
        return found if isinstance(found, dict) and found.get("reason") == "CreateContainerConfigError" else None

    state = wait_for(waiting, timeout=60, interval=0.5, what="CreateContainerConfigError in the pod's status")
    assert state["message"] == f"couldn't find key nope in Secret {namespace}/creds"
    assert (_pod(control_plane, namespace, "broken") or {})["status"]["phase"] == "Pending"


def _review(plane: ControlPlane, token: str) -> dict[str, Any]:
    with plane.admin_client() as client:
        response = client.post("/apis/authentication.k8s.io/v1/tokenreviews", json={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
    response.raise_for_status()
    status = response.json()["status"]
    assert isinstance(status, dict)
    return status


def test_the_projected_token_calls_the_api_server(node: Node, control_plane: ControlPlane, namespace: str) -> None:
    _start(node)
    # The ServiceAccount admission adds the kube-api-access volume: token, kube-root-ca.crt, namespace.
    review = '{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}'
    script = (
        f'd={SA_DIR}; echo "namespace=$(cat $d/namespace)"; echo "token=$(cat $d/token)"; '
        'echo "ca=$(sha256sum $d/ca.crt | cut -d" " -f1)"; '
        # busybox's wget takes no CA file: the test compares the pod's ca.crt with the cluster's CA
        f'echo "review=$(wget -q -O - --no-check-certificate --header "Authorization: Bearer $(cat $d/token)" '
        f"--header 'Content-Type: application/json' --post-data '{review}' "
        f'{control_plane.server}/apis/authentication.k8s.io/v1/selfsubjectreviews | tr -d "\\n")"; sleep 3600'
    )
    _run(control_plane, node, namespace, "caller", script)
    pod = _pod(control_plane, namespace, "caller") or {}
    assert any(v["name"].startswith("kube-api-access-") for v in pod["spec"]["volumes"])
    lines = wait_for(lambda: (found := _lines(control_plane, namespace, "caller")).get("review") is not None and found,
                     timeout=60, interval=0.5, what="the container calling the API server")
    assert lines["namespace"] == namespace
    assert lines["ca"] == hashlib.sha256(control_plane.pki.ca.cert.read_bytes()).hexdigest()
    account = f"system:serviceaccount:{namespace}:default"
    status = _review(control_plane, lines["token"])
    assert status["authenticated"] is True and status["user"]["username"] == account
    extra = status["user"]["extra"]  # bound to this pod by the TokenRequest the node made
    assert extra["authentication.kubernetes.io/pod-name"] == ["caller"]
    assert extra["authentication.kubernetes.io/pod-uid"] == [pod["metadata"]["uid"]]
    assert extra["authentication.kubernetes.io/node-name"] == [node.name]
    answer = json.loads(lines["review"])
    assert answer["kind"] == "SelfSubjectReview" and answer["status"]["userInfo"]["username"] == account
