"""Container GC over real containers of the process runtime: dead instances beyond what a live
pod's status needs go with their log files, a gone pod's containers and sandbox go entirely,
running containers stay; the minimum age holds the periodic pass back, not the reclaim; a finished
pod keeps what its status needs (else its worker would run it again); containers and sandboxes
without a pod UID (another client's) are never touched."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

from kubeletapi.clock import RealClock
from kubeletapi.pods.containergc import ContainerGC, GCPolicy
from kubeletapi.pods.loggc import LogGC
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path


class Pods:
    """The pod manager as GC asks it (a hand-written stand-in: which pods exist is the input)."""

    def __init__(self, known: set[str]) -> None:
        self.known_uids = known

    def known(self, uid: str) -> bool:
        return uid in self.known_uids

    def sources_not_ready(self) -> str | None:
        return None


async def _sandbox(runtime: ProcessRuntime, logs: Path, uid: str) -> str:
    return await runtime.run_pod_sandbox(rt.SandboxConfig(
        meta=rt.PodMeta("p", "default", uid), hostname="p", log_directory=str(logs / f"default_p_{uid}"),
        cgroup_parent=""))


async def _container(runtime: ProcessRuntime, sandbox: str, uid: str, attempt: int, script: str = "echo hi") -> str:
    cid = await runtime.create_container(sandbox, rt.ContainerConfig(
        name="c", attempt=attempt, image="busybox", command=("sh", "-c", script), log_path=f"c/{attempt}.log",
        labels={rt.POD_UID: uid, rt.CONTAINER_NAME: "c"}))
    await runtime.start_container(cid)
    return cid


async def _exited(runtime: ProcessRuntime, cid: str) -> rt.ContainerStatus:
    while (status := await runtime.container_status(cid)).state is not rt.ContainerState.EXITED:
        await asyncio.sleep(0.02)
    return status


async def _scenario(tmp: Path) -> None:
    runtime = ProcessRuntime(tmp / "state", shim_path(), RealClock())
    try:
        await _checks(runtime, tmp)
    finally:  # nothing keeps running, whatever failed
        for c in await runtime.list_containers():
            if c.state is rt.ContainerState.RUNNING:
                await runtime.stop_container(c.id, 0)


async def _checks(runtime: ProcessRuntime, tmp: Path) -> None:
    logs = tmp / "logs"
    live, gone = secrets.token_hex(4), secrets.token_hex(4)
    live_sandbox, gone_sandbox = await _sandbox(runtime, logs, live), await _sandbox(runtime, logs, gone)
    instances = []
    for attempt in range(4):  # one after the other, as restarts: creation order is attempt order
        instances.append(await _exited(runtime, await _container(runtime, live_sandbox, live, attempt)))
    gone_dead = [await _exited(runtime, await _container(runtime, gone_sandbox, gone, a)) for a in range(2)]
    running = await _container(runtime, live_sandbox, live, 4, "sleep 60")
    # another client's: no pod UID on the sandbox or the container; GC leaves both alone
    stranger_sandbox = await _sandbox(runtime, logs, "")
    stranger = await runtime.create_container(stranger_sandbox, rt.ContainerConfig(
        name="x", attempt=0, image="busybox", command=("true",), log_path="x/0.log"))
    await runtime.start_container(stranger)
    await _exited(runtime, stranger)
    await runtime.stop_pod_sandbox(stranger_sandbox)
    assert all(Path(s.log_path).exists() for s in instances + gone_dead)
    await runtime.stop_pod_sandbox(gone_sandbox)

    pods = Pods({live})
    young = GCPolicy(min_age_s=3600)  # a periodic pass finds nothing old enough
    gc = ContainerGC(runtime, pods, young, RealClock(), LogGC(logs, RealClock(), retention_s=0))
    result = await gc.garbage_collect()
    assert (result.containers, result.sandboxes) == (0, 0)
    assert len(await runtime.list_containers()) == 8

    await gc.delete_all_unused_containers()  # the reclaim: whatever the age
    left = {c.id for c in await runtime.list_containers()}
    # the live pod: the running instance and the newest exited one (its lastState) stay
    assert left == {running, instances[3].id, stranger}
    assert [Path(s.log_path).exists() for s in instances] == [False, False, False, True]
    assert {s.id for s in await runtime.list_pod_sandboxes()} == {live_sandbox, stranger_sandbox}
    assert not (logs / f"default_p_{gone}").exists()  # the gone pod's logs too (retention 0)

    await runtime.stop_container(running, 0)  # the pod has finished: its two instances stay
    await gc.delete_all_unused_containers()
    assert {c.id for c in await runtime.list_containers()} == left
    await runtime.remove_container(stranger)
    for sandbox in await runtime.list_pod_sandboxes():
        await runtime.stop_pod_sandbox(sandbox.id)
        await runtime.remove_pod_sandbox(sandbox.id)


def test_container_gc_on_process_runtime(tmp_path: Path) -> None:
    asyncio.run(_scenario(tmp_path))
