"""The event recorder: the Event it builds (references, names, source), its bounded queue, and
how it sends (retries of an unreachable API server, a refusal is final)."""

from __future__ import annotations

import asyncio
import random

import pytest

from kubeletapi.api.core_v1 import Container, EphemeralContainer, ObjectMeta, Pod, PodSpec
from kubeletapi.errors import Conflict, Forbidden, InvalidInput, Unavailable
from kubeletapi.events.model import container_ref, event_name, field_path, node_ref
from kubeletapi.events.recorder import EventRecorder, NullRecorder
from tests.events.fakes import FakeEventsApi, InstantClock

P = pytest.param


def make_pod() -> Pod:
    return Pod(metadata=ObjectMeta(name="web", namespace="ns", uid="uid-1", resource_version="42"),
               spec=PodSpec(init_containers=[Container(name="setup")], containers=[Container(name="main"),
                                                                                    Container(name="")],
                            ephemeral_containers=[EphemeralContainer(name="debug")]))


def test_a_container_event_as_the_kubelet_posts_it() -> None:
    async def go() -> None:
        clock = InstantClock()
        api = FakeEventsApi()
        recorder = EventRecorder(api, clock, "node-1")
        pod = make_pod()
        recorder.container_event(pod, pod.spec.containers[0], "Normal", "Started", "Started container main")
        await recorder.drain()
        ((verb, path, body),) = api.requests
        assert (verb, path) == ("POST", "/api/v1/namespaces/ns/events")
        assert body == {
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": f"web.{int(clock.now() * 1e9):x}", "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "web", "uid": "uid-1", "apiVersion": "v1",
                               "resourceVersion": "42", "fieldPath": "spec.containers{main}"},
            "reason": "Started", "message": "Started container main",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2025-06-15T15:06:40Z", "lastTimestamp": "2025-06-15T15:06:40Z", "count": 1,
            "type": "Normal", "eventTime": None, "reportingComponent": "kubelet", "reportingInstance": "node-1",
        }

    asyncio.run(go())


def test_a_node_event_is_in_the_default_namespace_with_the_name_as_uid() -> None:
    async def go() -> None:
        api = FakeEventsApi()
        recorder = EventRecorder(api, InstantClock(), "node-1")
        recorder.node_event("Normal", "Starting", "Starting kubelet.")
        await recorder.drain()
        (event,) = api.events()
        assert event["metadata"]["namespace"] == "default" and event["metadata"]["name"].startswith("node-1.")
        assert event["involvedObject"] == {"kind": "Node", "name": "node-1", "uid": "node-1"}

    asyncio.run(go())


@pytest.mark.parametrize(("name", "path"), [
    P("main", "spec.containers{main}", id="app"),
    P("setup", "spec.initContainers{setup}", id="init"),
    P("debug", "spec.ephemeralContainers{debug}", id="ephemeral"),
    P("", "spec.containers[1]", id="nameless"),
    P("sidecar", "implicitly required container sidecar", id="not-in-the-spec"),
])
def test_field_paths(name: str, path: str) -> None:
    assert field_path(make_pod(), name) == path


def test_names_are_unique_and_valid() -> None:
    async def go() -> None:
        api = FakeEventsApi()
        recorder = EventRecorder(api, InstantClock(), "node-1")  # its time never moves between events
        for reason in ("Pulled", "Created", "Started"):
            recorder.pod_event(make_pod(), "Normal", reason, reason)
        await recorder.drain()
        assert len({e["metadata"]["name"] for e in api.events()}) == 3
        assert api.verbs() == ["POST"] * 3

    asyncio.run(go())
    assert event_name("web", 0x1a) == "web.1a"
    uuid_name = event_name("Not_A_Name", 0x1a)  # not a DNS subdomain: a UUID instead
    assert len(uuid_name) == 36 and uuid_name.count("-") == 4


def test_an_unknown_type_is_not_recorded() -> None:
    async def go() -> None:
        api = FakeEventsApi()
        recorder = EventRecorder(api, InstantClock(), "node-1")
        recorder.pod_event(make_pod(), "Error", "Oops", "no such type")
        await recorder.drain()
        assert api.requests == []

    asyncio.run(go())


