"""The EventCorrelator's three steps (client-go events_cache.go) seen through the recorder and a
fake events API: counting repeats with a PATCH, aggregating similar events, the spam filter."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeletapi.api.core_v1 import Container, ObjectMeta, Pod, PodSpec
from kubeletapi.events.correlator import EventCorrelator
from kubeletapi.events.recorder import EventRecorder
from tests.events.fakes import FakeEventsApi, InstantClock

Json = dict[str, Any]


def make_pod(name: str = "web", uid: str = "uid-1") -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="ns", uid=uid, resource_version="42"),
               spec=PodSpec(containers=[Container(name="main", image="busybox:1.36")]))


def setup() -> tuple[EventRecorder, FakeEventsApi, InstantClock]:
    clock = InstantClock()
    api = FakeEventsApi()
    return EventRecorder(api, clock, "node-1"), api, clock


def by_message(api: FakeEventsApi) -> dict[str, Json]:
    return {e["message"]: e for e in api.events()}


def test_a_repeat_is_counted_with_a_patch_of_count_time_and_message() -> None:
    async def go() -> None:
        recorder, api, clock = setup()
        pod = make_pod()
        recorder.container_event(pod, pod.spec.containers[0], "Warning", "BackOff", "Back-off restarting")
        await recorder.drain()
        (first,) = api.events()
        clock.advance(30)
        recorder.container_event(pod, pod.spec.containers[0], "Warning", "BackOff", "Back-off restarting")
        recorder.container_event(pod, pod.spec.containers[0], "Warning", "BackOff", "Back-off restarting")
        await recorder.drain()
        assert api.verbs() == ["POST", "PATCH", "PATCH"]
        name = first["metadata"]["name"]
        assert api.requests[1][1] == f"/api/v1/namespaces/ns/events/{name}"
        assert api.requests[1][2] == {"count": 2, "lastTimestamp": "2025-06-15T15:07:10Z",
                                      "message": "Back-off restarting"}
        (event,) = api.events()
        assert event["count"] == 3 and event["firstTimestamp"] == first["firstTimestamp"] == "2025-06-15T15:06:40Z"
        assert recorder.counts.sent == 3

    asyncio.run(go())


def test_a_patch_of_an_expired_event_creates_it_again() -> None:
    async def go() -> None:
        recorder, api, _ = setup()
        recorder.pod_event(make_pod(), "Warning", "FailedMount", "cannot mount")
        await recorder.drain()
        api.stored.clear()  # the API server's event TTL ran out
        recorder.pod_event(make_pod(), "Warning", "FailedMount", "cannot mount")
        await recorder.drain()
        assert api.verbs() == ["POST", "PATCH", "POST"]
        (event,) = api.events()
        assert event["count"] == 2 and "resourceVersion" not in api.requests[2][2]["metadata"]

    asyncio.run(go())


def test_ten_similar_messages_within_ten_minutes_are_combined() -> None:
    async def go() -> None:
        recorder, api, clock = setup()
        pod = make_pod()
        for i in range(9):
            recorder.pod_event(pod, "Warning", "Unhealthy", f"probe failed: {i}")
            clock.advance(10)
        await recorder.drain()
        assert len(api.events()) == 9
        recorder.pod_event(pod, "Warning", "Unhealthy", "probe failed: 9")
        clock.advance(10)
        recorder.pod_event(pod, "Warning", "Unhealthy", "probe failed: 10")
        await recorder.drain()
        events = by_message(api)
        assert len(events) == 10
        combined = events["(combined from similar events): probe failed: 10"]
        assert combined["count"] == 2 and combined["reason"] == "Unhealthy"
        assert combined["metadata"]["name"].startswith("web.")
        assert combined["source"] == {"component": "kubelet", "host": "node-1"}
        # the aggregate carries no reporting fields (EventAggregate builds it without them)
        assert combined["reportingComponent"] == "" and combined["reportingInstance"] == ""
        assert api.verbs()[-2:] == ["POST", "PATCH"]

    asyncio.run(go())


def test_similar_messages_spread_over_more_than_ten_minutes_are_not_combined() -> None:
    async def go() -> None:
        recorder, api, clock = setup()
        for i in range(12):
            recorder.pod_event(make_pod(), "Normal", "Pulled", f"pulled {i}")
            await recorder.drain()  # correlated when sent, on the clock of then
            clock.advance(601)  # the next one finds the group older than the interval
        assert sorted(by_message(api)) == sorted(f"pulled {i}" for i in range(12))

    asyncio.run(go())


def test_the_spam_filter_lets_25_through_per_object_and_type_then_one_per_5_minutes() -> None:
    async def go() -> None:
        recorder, api, clock = setup()
        pod = make_pod()
        reasons = ["Pulled", "Created", "Started"]
        for i in range(30):
            recorder.container_event(pod, pod.spec.containers[0], "Normal", reasons[i % 3], f"m{i}")
        recorder.pod_event(pod, "Warning", "FailedMount", "w")  # another type: its own bucket
        recorder.pod_event(make_pod("other", "uid-2"), "Normal", "Pulled", "o")  # another object
        await recorder.drain()
        # the first 25 hold at most 9 distinct messages per reason: none is aggregated
        assert len([e for e in api.events() if e["involvedObject"]["name"] == "web" and e["type"] == "Normal"]) == 25
        assert {e["message"] for e in api.events()} >= {"w", "o"}
        assert recorder.counts.filtered == 5
        clock.advance(299)
        recorder.pod_event(pod, "Normal", "Killing", "k1")
        await recorder.drain()
        assert recorder.counts.filtered == 6
        clock.advance(1)
        recorder.pod_event(pod, "Normal", "Killing", "k2")
        recorder.pod_event(pod, "Normal", "Killing", "k3")
        await recorder.drain()
        assert "k2" in by_message(api) and "k3" not in by_message(api)

    asyncio.run(go())


def test_a_filtered_repeat_still_counts() -> None:
    async def go() -> None:
        clock = InstantClock()
        api = FakeEventsApi()
        recorder = EventRecorder(api, clock, "node-1", correlator=EventCorrelator(clock, burst=1, qps=1 / 300))
        pod = make_pod()
        for _ in range(3):
            recorder.pod_event(pod, "Warning", "BackOff", "again")
        await recorder.drain()
        assert api.events()[0]["count"] == 1 and recorder.counts.filtered == 2
        clock.advance(300)
        recorder.pod_event(pod, "Warning", "BackOff", "again")
        await recorder.drain()
        assert api.events()[0]["count"] == 4

    asyncio.run(go())


@pytest.mark.parametrize(("reason", "lru"), [pytest.param("BackOff", 2, id="least-recently-used-key-goes")])
def test_the_caches_keep_their_most_recent_keys(reason: str, lru: int) -> None:
    async def go() -> None:
        clock = InstantClock()
        api = FakeEventsApi()
        recorder = EventRecorder(api, clock, "node-1", correlator=EventCorrelator(clock, lru_size=lru))
        pods = [make_pod(f"p{i}", f"u{i}") for i in range(3)]
        for pod in (*pods, pods[0]):  # p0's count was forgotten: it is a new event again
            recorder.pod_event(pod, "Warning", reason, "x")
        await recorder.drain()
        assert api.verbs() == ["POST"] * 4
        assert len([e for e in api.events() if e["involvedObject"]["name"] == "p0"]) == 2

    asyncio.run(go())
