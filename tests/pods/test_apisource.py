"""The API server's pod source (pods/apisource.py) against a scripted list/watch: SET snapshots,
mirror pods aside, resumption after a closed watch or 410 Gone, and an outage that is no news."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from kubeletapi.clock import FakeClock
from kubeletapi.errors import Gone, KubeletError, Unavailable
from kubeletapi.pods.apisource import ApiServerSource
from kubeletapi.pods.sources import PodUpdate

Json = dict[str, Any]
Script = list[Json | KubeletError]


def api_pod(name: str, uid: str, version: str = "1", **meta: Any) -> Json:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": version, **meta},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "9"]}]}}


class ScriptedApi:
    """Each list() answers the next list result; each watch() plays the next script of events (a
    KubeletError raises there), then ends as the server ends a watch."""

    def __init__(self, lists: list[Json | KubeletError], watches: list[Script]) -> None:
        self.lists = lists
        self.watches = watches
        self.list_calls: list[Mapping[str, str] | None] = []
        self.watch_versions: list[str] = []

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> Json:
        self.list_calls.append(params)
        answer = self.lists.pop(0) if self.lists else Unavailable("no more lists")
        if isinstance(answer, KubeletError):
            raise answer
        return answer

    async def watch(self, path: str, resource_version: str, params: Mapping[str, str] | None = None,
                    timeout_s: int = 300) -> AsyncIterator[Json]:
        self.watch_versions.append(resource_version)
        script = self.watches.pop(0) if self.watches else []
        for item in script:
            if isinstance(item, KubeletError):
                raise item
            yield item
        if not self.watches and not self.lists:
            await asyncio.sleep(3600)  # the end of the script: a quiet watch


def listed(version: str, *pods: Json) -> Json:
    return {"metadata": {"resourceVersion": version}, "items": list(pods)}


def run(api: ScriptedApi, clock: FakeClock | None = None, until: int = 1, advance: float = 0) -> list[PodUpdate]:
    updates: list[PodUpdate] = []

    async def go() -> None:
        fake = clock or FakeClock()

        async def ready() -> None:
            return None

        source = ApiServerSource(api, "n1", ready, fake)
        task = asyncio.create_task(source.run(updates.append))
        try:
            for _ in range(2000):
                if len(updates) >= until:
                    break
                if advance and fake.sleepers:
                    fake.advance(advance)
                await asyncio.sleep(0.002)
        finally:
            task.cancel()

    asyncio.run(go())
    return updates


def names(update: PodUpdate) -> list[str]:
    return sorted(r.origin for r in update.results)


def test_list_then_watch_emits_whole_sets() -> None:
    api = ScriptedApi([listed("10", api_pod("a", "u1"))], [[
        {"type": "ADDED", "object": api_pod("b", "u2", "11")},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
        {"type": "MODIFIED", "object": api_pod("a", "u1", "13", labels={"x": "y"})},
        {"type": "DELETED", "object": api_pod("b", "u2", "14")},
    ]])
    updates = run(api, until=4)
    assert [names(u) for u in updates] == [["ns/a"], ["ns/a", "ns/b"], ["ns/a", "ns/b"], ["ns/a"]]
    assert api.list_calls[0] == {"fieldSelector": "spec.nodeName=n1"}
    assert api.watch_versions[0] == "10"
    pod = updates[2].results[0].pod
    assert pod is not None and pod.metadata.labels == {"x": "y"}
    assert pod.metadata.annotations["kubernetes.io/config.source"] == "api"
    seen = pod.metadata.annotations["kubernetes.io/config.seen"]
    final = updates[3].results[0].pod
    assert final is not None and final.metadata.annotations["kubernetes.io/config.seen"] == seen  # first sighting


def test_a_closed_watch_resumes_from_the_last_version_and_gone_lists_afresh() -> None:
    api = ScriptedApi([listed("10", api_pod("a", "u1")), listed("30", api_pod("c", "u3"))], [
        [{"type": "ADDED", "object": api_pod("b", "u2", "11")}],  # the server ends the watch
        [Gone("too old resource version: 11 (25)")],
    ])
    updates = run(api, until=3)
    assert api.watch_versions[:2] == ["10", "11"]
    assert len(api.list_calls) == 2
    assert names(updates[-1]) == ["ns/c"]  # the fresh list is the whole truth


def test_an_outage_is_no_news_and_is_retried_with_backoff() -> None:
    clock = FakeClock()
    api = ScriptedApi([Unavailable("connection refused"), Unavailable("connection refused"),
                       listed("5", api_pod("a", "u1"))], [])
    updates = run(api, clock, until=1, advance=1.0)
    assert len(api.list_calls) == 3
    assert [names(u) for u in updates] == [["ns/a"]]  # nothing emitted while it failed
    assert clock.monotonic() - 1000.0 >= 3.0  # slept 1 s, then 2 s


def test_mirror_pods_are_reported_aside_and_a_bad_pod_is_refused_with_its_reference() -> None:
    mirror = api_pod("static-n1", "m1", annotations={"kubernetes.io/config.mirror": "hash1"})
    bad = api_pod("bad", "u9")
    bad["spec"]["containers"][0]["frobnicate"] = True
    updates = run(ScriptedApi([listed("1", api_pod("a", "u1"), mirror, bad)], []))
    (update,) = updates
    assert [(m.name, m.uid, m.config_hash) for m in update.mirrors] == [("static-n1", "m1", "hash1")]
    refused = next(r for r in update.results if r.pod is None)
    assert refused.api is not None and (refused.api.name, refused.api.uid) == ("bad", "u9")
    assert "frobnicate" in refused.error
