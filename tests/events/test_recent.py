"""The agent's record of each pod's recent events (events/recent.py): repeats counted with their
first and last time, bounded per pod and in pods, a pod's record gone with the pod, and KeptEvents
keeping an event and passing it on to the recorder (or to none on a standalone node)."""

from __future__ import annotations

from kubeletapi.api.core_v1 import Container, ObjectMeta, Pod, PodSpec
from kubeletapi.clock import FakeClock
from kubeletapi.events.recent import KeptEvents, RecentEvents
from tests.events.test_recorder import make_pod

T0 = 1_800_000_000.0
BACK_OFF = "Back-off restarting failed container main in pod web_ns(uid-1)"


class Calls:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.calls.append(("pod", pod.metadata.uid, event_type, reason, message))

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None:
        self.calls.append(("container", container.name, event_type, reason, message))

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        self.calls.append(("node", event_type, reason, message))


def test_repeats_are_counted_with_first_and_last_time() -> None:
    clock = FakeClock(T0)
    recent = RecentEvents(clock)
    kept = KeptEvents(recent, None)  # a standalone node: kept, posted nowhere
    pod = make_pod()
    main = pod.spec.containers[0]
    kept.container_event(pod, main, "Normal", "Started", "Started container main")
    for _ in range(3):
        clock.advance(10)
        kept.container_event(pod, main, "Warning", "BackOff", BACK_OFF)
    clock.advance(5)
    kept.pod_event(pod, "Warning", "FailedMount", 'MountVolume.SetUp failed for volume "v" : gone')
    kept.node_event("Normal", "Starting", "Starting kubelet.")  # not a pod's: not kept
    views = [e.view() for e in recent.for_pod("uid-1")]
    assert [(v["reason"], v["count"], v["object"]) for v in views] == [
        ("FailedMount", 1, ""), ("BackOff", 3, "spec.containers{main}"), ("Started", 1, "spec.containers{main}")]
    assert views[1] == {"type": "Warning", "reason": "BackOff", "message": BACK_OFF, "object": "spec.containers{main}",
                        "count": 3, "firstTimestamp": "2027-01-15T08:00:10Z", "lastTimestamp": "2027-01-15T08:00:30Z"}
    assert recent.for_pod("other") == []


def test_events_are_passed_on_to_the_recorder() -> None:
    calls = Calls()
    kept = KeptEvents(RecentEvents(FakeClock(T0)), calls)
    pod = make_pod()
    kept.container_event(pod, pod.spec.containers[0], "Warning", "BackOff", BACK_OFF)
    kept.pod_event(pod, "Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
    kept.node_event("Normal", "Starting", "Starting kubelet.")
    assert calls.calls == [("container", "main", "Warning", "BackOff", BACK_OFF),
                           ("pod", "uid-1", "Normal", "SandboxChanged",
                            "Pod sandbox changed, it will be killed and re-created."),
                           ("node", "Normal", "Starting", "Starting kubelet.")]
    assert [e.reason for e in kept.recent.for_pod("uid-1")] == ["SandboxChanged", "BackOff"]


def test_bounded_per_pod_and_in_pods_and_forgotten_with_the_pod() -> None:
    recent = RecentEvents(FakeClock(T0), per_pod=3, pods=2)
    kept = KeptEvents(recent, None)
    pods = [Pod(metadata=ObjectMeta(name=f"p{i}", namespace="ns", uid=f"uid-{i}"), spec=PodSpec()) for i in range(3)]
    for n in range(5):
        kept.pod_event(pods[0], "Normal", "Reason", f"message {n}")
    assert [e.message for e in recent.for_pod("uid-0")] == ["message 4", "message 3", "message 2"]
    kept.pod_event(pods[1], "Normal", "Reason", "one")
    kept.pod_event(pods[2], "Normal", "Reason", "two")  # a third pod: the one without news for longest goes
    assert recent.for_pod("uid-0") == [] and len(recent.for_pod("uid-2")) == 1
    recent.forget(lambda uid: uid != "uid-1")
    assert recent.for_pod("uid-1") == [] and len(recent.for_pod("uid-2")) == 1
    kept.pod_event(pods[2], "Bogus", "Reason", "an unknown type is not kept")
    assert len(recent.for_pod("uid-2")) == 1
