"""A pod that is not hostNetwork waits while the pod network is not ready (the kubelet's
NetworkNotReady): no sandbox, ContainerCreating with the reason, a retry soon; a hostNetwork pod
starts meanwhile; once ready, the waiting pod starts."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubeletapi.clock import RealClock
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import NETWORK_RETRY_S, PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from tests.pods.test_sync_runtime import pod


def test_pods_wait_for_the_network_unless_on_the_hosts(tmp_path: Path) -> None:
    async def go() -> None:
        clock = RealClock()
        node = NodeEnv(node_name="n", node_ip="127.0.0.1", root_dir=tmp_path, pod_logs_dir=tmp_path / "logs")
        runtime = ProcessRuntime(tmp_path / "state", shim_path(), clock)
        published = StatusStore()
        why: list[str] = ["container runtime network not ready: NetworkReady=false"]
        syncer = PodSyncer(runtime, node, clock, Backoff(clock), PodVolumes(node), PLEG(runtime, clock), published,
                           network_error=lambda: why[0] if why else None)
        own, host = pod(["sleep", "300"]), pod(["sleep", "301"])
        host.metadata.uid, host.metadata.name = "host-uid", "host"
        host.spec.host_network = True
        try:
            assert await syncer.sync(own) == NETWORK_RETRY_S
            assert await runtime.list_pod_sandboxes() == []
            status = published.get(own.metadata.uid)
            assert status is not None and status.phase == "Pending"
            waiting = status.container_statuses[0].state.waiting
            assert waiting is not None and waiting.reason == "ContainerCreating"
            assert waiting.message == "network is not ready: container runtime network not ready: NetworkReady=false"
            await syncer.sync(host)
            assert [s.meta.uid for s in await runtime.list_pod_sandboxes()] == ["host-uid"]
            why.clear()
            await syncer.sync(own)
            assert {s.meta.uid for s in await runtime.list_pod_sandboxes()} == {"host-uid", own.metadata.uid}
        finally:
            for p in (own, host):
                await syncer.kill(p)

    asyncio.run(go())
