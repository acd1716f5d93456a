"""Every route declares its subresources, matching the kubelet's mapping, and is enforced live.

The HTTP layer serves a FakeHost here (tests.fakehost): routing, authentication and authorization
are the agent's own, and no pods or runtime are started."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from starlette.routing import BaseRoute, Route

from kubeletapi.server.app import api
from kubeletapi.server.authz import subresources_for_path
from kubeletapi.server.routing import route_subresources
from tests.fakehost import FakeHost, FakeNode
from tests.helpers import agent_args, http_sample


def sample_path(route: Route) -> str:
    """A concrete path for a route template (parameters filled with `x`)."""
    return re.sub(r"\{[^}]+\}", "x", route.path)


def all_routes() -> list[tuple[str, BaseRoute]]:
    routes = []
    # pod submission on: its routes are walked too (and the read-only app must not grow any)
    for role, debugging in (("secure", True), ("secure", False), ("readonly", False)):
        app = api(FakeHost(), role, debugging, pod_submission=True)  # type: ignore[arg-type]
        routes += [(f"{role}/{debugging}", r) for r in app.routes]
    return routes


@pytest.mark.parametrize(("app", "route"), all_routes(), ids=lambda v: getattr(v, "path", v))
def test_route_declares_kubelet_subresources(app: str, route: BaseRoute) -> None:
    declared = route_subresources(route)
    assert declared is not None, f"{app}: {route} declares no authorization subresource"
    assert isinstance(route, Route)
    assert declared == subresources_for_path(sample_path(route))


RBAC_TEMPLATE = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: only}}
rules: [{{apiGroups: [""], resources: [nodes/{sub}], verbs: ["*"]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: only}}
roleRef: {{kind: ClusterRole, name: only}}
subjects: [{{kind: User, name: scoped}}]
"""


def secure_routes() -> list[Route]:
    return [r for r in api(FakeHost(), "secure", True).routes if isinstance(r, Route)]


@pytest.fixture(scope="module")
def scoped_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], FakeNode]]:
    """The node on which the user `scoped` (token scoped-token) may do anything with nodes/<sub>
    and nothing else: one per subresource, shared by the tests here (they only send requests)."""
    tmp = tmp_path_factory.mktemp("scoped")
    tokens = tmp / "tokens.csv"
    tokens.write_text("scoped-token,scoped,1\n")
    nodes: dict[str, FakeNode] = {}

    def node_for(sub: str) -> FakeNode:
        if sub not in nodes:
            rbac = tmp / f"rbac-{sub}.yaml"
            rbac.write_text(RBAC_TEMPLATE.format(sub=sub))
            flags = ("--token-auth-file", str(tokens), "--authorization-rbac-file", str(rbac))
            nodes[sub] = FakeNode(agent_args(tmp, *flags, read_only=False, healthz=False))
        return nodes[sub]

    yield node_for
    with ThreadPoolExecutor() as pool:  # each takes ~0.2 s (uvicorn's shutdown), all at once
        list(pool.map(FakeNode.close, nodes.values()))


@pytest.mark.parametrize("route", secure_routes(), ids=lambda r: r.path)
def test_route_is_enforced_live(scoped_node: Callable[[str], FakeNode], route: Route) -> None:
    """A user allowed only the route's first subresource gets through; one allowed everything
    else except the route's subresources gets the kubelet's 403 naming all of them."""
    declared = route_subresources(route)
    assert declared
    node = scoped_node(declared[0])
    method = sorted(route.methods or {"GET"})[0]
    method = "GET" if "GET" in (route.methods or ()) else method
    path = sample_path(route)
    with node.client(token="scoped-token") as client:
        allowed = client.request(method, node.url(path=path))
    assert allowed.status_code not in (401, 403), allowed.text
    other = "stats" if declared[0] != "stats" else "log"
    node2 = scoped_node(other)
    with node2.client(token="scoped-token") as client:
        denied = client.request(method, node2.url(path=path))
    verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "")
    assert denied.status_code == 403
    expected = f"Forbidden (user=scoped, verb={verb}, resource=nodes, subresource(s)=[{' '.join(declared)}])\n"
    if method == "HEAD":  # the routes of /healthz serve HEAD alone: the same answer, without its body
        assert (denied.text, denied.headers["content-length"]) == ("", str(len(expected)))
    else:
        assert denied.text == expected


