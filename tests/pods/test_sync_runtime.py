"""PodSyncer against the real process runtime: what static manifests cannot reach directly.

A static pod's UID is a hash of its manifest, so a changed manifest is a new pod; the syncer's
spec-hash restart (a changed container of the same pod) is exercised here directly.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import FakeClock, RealClock
from kubeletapi.errors import NotFound
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.static import make_static
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.types import AuthConfig, ContainerState, Image, SandboxConfig
from tests.podtools import container, manifest


def pod(command: list[str]) -> Pod:
    import datetime as dt

    base = decode_pod(manifest("p", container("c", command)).encode(), "test")
    return make_static(base, "n", "file", "/x/p.yaml", dt.datetime.now(dt.UTC))


def test_changed_container_spec_restarts_that_container(tmp_path: Path) -> None:
    async def go() -> None:
        clock = RealClock()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
        published = StatusStore()
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), PLEG(runtime, clock), published)
        first = pod(["sleep", "300"])
        second = first.model_copy(deep=True)
        second.spec.containers[0].command = ["sleep", "301"]
        assert second.metadata.uid == first.metadata.uid
        try:
            await syncer.sync(first)
            (before,) = await runtime.list_containers()
            await syncer.sync(first)  # unchanged: nothing happens
            assert [c.id for c in await runtime.list_containers()] == [before.id]
            started = time.monotonic()
            await syncer.sync(second)
            assert time.monotonic() - started < 10
            statuses = sorted(await runtime.list_containers(), key=lambda c: c.attempt)
            assert [c.attempt for c in statuses] == [0, 1]
            assert statuses[0].state.name == "EXITED" and statuses[1].state.name == "RUNNING"
            status = published.get(first.metadata.uid)
            assert status is not None
            assert status.container_statuses[0].restart_count == 1
            assert status.container_statuses[0].last_state.terminated is not None
        finally:
            await syncer.kill(second)
        assert await runtime.list_containers() == []

    asyncio.run(go())


class RegistryRuntime(ProcessRuntime):
    """The process runtime behind a registry: an image is absent until pulled, and the first
    `failures` pulls fail the way containerd reports an unknown image."""

    failures = 0
    pulls = 0
    pulled: frozenset[str] = frozenset()

    async def image_status(self, image: str) -> Image | None:
        return Image(id="sha256:1", ref="") if image in self.pulled else None

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None, auth: AuthConfig | None = None) -> str:
        self.pulls += 1
        if self.pulls <= self.failures:
            raise NotFound(f'failed to pull and unpack image "docker.io/library/{image}": not found ({self.pulls})')
        self.pulled |= {image}
        return ""


def test_image_pull_back_off_then_recovery(tmp_path: Path) -> None:
    async def go() -> None:
        clock = FakeClock()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = RegistryRuntime(tmp_path / "state", shim_path(), RealClock())
        runtime.failures = 2
        published = StatusStore()
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), PLEG(runtime, clock), published)
        p = pod(["sleep", "300"])  # busybox:1.36, so imagePullPolicy IfNotPresent
        assert p.spec.containers[0].image_pull_policy == "IfNotPresent"

        def waiting() -> tuple[str, str]:
            status = published.get(p.metadata.uid)
            assert status is not None and status.phase == "Pending"
            state = status.container_statuses[0].state.waiting
            assert state is not None
            return state.reason, state.message

        try:
            assert await syncer.sync(p) == 10.0
            first = 'failed to pull and unpack image "docker.io/library/busybox:1.36": not found (1)'
            assert waiting() == ("ErrImagePull", first)
            assert await runtime.list_containers() == []
            clock.advance(3)
            assert await syncer.sync(p) == 7.0  # requeued for the back-off's end
            assert waiting() == ("ImagePullBackOff", f'Back-off pulling image "busybox:1.36": ErrImagePull: {first}')
            assert runtime.pulls == 1
            clock.advance(7)
            assert await syncer.sync(p) == 20.0  # the second failure doubles the back-off
            assert waiting() == ("ErrImagePull", first.replace("(1)", "(2)"))
            clock.advance(20)
            assert await syncer.sync(p) is None
            assert runtime.pulls == 3
            (live,) = await runtime.list_containers()
            assert live.state is ContainerState.RUNNING and live.attempt == 0
            status = published.get(p.metadata.uid)
            assert status is not None
            cs = status.container_statuses[0]
            assert cs.state.running is not None and cs.restart_count == 0
            assert (cs.image, cs.image_id) == ("busybox:1.36", "")
            assert await syncer.sync(p) is None  # present now: no further pull
            assert runtime.pulls == 3
        finally:
            await syncer.kill(p)
        assert await runtime.list_containers() == []

    asyncio.run(go())
