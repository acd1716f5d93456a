"""Authorization attributes: the kubelet's path mapping, verbs, SAR spec and the decision cache."""

from __future__ import annotations

import asyncio

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.server.authn import UserInfo
from kubeletapi.server.authz import Attributes, Authorizer, CachedAuthorizer, Decision, subresources_for_path, verb_for


@pytest.mark.parametrize(
    ("path", "subresources"),
    [
        pytest.param("/stats/summary", ("stats",), id="stats"),
        pytest.param("/stats", ("stats",), id="stats-root"),
        pytest.param("/statsx", ("proxy",), id="not-a-subpath"),
        pytest.param("/metrics", ("metrics",), id="metrics"),
        pytest.param("/metrics/cadvisor", ("metrics",), id="metrics-cadvisor"),
        pytest.param("/logs/syslog", ("log",), id="logs"),
        pytest.param("/checkpoint/ns/p/c", ("checkpoint",), id="checkpoint"),
        pytest.param("/pods", ("pods", "proxy"), id="pods"),
        pytest.param("/pods/", ("pods", "proxy"), id="pods-slash"),
        pytest.param("/runningpods/", ("pods", "proxy"), id="runningpods"),
        pytest.param("/healthz/ping", ("healthz", "proxy"), id="healthz"),
        pytest.param("/configz", ("configz", "proxy"), id="configz"),
        pytest.param("/containerLogs/ns/p/c", ("proxy",), id="containerlogs-is-proxy"),
        pytest.param("/exec/ns/p/c", ("proxy",), id="exec"),
        pytest.param("/", ("proxy",), id="root"),
    ],
)
def test_subresources(path: str, subresources: tuple[str, ...]) -> None:
    assert subresources_for_path(path) == subresources


@pytest.mark.parametrize(
    ("method", "verb"),
    [("GET", "get"), ("POST", "create"), ("PUT", "update"), ("PATCH", "patch"), ("DELETE", "delete"),
     ("HEAD", ""), ("OPTIONS", "")],
)
def test_verbs(method: str, verb: str) -> None:
    assert verb_for(method) == verb


def test_sar_spec_omits_empty_fields() -> None:
    spec = Attributes(UserInfo("alice", "", ("g",)), "", "metrics", "node-a").spec()
    assert spec == {
        "resourceAttributes": {"version": "v1", "resource": "nodes", "subresource": "metrics", "name": "node-a"},
        "user": "alice",
        "groups": ["g"],
    }


class Counting(Authorizer):
    """A fake authorizer (unit test of the cache only)."""

    def __init__(self) -> None:
        self.calls = 0

    async def authorize(self, attrs: Attributes) -> Decision:
        self.calls += 1
        return Decision.ALLOW if attrs.subresource == "metrics" else Decision.NO_OPINION


def test_decision_cache_ttls() -> None:
    clock = FakeClock()
    inner = Counting()
    cache = CachedAuthorizer(inner, allow_ttl=300, deny_ttl=30, clock=clock)
    allow = Attributes(UserInfo("u"), "get", "metrics", "n")
    deny = Attributes(UserInfo("u"), "get", "proxy", "n")

    def ask(a: Attributes) -> Decision:
        return asyncio.run(cache.authorize(a))

    assert ask(allow) is Decision.ALLOW and ask(deny) is Decision.NO_OPINION
    assert ask(allow) is Decision.ALLOW and ask(deny) is Decision.NO_OPINION
    assert inner.calls == 2
    clock.advance(31)
    ask(allow)
    ask(deny)
    assert inner.calls == 3  # only the denial expired
    clock.advance(300)
    ask(allow)
    assert inner.calls == 4
