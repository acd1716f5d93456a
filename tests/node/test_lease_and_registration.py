"""The lease renewer's and the registration's request sequences against a scripted API (the
real API server's answers are exercised in tests/cluster)."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

from kubeletapi.apiclient.ratelimit import TokenBucket
from kubeletapi.clock import FakeClock
from kubeletapi.errors import Conflict, NotFound, Unavailable
from kubeletapi.node.lease import LeaseRenewer
from kubeletapi.node.registration import CMAD_ANNOTATION, register
from tests.node.test_status import facts

Json = dict[str, Any]


@dataclass
class ScriptedApi:
    """Objects by path; `fail` maps (verb, path) to the errors to raise first, in order."""

    objects: dict[str, Json] = field(default_factory=dict)
    fail: dict[tuple[str, str], list[Exception]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    version: int = 0

    def _step(self, verb: str, path: str) -> None:
        self.calls.append((verb, path))
        pending = self.fail.get((verb, path))
        if pending:
            raise pending.pop(0)

    def _stored(self, path: str, body: Json) -> Json:
        self.version += 1
        body = copy.deepcopy(body)
        body.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        body["metadata"].setdefault("uid", "uid-1")
        self.objects[path] = body
        return copy.deepcopy(body)

    async def get(self, path: str) -> Json:
        self._step("GET", path)
        if path not in self.objects:
            raise NotFound(path)
        return copy.deepcopy(self.objects[path])

    async def create(self, path: str, body: Json) -> Json:
        self._step("POST", path)
        name = f"{path}/{body['metadata']['name']}"
        if name in self.objects:
            raise Conflict(f"{name} already exists")
        return self._stored(name, body)

    async def replace(self, path: str, body: Json) -> Json:
        self._step("PUT", path)
        current = self.objects.get(path)
        if current is None:
            raise NotFound(path)
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise Conflict("the object has been modified")
        return self._stored(path, body)

    async def patch(self, path: str, body: Json) -> Json:
        self._step("PATCH", path)
        target = self.objects[path.removesuffix("/status")]
        for key, value in (body.get("metadata") or {}).items():
            target["metadata"].setdefault(key, {}).update(value)
        return copy.deepcopy(target)


LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


def test_lease_created_then_updated_from_the_last_write_without_gets() -> None:
    api = ScriptedApi()
    clock = FakeClock(start=1_700_000_000.0)
    renewer = LeaseRenewer(api, "n1", "node-uid", 40, clock)

    async def go() -> None:
        for _ in range(3):
            await renewer.renew()
            clock.advance(10)

    asyncio.run(go())
    path = f"{LEASES}/n1"
    assert api.calls == [("GET", path), ("POST", LEASES), ("PUT", path), ("PUT", path)]
    lease = api.objects[path]
    assert lease["spec"]["holderIdentity"] == "n1" and lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["spec"]["renewTime"] == "2023-11-14T22:13:40.000000Z"
    assert lease["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "n1",
                                                     "uid": "node-uid"}]
    assert renewer.interval_s == 10


def test_lease_conflict_falls_back_to_get() -> None:
    api = ScriptedApi()
    renewer = LeaseRenewer(api, "n1", "u", 40, FakeClock())
    path = f"{LEASES}/n1"

    async def go() -> None:
        await renewer.renew()
        api.objects[path]["metadata"]["resourceVersion"] = "99"  # someone else wrote it
        await renewer.renew()

    asyncio.run(go())
    assert api.calls[-3:] == [("PUT", path), ("GET", path), ("PUT", path)]


def test_registration_retries_with_backoff_then_reconciles_an_existing_node() -> None:
    api = ScriptedApi()
    api.objects["/api/v1/nodes/n1"] = {"metadata": {"name": "n1", "resourceVersion": "1", "uid": "old",
                                                    "labels": {"kubernetes.io/hostname": "stale"}}}
    api.fail[("POST", "/api/v1/nodes")] = [Unavailable("connection refused"), Unavailable("connection refused")]
    clock = FakeClock()
    f = facts()

    async def go() -> tuple[Json, bool]:
        task = asyncio.create_task(register(api, f, lambda: {"conditions": []}, clock))
        for _ in range(50):
            await asyncio.sleep(0.01)
            clock.advance(0.1)
        return await task

    node, created = asyncio.run(go())
    assert not created and node["metadata"]["uid"] == "old"
    assert [c[0] for c in api.calls] == ["POST", "POST", "POST", "GET", "PATCH"]
    labels = api.objects["/api/v1/nodes/n1"]["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "n1" and labels["kubernetes.io/os"] == "linux"
    assert api.objects["/api/v1/nodes/n1"]["metadata"]["annotations"] == {CMAD_ANNOTATION: "true"}


def test_token_bucket_waits_for_tokens_beyond_the_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=5, burst=2, clock=clock)
    began = clock.monotonic()

    async def go() -> None:
        await bucket.wait()
        await bucket.wait()  # the burst
        waiting = asyncio.create_task(bucket.wait())
        await asyncio.sleep(0.05)
        assert not waiting.done()
        clock.advance(0.2)  # one token at 5 per second
        await asyncio.wait_for(waiting, 1)

    asyncio.run(go())
    assert abs(clock.monotonic() - began - 0.2) < 1e-9
