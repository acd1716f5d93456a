"""The pods as the stats provider takes them (stats.inventory.Inventory), and the container log
directories the log-usage metric walks: from the pod cache, the admitted specs and the node.

As the kubelet's stats provider reports them: pods with a ready sandbox (the newest), their
containers in that sandbox (by name, newest first), a CRI runtime's pause container for cAdvisor,
and the emptyDir and hostPath volumes of the pod's spec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from kubeletapi.api.core_v1 import Pod
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.podcache import PodCache
from kubeletapi.pods.volumes import empty_dir_path
from kubeletapi.runtime import types as rt
from kubeletapi.stats.inventory import ContainerRef, PodRef, VolumeRef


class PodSpecs(Protocol):
    """The admitted pods by UID (manager.PodManager)."""

    def spec(self, uid: str) -> Pod | None: ...


class PodInventory:
    """Implements stats.inventory.Inventory. `pause_containers`: report a CRI runtime's sandbox
    (pause) containers, which cAdvisor shows as container ""."""

    def __init__(self, cache: PodCache, specs: PodSpecs, node: NodeEnv, runtime_pids: Callable[[], Sequence[int]],
                 pause_containers: bool = False) -> None:
        self._cache = cache
        self._specs = specs
        self._node = node
        self._runtime_pids = runtime_pids
        self._pause = pause_containers

    def runtime_pids(self) -> Sequence[int]:
        return self._runtime_pids()

    def pods(self) -> list[PodRef]:
        """Pods with a ready sandbox, sorted by namespace/name."""
        out = []
        for uid, record in self._cache.items():
            ready = [s for s in record.sandboxes if s.state is rt.SandboxState.READY]
            if not ready:
                continue
            sandbox = max(ready, key=lambda s: s.created_at)
            refs = tuple(sorted(
                (self._container_ref(sandbox, c) for c in record.containers if c.sandbox_id == sandbox.id),
                key=lambda c: (c.name, -c.created_ns),
            ))
            if self._pause and sandbox.cgroup_parent:
                refs += (ContainerRef(
                    name="", id=sandbox.id, image=sandbox.image, created_ns=sandbox.created_at,
                    started_ns=sandbox.created_at, running=True, cgroup=f"{sandbox.cgroup_parent}/{sandbox.id}",
                    sandbox=True,
                ),)
            spec = self._specs.spec(uid)
            out.append(PodRef(
                uid=uid, name=sandbox.meta.name, namespace=sandbox.meta.namespace, created_ns=sandbox.created_at,
                cgroup=sandbox.cgroup_parent if self._node.isolated else "",
                log_dir=Path(sandbox.log_directory) if sandbox.log_directory else None,
                containers=refs, volumes=self._volume_refs(spec) if spec is not None else (),
            ))
        return sorted(out, key=lambda p: (p.namespace, p.name, p.uid))

    def _container_ref(self, sandbox: rt.Sandbox, c: rt.ContainerStatus) -> ContainerRef:
        running = c.state is rt.ContainerState.RUNNING
        cgroup = f"{sandbox.cgroup_parent}/{c.id}" if self._node.isolated and sandbox.cgroup_parent else ""
        return ContainerRef(
            name=c.name, id=c.id, image=c.image, created_ns=c.created_at, started_ns=c.started_at,
            running=running, cgroup=cgroup, pid=c.pid if running else 0,
            log_dir=Path(c.log_path).parent if c.log_path else None,
        )

    def _volume_refs(self, pod: Pod) -> tuple[VolumeRef, ...]:
        refs = []
        for volume in pod.spec.volumes or []:
            if volume.empty_dir is not None:
                path = empty_dir_path(self._node, pod.metadata.uid, volume.name)
                kind = "emptyDir-memory" if volume.empty_dir.medium == "Memory" else "emptyDir"
                refs.append(VolumeRef(volume.name, path, kind))
            elif volume.host_path is not None:
                refs.append(VolumeRef(volume.name, Path(volume.host_path.path), "hostPath"))
        return tuple(refs)

    def log_dirs(self) -> list[tuple[str, str, str, str, Path]]:
        """(uid, namespace, pod, container, log dir) of every container the runtime has."""
        out = []
        for uid, record in self._cache.items():
            if not record.sandboxes:
                continue
            sandbox = record.sandboxes[0]
            meta = sandbox.meta
            for name in sorted({c.name for c in record.containers}):
                out.append((uid, meta.namespace, meta.name, name, Path(sandbox.log_directory) / name))
        return out
