"""PodSyncer against the real process runtime: what static manifests cannot reach directly.

A static pod's UID is a hash of its manifest, so a changed manifest is a new pod; the syncer's
spec-hash restart (a changed container of the same pod) is exercised here directly.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from kubeletapi.api.core_v1 import Pod, PodStatus
from kubeletapi.clock import RealClock
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.manifest import decode_pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.static import make_static
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
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
        published: dict[str, PodStatus | None] = {}
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), published.__setitem__)
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
            status = published[first.metadata.uid]
            assert status is not None
            assert status.container_statuses[0].restart_count == 1
            assert status.container_statuses[0].last_state.terminated is not None
        finally:
            await syncer.kill(second)
        assert await runtime.list_containers() == []

    asyncio.run(go())



