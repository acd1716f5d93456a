"""The watch-based object cache: one LIST+WATCH per referenced object, reads from the cache,
pods told of changes, the kubelet's messages for missing and unreadable objects."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.errors import Forbidden, Gone, NotFound, Unavailable
from kubeletapi.pods.objectcache import ObjectCache
from tests.pods.apifakes import FakeObjects, settle

CMS = "/api/v1/namespaces/ns/configmaps"


class Harness:
    def __init__(self) -> None:
        self.api = FakeObjects()
        self.clock = FakeClock(start=1_700_000_000.0)
        self.changes: list[set[str]] = []
        self.cache = ObjectCache(self.api, "configmaps", "configmap", self.clock, self.changes.append,
                                 rand=lambda: 0.0)


def run(test: object) -> None:
    async def go() -> None:
        h = Harness()
        try:
            await test(h)  # type: ignore[operator]
        finally:
            await h.cache.stop()

    asyncio.run(go())


def test_one_list_and_watch_per_object_whatever_the_pods() -> None:
    async def test(h: Harness) -> None:
        h.api.put(CMS, "cfg", data={"k": "v"})
        h.cache.set_references("pod-a", "ns", ["cfg", "kube-root-ca.crt"])
        h.cache.set_references("pod-b", "ns", ["cfg"])
        assert (await h.cache.get("ns", "cfg"))["data"] == {"k": "v"}
        await settle()
        assert sorted(h.api.calls) == [("LIST", f"{CMS}/cfg"), ("LIST", f"{CMS}/kube-root-ca.crt"),
                                       ("WATCH", f"{CMS}/cfg"), ("WATCH", f"{CMS}/kube-root-ca.crt")]
        await h.cache.get("ns", "cfg")  # from the cache
        assert len(h.api.calls) == 4
        assert h.changes == []  # a first list nobody waited for tells no pod

    run(test)


def test_a_change_reaches_the_cache_and_pokes_the_pods_using_it() -> None:
    async def test(h: Harness) -> None:
        h.api.put(CMS, "cfg", data={"k": "1"})
        h.cache.set_references("pod-a", "ns", ["cfg"])
        h.cache.set_references("pod-b", "ns", ["cfg", "other"])
        h.cache.set_references("pod-c", "ns", ["other"])
        await h.cache.get("ns", "cfg")
        await settle()
        h.api.put(CMS, "cfg", data={"k": "2"})
        await settle()
        assert h.changes == [{"pod-a", "pod-b"}]
        assert (await h.cache.get("ns", "cfg"))["data"] == {"k": "2"}
        h.api.delete(CMS, "cfg")
        await settle()
        with pytest.raises(NotFound, match=r'^configmap "cfg" not found$'):
            await h.cache.get("ns", "cfg")
        assert h.changes[-1] == {"pod-a", "pod-b"}

    run(test)


def test_a_missing_object_is_not_found_until_it_is_created() -> None:
    async def test(h: Harness) -> None:
        h.cache.set_references("pod-a", "ns", ["later"])
        with pytest.raises(NotFound, match=r'^configmap "later" not found$'):
            await h.cache.get("ns", "later")
        await settle()
        h.api.put(CMS, "later", data={"x": "y"})
        await settle()
        assert h.changes == [{"pod-a"}]
        assert (await h.cache.get("ns", "later"))["data"] == {"x": "y"}

    run(test)


def test_references_dropped_stop_the_watch() -> None:
    async def test(h: Harness) -> None:
        h.cache.set_references("pod-a", "ns", ["a", "b"])
        h.cache.set_references("pod-b", "ns", ["b"])
        await settle()
        h.cache.set_references("pod-a", "ns", ["b"])  # the pod's new version no longer uses a
        assert h.cache.watched() == [("ns", "b")]
        h.cache.forget("pod-a")
        assert h.cache.watched() == [("ns", "b")]
        h.cache.forget("pod-b")
        assert h.cache.watched() == []
        with pytest.raises(Unavailable, match='not registered'):
            await h.cache.get("ns", "b")

    run(test)


def test_forbidden_is_logged_with_the_object_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    async def test(h: Harness) -> None:
        refused = Forbidden('GET /api/v1/namespaces/ns/configmaps: 403 configmaps "cfg" is forbidden: '
                            "no relationship found between node 'n1' and this object")
        h.api.fail = [refused, refused]
        h.api.put(CMS, "cfg", data={"k": "v"})
        h.cache.set_references("pod-a", "ns", ["cfg"])
        reading = asyncio.create_task(h.cache.get("ns", "cfg"))
        await settle()
        while h.clock.sleepers < 2:  # the reflector's back-off and the reader's wait
            await asyncio.sleep(0.005)
        h.clock.advance(1.0)  # the reader gives up after a second; the reflector retries at 0.8 s, fails
        with pytest.raises(Unavailable) as caught:
            await reading
        assert str(caught.value).startswith("failed to sync configmap cache: timed out waiting for the condition (")
        assert "is forbidden" in str(caught.value)
        while h.clock.sleepers < 1:
            await asyncio.sleep(0.005)
        h.clock.advance(1.6)  # the doubled back-off: the third list succeeds
        for _ in range(100):
            if h.changes:
                break
            await asyncio.sleep(0.005)
        assert h.changes == [{"pod-a"}]  # the pod that could not read it is told
        assert (await h.cache.get("ns", "cfg"))["data"] == {"k": "v"}

    with caplog.at_level(logging.WARNING, logger="kubeletapi.pods.objectcache"):
        run(test)
    refusals = [r.getMessage() for r in caplog.records if "refuses" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].startswith("configmap ns/cfg: the API server refuses this node")


def test_an_immutable_object_is_not_watched() -> None:
    async def test(h: Harness) -> None:
        h.api.put(CMS, "frozen", data={"k": "v"}, immutable=True)
        h.cache.set_references("pod-a", "ns", ["frozen"])
        assert (await h.cache.get("ns", "frozen"))["immutable"] is True
        await settle()
        assert h.api.count("WATCH") == 0

    run(test)


def test_gone_and_ended_watches_resume() -> None:
    async def test(h: Harness) -> None:
        h.api.put(CMS, "cfg", data={"k": "1"})
        h.cache.set_references("pod-a", "ns", ["cfg"])
        await h.cache.get("ns", "cfg")
        await settle()
        h.api.end_watch(CMS, "cfg")  # the server's timeout: watch again, no list
        await settle()
        assert (h.api.count("LIST"), h.api.count("WATCH")) == (1, 2)
        h.api.end_watch(CMS, "cfg", Gone("too old"))  # list afresh at once
        await settle()
        assert (h.api.count("LIST"), h.api.count("WATCH")) == (2, 3)
        assert h.changes == []  # the same object listed again is no change

    run(test)
