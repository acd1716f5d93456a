"""PUT/POST /submittedpods (--enable-pod-submission) through real TLS on a whole agent: a Pod or
PodList replaces the api-http source's pods, visible in /pods; refused bodies (too large,
malformed, invalid, a duplicate name) answer 400 with the reason and change nothing; the route is
authorized as nodes/submittedpods, absent without the flag and never on the read-only port."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Agent
from tests.podtools import wait_for

pytestmark = pytest.mark.e2e


def pod(name: str, command: str = "sleep 300") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", command]}]}}


def pod_list(*items: dict[str, Any]) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "PodList", "items": list(items)}).encode()


def listed(agent: Agent) -> dict[str, dict[str, Any]]:
    with agent.admin() as client:
        return {p["metadata"]["name"]: p for p in client.get(agent.url("secure", "/pods")).json()["items"]}


def running(agent: Agent, *names: str) -> dict[str, dict[str, Any]] | None:
    pods = listed(agent)
    for name in names:
        statuses = pods.get(name, {}).get("status", {}).get("containerStatuses") or []
        if not statuses or "running" not in statuses[0]["state"]:
            return None
    return pods


@pytest.fixture
def agent(start_agent: Callable[..., Agent]) -> Agent:
    return start_agent("--enable-pod-submission")


def test_submission_replaces_the_set_and_shows_in_pods(agent: Agent) -> None:
    with agent.admin() as client:
        answer = client.post(agent.url("secure", "/submittedpods"), content=pod_list(pod("a"), pod("b")),
                             headers={"Content-Type": "application/json"})
        assert answer.status_code == 200, answer.text
        assert [p["metadata"]["name"] for p in answer.json()["items"]] == ["a-testnode", "b-testnode"]
        pods = wait_for(lambda: running(agent, "a-testnode", "b-testnode"), what="submitted pods running")
        annotations = pods["a-testnode"]["metadata"]["annotations"]
        assert annotations["kubernetes.io/config.source"] == "api-http"
        assert annotations["kubernetes.io/config.hash"] == pods["a-testnode"]["metadata"]["uid"]
        # a single Pod, in YAML, with PUT: the new whole set
        yaml = b"apiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec:\n  containers:\n" \
               b"  - {name: c, image: busybox, command: [sleep, '300']}\n"
        answer = client.put(agent.url("secure", "/submittedpods"), content=yaml)
        assert answer.status_code == 200, answer.text
        wait_for(lambda: (p := running(agent, "c-testnode")) and "a-testnode" not in p and "b-testnode" not in p
                 and p, what="set replaced")
        # an empty list removes them all
        assert client.put(agent.url("secure", "/submittedpods"), content=pod_list()).status_code == 200
        wait_for(lambda: not listed(agent), what="all removed")


@pytest.mark.parametrize(("body", "reason"), [
    pytest.param(b"{", "request body", id="malformed"),
    pytest.param(pod_list(pod("a"), pod("a")), "pod default/a-testnode is given more than once", id="duplicate"),
    pytest.param(json.dumps({**pod("x"), "spec": {"containers": [{"name": "c", "image": "i", "comand": []}]}}).encode(),
                 "spec.containers[0].comand: unknown field", id="invalid"),
    pytest.param(pod_list(pod("x", "sleep 1 #" + "y" * (1536 * 1024))), "larger than 1.5 MiB", id="too-large"),
    pytest.param(b'{"kind": "Service", "apiVersion": "v1"}', "kind", id="not-a-pod"),
])
def test_refused_bodies_change_nothing(agent: Agent, body: bytes, reason: str) -> None:
    with agent.admin() as client:
        assert client.post(agent.url("secure", "/submittedpods"), content=pod_list(pod("keep"))).status_code == 200
        wait_for(lambda: running(agent, "keep-testnode"), what="kept pod running")
        before = listed(agent)["keep-testnode"]["metadata"]["uid"]
        answer = client.post(agent.url("secure", "/submittedpods"), content=body)
        assert answer.status_code == 400
        status = answer.json()
        assert (status["kind"], status["reason"], status["code"]) == ("Status", "BadRequest", 400)
        assert reason in status["message"]
        assert set(listed(agent)) == {"keep-testnode"}
        assert listed(agent)["keep-testnode"]["metadata"]["uid"] == before


def test_authorized_as_nodes_submittedpods(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("reader-token,reader,1\nsubmitter-token,submitter,2\n")
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text("""apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [nodes/pods, nodes/proxy], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: submitter}
rules: [{apiGroups: [""], resources: [nodes/submittedpods], verbs: [create, update]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: reader}
roleRef: {kind: ClusterRole, name: reader}
subjects: [{kind: User, name: reader}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: submitter}
roleRef: {kind: ClusterRole, name: submitter}
subjects: [{kind: User, name: submitter}]
""")
    agent = start_agent("--enable-pod-submission", "--token-auth-file", str(tokens),
                        "--authorization-mode", "RBAC", "--authorization-rbac-file", str(rbac))
    url = agent.url("secure", "/submittedpods")
    with agent.client(token="reader-token") as reader:
        answer = reader.post(url, content=pod_list())
        assert (answer.status_code, answer.text) == (
            403, "Forbidden (user=reader, verb=create, resource=nodes, subresource(s)=[submittedpods])\n")
    with agent.client(token="submitter-token") as submitter:
        assert submitter.put(url, content=pod_list()).status_code == 200
        assert submitter.post(url, content=pod_list()).status_code == 200


def test_off_by_default_and_never_on_the_read_only_port(start_agent: Callable[..., Agent]) -> None:
    plain = start_agent()
    with plain.admin() as client:
        answer = client.post(plain.url("secure", "/submittedpods"), content=pod_list())
        assert (answer.status_code, answer.text) == (404, "404 page not found\n")
    enabled = start_agent("--enable-pod-submission")
    with enabled.admin() as client:
        answer = client.post(enabled.url("read-only", "/submittedpods"), content=pod_list())
        assert (answer.status_code, answer.text) == (404, "404 page not found\n")


def test_a_streamed_body_over_the_limit_is_refused_too(agent: Agent) -> None:
    chunk = b" " * (256 * 1024)
    with agent.admin() as client:
        answer = client.post(agent.url("secure", "/submittedpods"), content=iter([chunk] * 8))  # chunked, 2 MiB
        assert answer.status_code == 400
        assert "larger than 1.5 MiB" in answer.json()["message"]
    assert listed(agent) == {}
