"""Webhook mode against an HTTPS API-server test double: TokenReview, SubjectAccessReview, caches.

The webhooks are wired from the flags by the agent's own code, around a FakeHost (tests.fakehost);
the caches' expiry runs on a real agent, whose clock they must follow."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubeletapi.clock import FakeClock
from tests.apiserver_double import APIServerDouble
from tests.fakehost import FakeNode
from tests.helpers import Agent


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[APIServerDouble]:
    double = APIServerDouble(
        tmp_path,
        users={"alice-token": {"username": "alice", "uid": "a-1", "groups": ["devs"], "extra": {"scope": ["x"]}}},
        allow={("alice", "metrics"), ("alice", "healthz"), ("kubeletapi-admin", "configz")},
    )
    yield double
    double.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def webhook_node(start_node: Callable[..., FakeNode], apiserver: APIServerDouble, clock: FakeClock) -> FakeNode:
    # With --kubeconfig the v1beta1 defaults apply: webhook authentication and Webhook authorization.
    return start_node("--kubeconfig", str(apiserver.kubeconfig), clock=clock)


@pytest.fixture
def webhook_agent(start_agent: Callable[..., Agent], apiserver: APIServerDouble, clock: FakeClock) -> Agent:
    return start_agent("--kubeconfig", str(apiserver.kubeconfig), clock=clock)


def test_token_review_and_subject_access_review(webhook_node: FakeNode, apiserver: APIServerDouble) -> None:
    with webhook_node.client(token="alice-token") as client:
        assert client.get(webhook_node.url(path="/metrics")).status_code == 200
        denied = client.get(webhook_node.url(path="/configz"))
    assert denied.status_code == 403
    assert denied.text == "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[configz proxy])\n"
    token_review = apiserver.reviews[0]
    assert token_review == {
        "kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1", "metadata": {},
        "spec": {"token": "alice-token"}, "status": {"user": {}},
    }
    sar = apiserver.reviews[1]
    assert sar["kind"] == "SubjectAccessReview" and sar["apiVersion"] == "authorization.k8s.io/v1"
    assert sar["spec"] == {
        "resourceAttributes": {"verb": "get", "version": "v1", "resource": "nodes", "subresource": "metrics",
                               "name": "testnode"},
        "user": "alice", "groups": ["devs", "system:authenticated"], "extra": {"scope": ["x"]}, "uid": "a-1",
    }
    # /configz tried configz, then proxy: two reviews, in that order
    assert [r["spec"]["resourceAttributes"]["subresource"] for r in apiserver.reviews[2:]] == ["configz", "proxy"]


def test_client_certificate_then_webhook_authorization(webhook_node: FakeNode, apiserver: APIServerDouble) -> None:
    with webhook_node.admin() as client:
        assert client.get(webhook_node.url(path="/configz")).status_code == 200
    assert apiserver.kinds() == ["SubjectAccessReview"]  # no TokenReview for a certificate
    assert apiserver.reviews[0]["spec"]["user"] == "kubeletapi-admin"


def test_unknown_token(webhook_node: FakeNode, apiserver: APIServerDouble) -> None:
    with webhook_node.client(token="nobody") as client:
        response = client.get(webhook_node.url(path="/metrics"))
    assert (response.status_code, response.text) == (401, "Unauthorized")
    assert apiserver.kinds() == ["TokenReview"]


def test_caches_follow_the_configured_ttls(
    webhook_agent: Agent, apiserver: APIServerDouble, clock: FakeClock
) -> None:
    def get(path: str) -> int:
        with webhook_agent.client(token="alice-token") as client:
            return client.get(webhook_agent.url(path=path)).status_code

    def counts() -> tuple[int, int]:
        kinds = apiserver.kinds()
        return kinds.count("TokenReview"), kinds.count("SubjectAccessReview")

    for _ in range(3):
        assert get("/metrics") == 200
        assert get("/configz") == 403
    assert counts() == (1, 3)  # token cached; SARs: metrics (allow), configz + proxy (deny)
    clock.advance(31)  # past cacheUnauthorizedTTL (30s)
    assert get("/configz") == 403 and get("/metrics") == 200
    assert counts() == (1, 5)
    clock.advance(90)  # past cacheTTL (2m) for the token
    assert get("/metrics") == 200
    assert counts() == (2, 5)
    clock.advance(300)  # past cacheAuthorizedTTL (5m)
    assert get("/metrics") == 200
    assert counts() == (3, 6)


def test_api_server_errors(webhook_node: FakeNode, apiserver: APIServerDouble) -> None:
    apiserver.fail_with = 403  # not retried: fails at once
    with webhook_node.client(token="alice-token") as client:
        response = client.get(webhook_node.url(path="/metrics"))
    assert (response.status_code, response.text) == (401, "Unauthorized")
    with webhook_node.admin() as client:
        response = client.get(webhook_node.url(path="/metrics"))
    assert response.status_code == 500
    assert response.text == "Authorization error (user=kubeletapi-admin, verb=get, resource=nodes, subresource=metrics)"
    apiserver.fail_with = None
    with webhook_node.admin() as client:
        assert client.get(webhook_node.url(path="/healthz")).status_code == 403  # errors were not cached
