"""The shape of the kubelet's go-restful container (server/restful.py), as the oracle saw the real
kubelet answer: go-restful's 404 under a WebService after authentication, its trailing slash, and
the mux's 307 for a bare path registered with a slash only."""

from __future__ import annotations

import pytest

from kubeletapi.server.restful import redirected, web_service_root
from tests.fakehost import FakeNode

RESTFUL_404 = (404, "404: Page Not Found")


@pytest.mark.parametrize(("path", "debugging", "root"), [
    ("/stats/nonesuch", True, "/stats/"),
    ("/stats/", True, "/stats/"),
    ("/stats", True, None),  # the mux redirects it
    ("/pods", True, "/pods"),
    ("/pods/x", True, "/pods"),
    ("/podsx", True, None),
    ("/containerLogs/ns", True, "/containerLogs"),
    ("/exec", True, "/exec"),
    ("/exec/x", False, None),  # a placeholder's, with the debugging handlers off
    ("/metrics/nonesuch", True, None),  # a mux handler's
    ("/nonesuch", True, None),
])
def test_web_service_root(path: str, debugging: bool, root: str | None) -> None:
    assert web_service_root(path, debugging) == root


@pytest.mark.parametrize(("path", "debugging", "target"), [
    ("/stats", True, "/stats/"),
    ("/runningpods", True, "/runningpods/"),
    ("/runningpods", False, "/runningpods/"),
    ("/exec", True, None),  # a WebService root: go-restful's 404
    ("/exec", False, "/exec/"),
    ("/logs", False, "/logs/"),
    ("/pods", True, None),
])
def test_redirected(path: str, debugging: bool, target: str | None) -> None:
    assert redirected(path, debugging) == target


def test_a_path_under_a_web_service_is_authenticated_then_restful_404(shared_node: FakeNode) -> None:
    with shared_node.client() as client:  # no credentials
        assert (client.get(shared_node.url(path="/stats/nonesuch")).status_code) == 401
        assert client.get(shared_node.url(path="/nonesuch")).status_code == 404  # Go's, before authentication
    with shared_node.admin() as client:
        for path in ("/stats/nonesuch", "/stats/", "/containerLogs/ns/pod", "/exec/ns/pod", "/pods/x"):
            response = client.get(shared_node.url(path=path))
            assert (response.status_code, response.text) == RESTFUL_404, path
            assert response.headers["content-type"] == "text/plain; charset=utf-8"
            assert "x-content-type-options" not in response.headers


def test_a_trailing_slash_is_the_same_route(shared_node: FakeNode) -> None:
    with shared_node.admin() as client:
        slashed, plain = client.get(shared_node.url(path="/pods/")), client.get(shared_node.url(path="/pods"))
        assert (slashed.status_code, slashed.json()) == (200, plain.json())
        assert client.post(shared_node.url(path="/pods/")).status_code == 405


@pytest.mark.parametrize(("path", "location"), [
    ("/stats", "/stats/"),
    ("/runningpods?a=1&b='", "/runningpods/?a=1&b='"),
])
def test_the_mux_redirects_a_bare_path_before_authentication(shared_node: FakeNode, path: str, location: str
                                                             ) -> None:
    with shared_node.client() as client:
        response = client.get(shared_node.url(path=path))
    assert (response.status_code, response.headers["location"]) == (307, location)
    escaped = location.replace("&", "&amp;").replace("'", "&#39;")  # Go's htmlReplacer
    assert response.text == f'<a href="{escaped}">Temporary Redirect</a>.\n\n'
    assert response.headers["content-type"] == "text/html; charset=utf-8"


def test_a_redirect_of_another_method_has_no_body(shared_node: FakeNode) -> None:
    with shared_node.client() as client:
        response = client.post(shared_node.url(path="/stats"))
    assert (response.status_code, response.headers["location"], response.content) == (307, "/stats/", b"")
    assert "content-type" not in response.headers


def test_the_read_only_port(shared_node: FakeNode) -> None:
    with shared_node.client() as client:
        url = shared_node.url("read-only", "/stats/nonesuch")
        response = client.get(url)
        assert (response.status_code, response.text) == RESTFUL_404
        response = client.get(shared_node.url("read-only", "/exec"))
        assert (response.status_code, response.headers["location"]) == (307, "/exec/")
        response = client.get(shared_node.url("read-only", "/exec/ns/p/c"))
        assert response.status_code == 405  # the placeholder, not a 404
