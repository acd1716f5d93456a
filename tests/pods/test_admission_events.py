"""The pod manager's admission (the kubelet's rejectPod): a pod refused for OutOfpods, by an admit
handler, or an API pod this node cannot decode gets one Warning event, saying why."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubeletapi.api.core_v1 import Container, ObjectMeta, Pod, PodSpec
from kubeletapi.clock import RealClock
from kubeletapi.pods.admission import Refusal
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manager import PodManager
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.podevents import PodEvents
from kubeletapi.pods.sources import ApiRef, ManifestResult, PodUpdate
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from tests.pods.test_pod_events import Events


def api_pod(name: str) -> Pod:
    """An API pod that runs nothing for long (`true`, restartPolicy Never)."""
    return Pod(metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}", resource_version="7"),
               spec=PodSpec(containers=[Container(name="c", image="busybox:1.36", command=["true"])],
                            restart_policy="Never"))


@dataclass
class Admitting:
    """A pod manager of API pods (run by the process runtime) and the events it records."""

    syncer: PodSyncer
    manager: PodManager
    events: Events

    async def close(self, *ran: str) -> None:
        """Stop the manager's workers, then kill the pods named in `ran` that it started."""
        await self.manager.stop()
        for name in ran:
            await self.syncer.kill(api_pod(name))


@pytest.fixture
def admitting(tmp_path: Path) -> Callable[[int], Admitting]:
    """Builds the manager for `max_pods` pods (inside the test's event loop, which runs its workers)."""

    def build(max_pods: int) -> Admitting:
        clock = RealClock()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
        pleg, statuses, events = PLEG(runtime, clock), StatusStore(), Events()
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), pleg, statuses)
        manager = PodManager(syncer, pleg, statuses, clock, max_pods, ["api"], events=PodEvents(events))
        return Admitting(syncer, manager, events)

    return build


def test_refusals_get_one_warning_each(admitting: Callable[[int], Admitting]) -> None:
    async def go() -> None:
        rig = admitting(1)
        manager, events = rig.manager, rig.events
        undecodable = ManifestResult("ns/odd", error='ns/odd: unknown field "spec.wat"',
                                     api=ApiRef("ns", "odd", "uid-odd"))
        update = PodUpdate("api", (ManifestResult("ns/a", pod=api_pod("a")), ManifestResult("ns/b", pod=api_pod("b")),
                                   undecodable))
        try:
            manager.apply(update)
            manager.apply(update)  # the same refusals again: no new events
        finally:
            await rig.close("a")
        refusals = [e for e in events.seen if e[2] in ("OutOfpods", "PodNotSupported")]
        assert [pod for pod, e in zip(events.pods, events.seen, strict=True) if e in refusals] == [
            "ns/odd (uid-odd)", "ns/b (uid-b)"]
        assert refusals == [
            ("", "Warning", "PodNotSupported", 'ns/odd: unknown field "spec.wat"'),
            ("", "Warning", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"),
        ]

    asyncio.run(go())


class NamedRefusals:
    """Refuses the pods named in `refuse` (evicted-style), recording what it was asked."""

    def __init__(self, *refuse: str) -> None:
        self.refuse = set(refuse)
        self.asked: list[tuple[str, list[str]]] = []

    def admit(self, pod: Pod, admitted: Sequence[Pod]) -> Refusal | None:
        self.asked.append((pod.metadata.name, [p.metadata.name for p in admitted]))
        if pod.metadata.name in self.refuse:
            return Refusal("Evicted", f"The node had condition: [MemoryPressure]. ({pod.metadata.name})")
        return None


def test_an_admit_handler_is_asked_once_per_new_pod_and_its_refusal_holds(
    admitting: Callable[[int], Admitting],
) -> None:
    async def go() -> None:
        rig = admitting(10)
        manager, events = rig.manager, rig.events
        handler = NamedRefusals("b")
        manager.add_admitter(handler)
        first = PodUpdate("api", (ManifestResult("ns/a", pod=api_pod("a")), ManifestResult("ns/b", pod=api_pod("b"))))
        try:
            manager.apply(first)
            handler.refuse = {"a"}  # the verdicts change: neither pod is judged again
            manager.apply(first)
            manager.apply(PodUpdate("api", (*first.results, ManifestResult("ns/c", pod=api_pod("c")))))
            by_name = {p.metadata.name: p for p in manager.pods()}
        finally:
            await rig.close("a", "c")
        assert handler.asked == [("a", []), ("b", ["a"]), ("c", ["a"])]
        assert by_name["b"].status.phase == "Failed"
        assert (by_name["b"].status.reason, by_name["b"].status.message) == (
            "Evicted", "Pod was rejected: The node had condition: [MemoryPressure]. (b)")
        assert by_name["a"].status.phase != "Failed" and by_name["c"].status.phase != "Failed"
        assert [(pod, e) for pod, e in zip(events.pods, events.seen, strict=True) if e[2] == "Evicted"] == [
            ("ns/b (uid-b)", ("", "Warning", "Evicted", "The node had condition: [MemoryPressure]. (b)"))]
        assert [r.reason for r in manager.manifests() if r.state == "rejected"] == [
            "Evicted: The node had condition: [MemoryPressure]. (b)"]

    asyncio.run(go())