def test_unknown_paths_404_before_authentication(node: FakeNode) -> None:
    with node.client() as client:  # no credentials at all
        for path in ("/", "/nope", "/healthz/", "/healthz/nope", "/metrics/nope"):
            response = client.get(node.url(path=path))
            assert (response.status_code, response.text) == (404, "404 page not found\n"), path
            assert response.headers["x-content-type-options"] == "nosniff"


def test_wrong_method_is_authenticated_then_405(node: FakeNode) -> None:
    with node.client() as client:
        assert client.post(node.url(path="/pods")).status_code == 401
    with node.admin() as client:
        response = client.post(node.url(path="/pods"))
    assert (response.status_code, response.text) == (405, "405: Method Not Allowed")
    assert response.headers["allow"] == "GET"


@pytest.mark.parametrize("path", ["/metrics", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes", "/configz"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_go_mux_handlers_serve_any_method(node: FakeNode, path: str, method: str) -> None:
    """The kubelet registers these on its mux, not as go-restful routes: any method is a GET (the
    oracle saw PUT /metrics and POST /configz answer 200 there)."""
    with node.admin() as client:
        response = client.request(method, node.url(path=path))
        get = client.get(node.url(path=path))
    assert (response.status_code, response.headers["content-type"]) == (200, get.headers["content-type"])


@pytest.mark.parametrize(("method", "path", "allow"), [
    pytest.param("PUT", "/stats/summary", "GET, POST", id="summary"),
    pytest.param("DELETE", "/exec/ns/p/c", "GET, POST", id="exec"),
    pytest.param("PATCH", "/portForward/ns/p/uid", "GET, POST", id="port-forward-uid"),
    pytest.param("GET", "/run/ns/p/c", "POST", id="run"),
    pytest.param("QUERY", "/healthz", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE", id="healthz"),
])
def test_405_allow_lists_every_method_of_the_path(node: FakeNode, method: str, path: str, allow: str) -> None:
    # A path served by one route per method: Starlette's Allow named the first route's method only
    # (`Allow: GET` on /stats/summary, which serves POST too), as schemathesis found.
    with node.admin() as client:
        response = client.request(method, node.url(path=path))
    assert (response.status_code, response.text) == (405, "405: Method Not Allowed")
    assert response.headers["allow"] == allow


def test_head_has_an_empty_verb(start_node: Callable[..., FakeNode], tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("t,scoped,1\n")
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text(RBAC_TEMPLATE.format(sub="healthz").replace('verbs: ["*"]', "verbs: [get]"))
    node = start_node("--token-auth-file", str(tokens), "--authorization-rbac-file", str(rbac))
    with node.client(token="t") as client:
        assert client.get(node.url(path="/healthz")).status_code == 200
        head = client.head(node.url(path="/healthz"))
    assert head.status_code == 403  # HEAD maps to verb "" (the kubelet's code), not get


def test_api_server_proxy_alias(node: FakeNode) -> None:
    with node.admin() as client:
        ok = client.get(node.url(path="/api/v1/nodes/testnode/proxy/healthz?verbose"))
        with_port = client.get(node.url(path="/api/v1/nodes/https:testnode:10250/proxy/healthz/ping"))
        unknown = client.get(node.url(path="/api/v1/nodes/other/proxy/healthz"))
        metrics = client.get(node.url(path="/metrics")).text
    assert ok.status_code == 200 and ok.text.endswith("healthz check passed\n")
    assert (with_port.status_code, with_port.text) == (200, "ok")
    assert unknown.status_code == 404
    assert unknown.json()["message"] == 'nodes "other" not found'
    # counted under the target path's bucket
    assert http_sample(2.0, "healthz") in metrics
