"""The pod syncer and status acting on probe results (a hand-written prober, the real process
runtime): liveness kills with the probe's grace period, the terminated state's reason and
message, restarts through CrashLoopBackOff, restartPolicy Never, started/ready in the status."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from dataclasses import dataclass, field
from pathlib import Path

from kubeletapi.api.core_v1 import ExecAction, Pod, Probe
from kubeletapi.clock import RealClock
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.static import make_static
from kubeletapi.pods.status import PodView, ProbeView, container_status
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from tests.podtools import container, manifest

STUBBORN = ["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"]  # ignores SIGTERM


@dataclass
class FakeProbes:
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)  # container id -> (kind, output)
    not_started: set[str] = field(default_factory=set)
    not_ready: set[str] = field(default_factory=set)

    def started(self, pod_uid: str, container: str, container_id: str) -> bool:
        return container_id not in self.not_started

    def ready(self, pod_uid: str, container: str, container_id: str) -> bool:
        return container_id not in self.not_ready

    def failure(self, pod_uid: str, container: str, container_id: str) -> tuple[str, str] | None:
        return self.failed.get(container_id)


def make_pod(policy: str = "Always", probe_grace: int | None = 2) -> Pod:
    extra = "livenessProbe:\n  exec:\n    command: [\"true\"]\n"
    if probe_grace is not None:
        extra += f"  terminationGracePeriodSeconds: {probe_grace}\n"
    text = manifest("p", container("c", STUBBORN, extra), f"restartPolicy: {policy}")
    return make_static(decode_pod(text.encode(), "test"), "n", "file", "/x/p.yaml", dt.datetime.now(dt.UTC))


async def setup(tmp: Path) -> tuple[PodSyncer, ProcessRuntime, FakeProbes, StatusStore]:
    clock = RealClock()
    node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp, pod_logs_dir=tmp / "logs")
    runtime = ProcessRuntime(tmp / "state", shim_path(), clock)
    published = StatusStore()
    probes = FakeProbes()
    syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), PLEG(runtime, clock), published,
                       probes=probes)
    return syncer, runtime, probes, published


async def running(runtime: ProcessRuntime) -> rt.ContainerStatus:
    (live,) = [c for c in await runtime.list_containers() if c.state is rt.ContainerState.RUNNING]
    return live


def test_liveness_failure_kills_with_the_probe_grace_and_restarts_through_backoff(tmp_path: Path) -> None:
    async def go() -> None:
        syncer, runtime, probes, published = await setup(tmp_path)
        pod = make_pod()  # the pod's grace period is the default 30 s; the probe's is 2 s
        try:
            await syncer.sync(pod)
            first = await running(runtime)
            probes.failed[first.id] = ("liveness", "boom\n" + "x" * 5000)
            began = time.monotonic()
            again = await syncer.sync(pod)
            assert 1.8 < time.monotonic() - began < 6  # SIGKILL after the probe's 2 s, not 30 s
            assert again is None  # the first restart is immediate
            second = await running(runtime)
            assert second.attempt == 1
            status = published.get(pod.metadata.uid)
            assert status is not None
            cs = status.container_statuses[0]
            last = cs.last_state.terminated
            assert last is not None and last.reason == "Unhealthy"
            assert last.message.startswith("Container c failed liveness probe, will be restarted: boom\nxxx")
            assert last.message.endswith("...") and len(last.message) < 1200
            assert last.exit_code != 0
            assert cs.restart_count == 1 and cs.state.running is not None

            probes.failed[second.id] = ("liveness", "boom again")
            again = await syncer.sync(pod)  # killed again: now the back-off applies
            assert again is not None and 9 < again <= 10
            status = published.get(pod.metadata.uid)
            assert status is not None
            cs = status.container_statuses[0]
            assert cs.state.waiting is not None and cs.state.waiting.reason == "CrashLoopBackOff"
            assert cs.last_state.terminated is not None
            message = cs.last_state.terminated.message
            assert message == "Container c failed liveness probe, will be restarted: boom again"
        finally:
            await syncer.kill(pod)

    asyncio.run(go())


def test_liveness_failure_under_never_kills_without_restart(tmp_path: Path) -> None:
    async def go() -> None:
        syncer, runtime, probes, published = await setup(tmp_path)
        pod = make_pod("Never", probe_grace=None)
        pod.spec.termination_grace_period_seconds = 1  # the pod's (raised to the 2 s minimum)
        try:
            await syncer.sync(pod)
            first = await running(runtime)
            probes.failed[first.id] = ("liveness", "")
            await syncer.sync(pod)
            await syncer.sync(pod)
            assert [c.state for c in await runtime.list_containers()] == [rt.ContainerState.EXITED]
            status = published.get(pod.metadata.uid)
            assert status is not None
            terminated = status.container_statuses[0].state.terminated
            assert terminated is not None
            assert (terminated.reason, terminated.message) == ("Unhealthy", "Container c failed liveness probe")
            assert status.phase == "Failed"
        finally:
            await syncer.kill(pod)

    asyncio.run(go())


def test_started_and_ready_come_from_the_probes() -> None:
    now = int(time.time() * 1e9)
    instance = rt.ContainerStatus(id="c1", sandbox_id="s", name="c", attempt=0, state=rt.ContainerState.RUNNING,
                                  image="i", image_ref="", created_at=now, started_at=now)
    view = PodView.of([], [instance])
    spec = Pod.model_validate({"spec": {"containers": [{"name": "c", "image": "i"}]}}).spec.containers[0]
    spec.readiness_probe = Probe(exec=ExecAction(command=["true"]))
    probes = FakeProbes(not_started={"c1"})
    status = container_status(spec, view, None, probes=ProbeView("u", probes))
    assert (status.started, status.ready) == (False, False)
    probes.not_started.clear()
    probes.not_ready.add("c1")
    status = container_status(spec, view, None, probes=ProbeView("u", probes))
    assert (status.started, status.ready) == (True, False)
    probes.not_ready.clear()
    status = container_status(spec, view, None, probes=ProbeView("u", probes))
    assert (status.started, status.ready) == (True, True)
    assert container_status(spec, view, None).ready  # no prober: a running container is ready