def test_an_unreachable_api_server_is_tried_12_times_then_the_event_is_dropped() -> None:
    async def go() -> None:
        clock = InstantClock()
        api = FakeEventsApi(failures=[Unavailable("connection refused")] * 12)
        recorder = EventRecorder(api, clock, "node-1", rng=random.Random(7))
        recorder.pod_event(make_pod(), "Normal", "Pulled", "x")
        recorder.pod_event(make_pod(), "Normal", "Created", "y")
        await recorder.drain()
        first = random.Random(7).random() * 10
        assert clock.slept == [pytest.approx(first)] + [10.0] * 10
        assert recorder.counts.dropped_retries == 1
        # the next event finds the server back
        assert [e["reason"] for e in api.events()] == ["Created"] and recorder.counts.sent == 1

    asyncio.run(go())


def test_a_send_that_succeeds_on_a_later_try() -> None:
    async def go() -> None:
        clock = InstantClock()
        api = FakeEventsApi(failures=[Unavailable("503"), Unavailable("503")])
        recorder = EventRecorder(api, clock, "node-1", rng=random.Random(1))
        recorder.pod_event(make_pod(), "Normal", "Pulled", "x")
        await recorder.drain()
        assert len(clock.slept) == 2 and api.verbs() == ["POST"] * 3 and len(api.events()) == 1

    asyncio.run(go())


@pytest.mark.parametrize("error", [
    P(InvalidInput("422 Event is invalid"), id="invalid"),
    P(Conflict("409 already exists"), id="already-exists"),
    P(Forbidden("403 unable to create new content in namespace ns because it is being terminated"),
      id="namespace-terminating"),
])
def test_a_refusal_is_final(error: Exception) -> None:
    async def go() -> None:
        clock = InstantClock()
        api = FakeEventsApi(failures=[error])  # type: ignore[list-item]
        recorder = EventRecorder(api, clock, "node-1")
        recorder.pod_event(make_pod(), "Normal", "Pulled", "x")
        await recorder.drain()
        assert clock.slept == [] and api.verbs() == ["POST"] and recorder.counts.dropped_rejected == 1

    asyncio.run(go())


def test_a_full_queue_drops_and_counts() -> None:
    async def go() -> None:
        api = FakeEventsApi()
        recorder = EventRecorder(api, InstantClock(), "node-1", queue_size=3)
        for i in range(5):
            recorder.pod_event(make_pod(), "Normal", "Pulled", f"m{i}")
        assert recorder.counts.queued == 3 and recorder.counts.dropped_queue_full == 2
        await recorder.drain()
        assert [e["message"] for e in api.events()] == ["m0", "m1", "m2"]
        assert recorder.counts.queued == 0

    asyncio.run(go())


def test_recording_never_waits_for_the_sender() -> None:
    async def go() -> None:
        gate = asyncio.Event()

        class SlowApi(FakeEventsApi):
            async def create(self, path: str, body: dict[str, object]) -> dict[str, object]:
                await gate.wait()
                return await super().create(path, body)

        api = SlowApi()
        recorder = EventRecorder(api, InstantClock(), "node-1")
        sender = asyncio.create_task(recorder.run())
        recorder.pod_event(make_pod(), "Normal", "Pulled", "first")
        await asyncio.sleep(0.01)  # the sender is stuck in the first POST
        recorder.pod_event(make_pod(), "Normal", "Created", "second")  # returns at once
        assert recorder.counts.queued == 1
        gate.set()
        for _ in range(100):
            if len(api.events()) == 2:
                break
            await asyncio.sleep(0.01)
        sender.cancel()
        assert [e["message"] for e in api.events()] == ["first", "second"]

    asyncio.run(go())


def test_references() -> None:
    pod = make_pod()
    assert container_ref(pod, pod.spec.init_containers[0]).field_path == "spec.initContainers{setup}"
    assert node_ref("n").to_wire() == {"kind": "Node", "name": "n", "uid": "n"}
    NullRecorder().container_event(pod, pod.spec.containers[0], "Normal", "Started", "x")  # takes it, does nothing
