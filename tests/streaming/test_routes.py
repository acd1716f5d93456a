"""The streaming endpoints of a node without pods: refusals, in the kubelet's order, for plain
requests and WebSocket handshakes alike; the read-only port's 405; authentication and authorization
of handshakes. The HTTP layer serves a FakeHost (tests.fakehost) whose pod lookups answer as the
agent's do for a pod it does not have (kubelet/streams.py, tests/unit/test_kubelet_streams.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakehost import FakeNode
from tests.streaming.wsclient import refused

NO_STREAMS = "you must specify at least 1 of stdin, stdout, stderr"
NO_POD = "pod does not exist"


@pytest.fixture
def node(shared_node: FakeNode) -> FakeNode:
    """The tests here only send requests and read the answers: they share one node."""
    return shared_node


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        pytest.param("/exec/default/nopod/c", 400, NO_STREAMS, id="exec-options-first"),
        pytest.param("/exec/default/nopod/c?command=ls", 400, NO_STREAMS, id="exec-command-alone"),
        pytest.param("/exec/default/nopod/c?output=1", 404, NO_POD, id="exec-pod"),
        pytest.param("/exec/default/nopod/uid/c?output=1", 404, NO_POD, id="exec-uid-pod"),
        pytest.param("/attach/default/nopod/c?tty=1", 400, NO_STREAMS, id="attach-options-first"),
        pytest.param("/attach/default/nopod/c?input=1", 404, NO_POD, id="attach-pod"),
        pytest.param("/attach/default/nopod/uid/c?error=1", 404, NO_POD, id="attach-uid-pod"),
        pytest.param("/portForward/default/nopod", 404, NO_POD, id="port-forward-no-port-check-without-upgrade"),
        pytest.param("/portForward/default/nopod/uid?port=x", 404, NO_POD, id="port-forward-uid"),
    ],
)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_plain_requests(node: FakeNode, method: str, path: str, status: int, body: str) -> None:
    with node.admin() as client:
        response = client.request(method, node.url(path=path))
    assert (response.status_code, response.text) == (status, body)
    assert response.headers["content-type"] == "text/plain; charset=utf-8"


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        pytest.param("/exec/default/nopod/c?command=ls", 400, NO_STREAMS, id="exec-options"),
        pytest.param("/exec/default/nopod/c?command=ls&output=1", 404, NO_POD, id="exec-pod"),
        pytest.param("/attach/default/nopod/uid/c?output=1", 404, NO_POD, id="attach-pod"),
        pytest.param("/portForward/default/nopod", 400, 'query parameter "port" is required', id="pf-no-port"),
        pytest.param("/portForward/default/nopod?port=0", 400, 'port "0" must be > 0', id="pf-port-zero"),
        pytest.param("/portForward/default/nopod?port=http", 400,
                     'unable to parse "http" as a port: strconv.ParseUint: parsing "http": invalid syntax',
                     id="pf-port-name"),
        pytest.param("/portForward/default/nopod?port=80", 404, NO_POD, id="pf-pod"),
    ],
)
def test_handshake_refusals(
    node: FakeNode, path: str, status: int, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert refused(node, path) == (status, body.encode())
    # an HTTP answer completes the handshake: no false "returned without completing handshake" error
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


@pytest.mark.parametrize("path", ["/exec/ns/p/c?output=1&command=ls", "/attach/ns/p/c?output=1",
                                  "/portForward/ns/p?port=80", "/run/ns/p/c", "/containerLogs/ns/p/c"])
def test_read_only_port_handshakes_get_405(node: FakeNode, path: str, caplog: pytest.LogCaptureFixture) -> None:
    assert refused(node, path, listener="read-only") == (405, b"Debug endpoints are disabled.\n")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_disabled_debugging_handlers_refuse_handshakes(start_node: Callable[..., FakeNode]) -> None:
    node = start_node("--enable-debugging-handlers=false")
    assert refused(node, "/exec/ns/p/c?output=1") == (405, b"Debug endpoints are disabled.\n")
    assert refused(node, "/exec/ns/p/c?output=1", cert=None)[0] == 401  # authenticated first


def test_handshake_authentication(node: FakeNode) -> None:
    assert refused(node, "/exec/default/nopod/c?output=1", cert=None) == (401, b"Unauthorized")
    # the token may come as a subprotocol; it is never echoed (the handshake goes on to the pod lookup)
    assert refused(node, "/exec/default/nopod/c?output=1", cert=None, token=node.token()) == (404, NO_POD.encode())
    assert refused(node, "/exec/default/nopod/c?output=1", cert=None, token="wrong")[0] == 401


RBAC = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: stats-only}
rules: [{apiGroups: [""], resources: [nodes/stats, nodes/log], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: stats-only}
roleRef: {kind: ClusterRole, name: stats-only}
subjects: [{kind: User, name: viewer}]
"""


def test_handshake_needs_nodes_proxy(start_node: Callable[..., FakeNode], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("viewer-token,viewer,1\n")
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text(RBAC)
    node = start_node("--token-auth-file", str(tokens), "--authorization-rbac-file", str(rbac))
    forbidden = b"Forbidden (user=viewer, verb=get, resource=nodes, subresource(s)=[proxy])\n"
    for path in ("/exec/default/p/c?output=1&command=ls", "/attach/default/p/c?output=1",
                 "/portForward/default/p?port=1"):
        assert refused(node, path, cert=None, token="viewer-token") == (403, forbidden), path
