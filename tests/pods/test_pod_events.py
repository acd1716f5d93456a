"""The events the pod syncer records, at kuberuntime's points and in its words, with the real
process runtime and a hand-written event sink: a container's start, a crash loop's back-off,
hooks that fail, a liveness kill, volumes that cannot be mounted, a config that cannot be made,
an image that cannot be pulled, a sandbox that changed, and the pod's removal."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.clock import FakeClock, RealClock
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.podevents import PodEvents, PodEventSink, format_pod
from kubeletapi.pods.static import make_static
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from tests.pods.test_sync_runtime import RegistryRuntime
from tests.podtools import container, manifest
from tests.prober.test_sync_probes import FakeProbes

Seen = tuple[str, str, str, str]  # container ("" for the pod), type, reason, message


@dataclass
class Events:
    seen: list[Seen] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)  # the pod of each event: namespace/name (uid)

    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.seen.append(("", event_type, reason, message))
        self.pods.append(f"{pod.metadata.namespace}/{pod.metadata.name} ({pod.metadata.uid})")

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None:
        self.seen.append((container.name, event_type, reason, message))
        self.pods.append(f"{pod.metadata.namespace}/{pod.metadata.name} ({pod.metadata.uid})")

    def reasons(self) -> list[str]:
        return [reason for _, _, reason, _ in self.seen]


_: type[PodEventSink] = Events


def static_pod(containers: str, spec_extra: str = "") -> Pod:
    text = manifest("p", containers, spec_extra)
    return make_static(decode_pod(text.encode(), "test"), "n", "file", "/x/p.yaml", dt.datetime.now(dt.UTC))


@dataclass
class World:
    syncer: PodSyncer
    runtime: ProcessRuntime
    events: Events
    probes: FakeProbes
    statuses: StatusStore
    pleg: PLEG


def world(tmp: Path, runtime: ProcessRuntime | None = None, clock: FakeClock | None = None) -> World:
    real = RealClock()
    node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp, pod_logs_dir=tmp / "logs")
    runtime = runtime or ProcessRuntime(tmp / "state", shim_path(), real)
    events, probes, statuses = Events(), FakeProbes(), StatusStore()
    used = clock or real
    pleg = PLEG(runtime, used)
    syncer = PodSyncer(runtime, node, used, Backoff(used), PodVolumes(node), pleg, statuses, probes=probes,
                       events=PodEvents(events))
    return World(syncer, runtime, events, probes, statuses, pleg)


async def exited(w: World, count: int) -> None:
    """Wait until `count` instances have exited; the PLEG then relists (as its loop would)."""
    for _ in range(200):
        if len([c for c in await w.runtime.list_containers() if c.state is rt.ContainerState.EXITED]) >= count:
            await w.pleg.relist()
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the container did not exit")


def test_a_started_container_then_its_removal(tmp_path: Path) -> None:
    async def go() -> None:
        w = world(tmp_path)
        pod = static_pod(container("c", ["sleep", "300"]))
        try:
            await w.syncer.sync(pod)
            await w.syncer.sync(pod)  # nothing to do: nothing to report
        finally:
            await w.syncer.kill(pod)
        assert w.events.seen == [
            ("c", "Normal", "Pulled", 'Container image "busybox:1.36" already present on machine'),
            ("c", "Normal", "Created", "Created container: c"),
            ("c", "Normal", "Started", "Started container c"),
            ("c", "Normal", "Killing", "Stopping container c"),
        ]

    asyncio.run(go())


def test_a_crash_loop_backs_off(tmp_path: Path) -> None:
    async def go() -> None:
        w = world(tmp_path)
        pod = static_pod(container("c", ["sh", "-c", "exit 1"]))
        try:
            await w.syncer.sync(pod)
            await exited(w, 1)
            await w.syncer.sync(pod)  # the first restart is immediate
            await exited(w, 2)
            await w.syncer.sync(pod)
            await w.syncer.sync(pod)  # still backing off: reported again (the recorder counts it)
        finally:
            await w.syncer.kill(pod)
        back_off = ("c", "Warning", "BackOff", f"Back-off restarting failed container c in pod {format_pod(pod)}")
        assert w.events.seen.count(back_off) == 2
        assert w.events.reasons()[:6] == ["Pulled", "Created", "Started", "Pulled", "Created", "Started"]
        assert "Killing" not in w.events.reasons()  # nothing was running to stop

    asyncio.run(go())


def test_failing_hooks(tmp_path: Path) -> None:
    async def go() -> None:
        w = world(tmp_path)
        hooks = """
        lifecycle:
          postStart: {exec: {command: ["sh", "-c", "echo secret; exit 2"]}}
        """
        stop_hook = """
        lifecycle:
          preStop: {exec: {command: ["sh", "-c", "exit 3"]}}
        """
        pod = static_pod(container("a", ["sleep", "300"], hooks) + container("b", ["sleep", "300"], stop_hook),
                         "terminationGracePeriodSeconds: 2")
        try:
            await w.syncer.sync(pod)
        finally:
            await w.syncer.kill(pod)
        assert ("a", "Warning", "FailedPostStartHook", "PostStartHook failed") in w.events.seen
        assert ("a", "Normal", "Killing", "FailedPostStartHook") in w.events.seen
        b = [e for e in w.events.seen if e[0] == "b"]
        assert b[-2:] == [("b", "Normal", "Killing", "Stopping container b"),
                          ("b", "Warning", "FailedPreStopHook", "PreStopHook failed")]
        assert not [e for e in w.events.seen if "secret" in e[3]]  # a hook's output stays out of events

    asyncio.run(go())


def test_a_liveness_kill(tmp_path: Path) -> None:
    async def go() -> None:
        w = world(tmp_path)
        pod = static_pod(container("c", ["sleep", "300"]), "terminationGracePeriodSeconds: 2")
        try:
            await w.syncer.sync(pod)
            (live,) = await w.runtime.list_containers()
            w.probes.failed[live.id] = ("liveness", "boom")
            await w.syncer.sync(pod)
        finally:
            await w.syncer.kill(pod)
        assert ("c", "Normal", "Killing", "Container c failed liveness probe, will be restarted") in w.events.seen
        assert w.events.reasons().count("Started") == 2

    asyncio.run(go())


def test_a_volume_that_cannot_be_mounted(tmp_path: Path) -> None:
    async def go() -> None:
        w = world(tmp_path)
        pod = static_pod(container("c", ["sleep", "300"]),
                         "volumes:\n- name: data\n  persistentVolumeClaim: {claimName: nope}\n"
                         "- name: drv\n  csi: {driver: x.example.com}")
        try:
            await w.syncer.sync(pod)
            await w.syncer.sync(pod)
        finally:
            await w.syncer.kill(pod)
        mounts = [e for e in w.events.seen if e[2] == "FailedMount"]  # one per volume, on each sync
        assert len(mounts) == 4 and mounts[:2] == mounts[2:]
        assert mounts[0][:2] == mounts[1][:2] == ("", "Warning")
        assert mounts[0][3].startswith('MountVolume.SetUp failed for volume "data" : persistentVolumeClaim volumes')
        assert mounts[1][3].startswith('MountVolume.SetUp failed for volume "drv" : csi volumes')
        assert "Created" not in w.events.reasons()

    asyncio.run(go())


def test_a_config_that_cannot_be_made(tmp_path: Path) -> None:
    async def go() -> None:
        w = world(tmp_path)
        env = """
        env:
        - name: X
          valueFrom: {fieldRef: {fieldPath: "metadata.labels['a']"}}
        """
        pod = static_pod(container("c", ["sleep", "300"], env))
        pod.spec.containers[0].env[0].value_from.field_ref.field_path = "spec.nothing"  # type: ignore[union-attr]
        try:
            await w.syncer.sync(pod)
        finally:
            await w.syncer.kill(pod)
        # the kubelet's words (ConvertDownwardAPIFieldLabel)
        assert w.events.seen[-1] == ("c", "Warning", "Failed", "Error: field label not supported: spec.nothing")

    asyncio.run(go())


def test_an_image_that_cannot_be_pulled(tmp_path: Path) -> None:
    async def go() -> None:
        clock = FakeClock()
        runtime = RegistryRuntime(tmp_path / "state", shim_path(), RealClock())
        runtime.failures = 1
        w = world(tmp_path, runtime, clock)
        pod = static_pod(container("c", ["sleep", "300"]))
        error = 'failed to pull and unpack image "docker.io/library/busybox:1.36": not found (1)'
        try:
            await w.syncer.sync(pod)
            assert w.events.seen == [
                ("c", "Normal", "Pulling", 'Pulling image "busybox:1.36"'),
                ("c", "Warning", "Failed", f'Failed to pull image "busybox:1.36": {error}'),
                ("c", "Warning", "Failed", "Error: ErrImagePull"),
            ]
            clock.advance(3)
            await w.syncer.sync(pod)
            assert w.events.seen[3:] == [
                ("c", "Normal", "BackOff", 'Back-off pulling image "busybox:1.36"'),
                ("c", "Warning", "Failed", "Error: ImagePullBackOff"),
            ]
            clock.advance(7)
            await w.syncer.sync(pod)
            pulled = w.events.seen[6]
            assert pulled[:3] == ("c", "Normal", "Pulled")
            assert pulled[3].startswith('Successfully pulled image "busybox:1.36" in ')
            assert pulled[3].endswith(" including waiting). Image size: 0 bytes.")
            assert w.events.reasons()[5:] == ["Pulling", "Pulled", "Created", "Started"]
        finally:
            await w.syncer.kill(pod)

    asyncio.run(go())


def test_a_sandbox_that_changed(tmp_path: Path) -> None:
    async def go() -> None:
        w = world(tmp_path)
        pod = static_pod(container("c", ["sleep", "300"]), "terminationGracePeriodSeconds: 2")
        try:
            await w.syncer.sync(pod)
            (sandbox,) = await w.runtime.list_pod_sandboxes()
            await w.runtime.stop_pod_sandbox(sandbox.id)  # as a reboot leaves it
            await w.pleg.relist()
            await w.syncer.sync(pod)
        finally:
            await w.syncer.kill(pod)
        assert ("", "Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.") \
            in w.events.seen

    asyncio.run(go())


@pytest.mark.parametrize(("message", "cid", "said"), [
    pytest.param("OCI runtime create failed: container abc123 exists", "abc123",
                 "Error: OCI runtime create failed: container c exists", id="id-replaced-by-the-name"),
    pytest.param("no such file", "", "Error: no such file", id="no-id"),
])
def test_a_container_id_in_a_message_becomes_its_name(message: str, cid: str, said: str) -> None:
    events = Events()
    pod = static_pod(container("c", ["true"]))
    PodEvents(events).failed(pod, pod.spec.containers[0], message, cid)
    assert events.seen == [("c", "Warning", "Failed", said)]
