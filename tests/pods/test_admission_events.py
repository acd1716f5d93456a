"""The pod manager's admission events (the kubelet's rejectPod): a pod refused for OutOfpods and
an API pod this node cannot decode get one Warning event each, saying why."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubeletapi.api.core_v1 import Container, ObjectMeta, Pod, PodSpec
from kubeletapi.clock import RealClock
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


def test_refusals_get_one_warning_each(tmp_path: Path) -> None:
    async def go() -> None:
        clock = RealClock()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
        pleg, statuses, events = PLEG(runtime, clock), StatusStore(), Events()
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), pleg, statuses)
        manager = PodManager(syncer, pleg, statuses, clock, 1, ["api"], events=PodEvents(events))
        undecodable = ManifestResult("ns/odd", error='ns/odd: unknown field "spec.wat"',
                                     api=ApiRef("ns", "odd", "uid-odd"))
        update = PodUpdate("api", (ManifestResult("ns/a", pod=api_pod("a")), ManifestResult("ns/b", pod=api_pod("b")),
                                   undecodable))
        try:
            manager.apply(update)
            manager.apply(update)  # the same refusals again: no new events
        finally:
            await manager.stop()
            await syncer.kill(api_pod("a"))
        refusals = [e for e in events.seen if e[2] in ("OutOfpods", "PodNotSupported")]
        assert [pod for pod, e in zip(events.pods, events.seen, strict=True) if e in refusals] == [
            "ns/odd (uid-odd)", "ns/b (uid-b)"]
        assert refusals == [
            ("", "Warning", "PodNotSupported", 'ns/odd: unknown field "spec.wat"'),
            ("", "Warning", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"),
        ]

    asyncio.run(go())
