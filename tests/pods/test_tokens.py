"""The token manager: the TokenRequest it sends, its cache, when it refreshes (80 % of the TTL or
24 h, less the jitter), what a failed refresh does, and the refresh pokes, on an injected clock."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.errors import Forbidden, Unavailable
from kubeletapi.pods.tokens import Token, TokenManager, TokenSpec, requires_refresh

P = pytest.param
START = 1_700_000_000.0
SPEC = TokenSpec("ns", "default", (), 3607, "web", "uid-1")


class FakeTokenApi:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.fail: list[Exception] = []

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append((path, body))
        if self.fail:
            raise self.fail.pop(0)
        ttl = body["spec"]["expirationSeconds"]
        expires = dt.datetime.fromtimestamp(self.clock.now() + ttl, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {**body, "status": {"token": f"token-{len(self.requests)}", "expirationTimestamp": expires}}


def make(rand: float = 0.0) -> tuple[FakeClock, FakeTokenApi, TokenManager, list[str]]:
    clock = FakeClock(start=START)
    api = FakeTokenApi(clock)
    due: list[str] = []
    return clock, api, TokenManager(api, clock, due.append, rand=lambda: rand), due


def test_the_token_request_is_bound_to_the_pod() -> None:
    async def go() -> None:
        _, api, manager, _ = make()
        spec = TokenSpec("ns", "builder", ("vault",), 600, "web", "uid-1")
        assert await manager.token(spec) == "token-1"
        await manager.stop()
        ((path, body),) = api.requests
        assert path == "/api/v1/namespaces/ns/serviceaccounts/builder/token"
        assert body == {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
            "audiences": ["vault"], "expirationSeconds": 600,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "uid-1"}}}
        assert SPEC.request()["spec"]["audiences"] is None  # none: the API server's own audiences

    asyncio.run(go())


@pytest.mark.parametrize(("age", "ttl", "jitter", "refresh"), [
    P(0, 3607, 0, False, id="fresh"),
    P(2885, 3607, 0, False, id="just-before-80-percent"),  # 3607 * 20 // 100 = 721: refresh after 2886 s
    P(2887, 3607, 0, True, id="past-80-percent"),
    P(2880, 3607, 9, True, id="jitter-brings-it-forward"),
    P(86_399, 365 * 86_400, 0, False, id="long-lived-before-24h"),
    P(86_401, 365 * 86_400, 0, True, id="long-lived-after-24h"),
])
def test_requires_refresh(age: int, ttl: int, jitter: int, refresh: bool) -> None:
    token = Token("t", START + ttl, ttl, "uid-1")
    assert requires_refresh(token, START + age, jitter) is refresh


def test_cached_until_80_percent_then_refreshed_with_a_poke() -> None:
    async def go() -> None:
        clock, api, manager, due = make()
        assert await manager.token(SPEC) == "token-1"
        clock.advance(2000)
        assert await manager.token(SPEC) == "token-1"
        assert len(api.requests) == 1
        while clock.sleepers < 1:
            await asyncio.sleep(0.005)
        clock.advance(2886 - 2000 + 1)  # the refresh point, and the poke's margin
        for _ in range(100):
            if due:
                break
            await asyncio.sleep(0.005)
        assert due == ["uid-1"]
        assert await manager.token(SPEC) == "token-2"
        await manager.stop()

    asyncio.run(go())


def test_a_failed_refresh_keeps_the_valid_token_then_fails_once_expired() -> None:
    async def go() -> None:
        clock, api, manager, _ = make()
        await manager.token(SPEC)
        clock.advance(3000)
        api.fail = [Unavailable("apiserver down")]
        assert await manager.token(SPEC) == "token-1"  # logged, still valid
        clock.advance(608)  # now past its expiry: dropped, and the fetch fails
        api.fail = [Unavailable("apiserver down")]
        with pytest.raises(Unavailable, match=r"^failed to fetch token: apiserver down$"):
            await manager.token(SPEC)
        await manager.stop()

    asyncio.run(go())


def test_a_first_failure_is_the_volumes_error() -> None:
    async def go() -> None:
        _, api, manager, _ = make()
        api.fail = [Forbidden("POST .../token: 403 pod not bound to this node")]
        with pytest.raises(Unavailable, match=r"^failed to fetch token: POST .../token: 403"):
            await manager.token(SPEC)

    asyncio.run(go())


def test_forget_drops_the_pods_tokens_and_timers() -> None:
    async def go() -> None:
        _, _, manager, due = make()
        await manager.token(SPEC)
        other = TokenSpec("ns", "default", (), 3607, "db", "uid-2")
        await manager.token(other)
        manager.forget("uid-1")
        assert await manager.token(other) == "token-2"  # still cached
        assert await manager.token(SPEC) == "token-3"  # asked again
        manager.forget("uid-1")
        manager.forget("uid-2")
        await manager.stop()
        assert due == []

    asyncio.run(go())
