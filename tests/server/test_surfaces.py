"""The read-only and healthz listeners' exact surface, and debugging handlers switched off.

The surfaces are served around a FakeHost (tests.fakehost); whether the agent starts the read-only
listener and honours --enable-debugging-handlers is checked on a real agent."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from starlette.routing import Route

from kubeletapi.server.app import api
from tests.fakehost import FakeHost, FakeNode
from tests.helpers import Agent

DISABLED = ["/run/ns/p/c", "/exec/ns/p/c", "/attach/ns/p/c", "/portForward/ns/p", "/containerLogs/ns/p/c",
            "/runningpods/", "/debug/pprof/", "/logs/"]

# The whole read-only surface: grow this list only together with the kubelet's auth-not-required group.
READ_ONLY_ROUTES = {
    "/healthz", "/healthz/ping", "/healthz/log", "/healthz/syncloop", "/pods", "/metrics",
    "/stats/summary", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes",
    "/run/{rest:path}", "/exec/{rest:path}", "/attach/{rest:path}", "/portForward/{rest:path}",
    "/containerLogs/{rest:path}", "/runningpods/{rest:path}", "/debug/pprof/{rest:path}", "/logs/{rest:path}",
    # kubeletapi's web UI (issue 19): pages and their JSON views, without container logs.
    "/ui", "/ui/", "/ui/pods/{namespace}/{pod}", "/ui/pods/{namespace}/{pod}/{container}", "/ui/assets/{name}",
    "/ui/api/node", "/ui/api/pods", "/ui/api/pods/{namespace}/{pod}",
}


@pytest.fixture
def node(shared_node: FakeNode) -> FakeNode:
    """The tests here only send requests and read the answers: they share one node."""
    return shared_node


def test_read_only_route_set_is_pinned() -> None:
    paths = {r.path for r in api(FakeHost(), "readonly").routes if isinstance(r, Route)}
    assert paths == READ_ONLY_ROUTES
    # pod submission (--enable-pod-submission) is a secure-port route only
    with_submission = {r.path for r in api(FakeHost(), "readonly", pod_submission=True).routes  # type: ignore[arg-type]
                       if isinstance(r, Route)}
    assert with_submission == READ_ONLY_ROUTES


def test_read_only_port_live(node: FakeNode) -> None:
    with httpx.Client() as client:
        assert client.get(node.url("read-only", "/healthz")).text == "ok"
        assert client.get(node.url("read-only", "/healthz/syncloop")).text == "ok"
        metrics = client.get(node.url("read-only", "/metrics"))
        assert metrics.status_code == 200
        assert 'server_type="readonly"' in metrics.text
        assert client.get(node.url("read-only", "/pods")).json()["kind"] == "PodList"
        for path in ("/configz", "/openapi.json", "/nope"):
            response = client.get(node.url("read-only", path))
            assert (response.status_code, response.text) == (404, "404 page not found\n"), path
        for path in DISABLED:
            for method in ("GET", "POST"):
                response = client.request(method, node.url("read-only", path))
                assert (response.status_code, response.text) == (405, "Debug endpoints are disabled.\n"), path


def test_read_only_port_ignores_credentials(node: FakeNode) -> None:
    # No authentication at all: a bad token is not even looked at.
    response = httpx.get(node.url("read-only", "/healthz"), headers={"Authorization": "Bearer wrong"})
    assert response.text == "ok"


def test_read_only_port_off_by_default(start_agent: Callable[..., Agent]) -> None:
    agent = start_agent(read_only=False)
    assert "read-only" not in agent.kubelet.listeners


def test_healthz_port_only_ping(node: FakeNode) -> None:
    with httpx.Client() as client:
        verbose = client.get(node.url("healthz", "/healthz?verbose"))
        assert verbose.text == "[+]ping ok\nhealthz check passed\n"
        assert client.get(node.url("healthz", "/healthz/ping")).text == "ok"
        for path in ("/healthz/log", "/healthz/syncloop", "/metrics", "/configz"):
            assert client.get(node.url("healthz", path)).status_code == 404, path


def test_debugging_handlers_disabled_on_secure_port(start_agent: Callable[..., Agent]) -> None:
    agent = start_agent("--enable-debugging-handlers=false")
    with agent.admin() as client:
        assert client.get(agent.url(path="/configz")).status_code == 404
        response = client.get(agent.url(path="/exec/ns/p/c"))
        assert (response.status_code, response.text) == (405, "Debug endpoints are disabled.\n")
        assert client.get(agent.url(path="/metrics")).status_code == 200
    with agent.client() as client:
        assert client.get(agent.url(path="/exec/ns/p/c")).status_code == 401  # still authenticated first


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST", "PUT", "DELETE", "TRACE"])
def test_healthz_answers_every_method(node: FakeNode, method: str) -> None:
    with node.admin() as client:
        response = client.request(method, node.url(path="/healthz"))
    assert response.status_code == 200
