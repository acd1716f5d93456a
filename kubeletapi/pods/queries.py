"""Questions the HTTP side asks about one pod, answered from the pod manager and the pod cache
(the runtime is not listed for them): the pod by name, its container's instances, its running
container, its ready sandbox, and the runtime's pods for /runningpods.

The pod cache is at least as fresh as the status /pods shows (a sync reports from a record listed
after its own changes), so a container that /pods shows running is found here.
"""

from __future__ import annotations

from typing import Any, Protocol

from kubeletapi.api.core_v1 import Container, ObjectMeta, Pod, PodList, PodSpec
from kubeletapi.pods.podcache import PodCache, PodRecord
from kubeletapi.runtime import types as rt


class PodsByName(Protocol):
    """The pod manager's lookup (manager.PodManager)."""

    def find(self, namespace: str, name: str) -> Pod | None: ...


class PodQueries:
    def __init__(self, pods: PodsByName, cache: PodCache) -> None:
        self._pods = pods
        self._cache = cache

    def find(self, namespace: str, name: str) -> Pod | None:
        """The pod the node manages under that name (admitted, or refused at admission)."""
        return self._pods.find(namespace, name)

    def _record(self, uid: str) -> PodRecord:
        return self._cache.get(uid) or PodRecord()

    def instances(self, uid: str, container: str) -> list[rt.ContainerStatus]:
        """Every instance the runtime has of the pod's container, newest first."""
        found = [c for c in self._record(uid).containers if c.name == container]
        return sorted(found, key=lambda c: c.attempt, reverse=True)

    def running_container(self, uid: str, container: str) -> rt.ContainerStatus | None:
        """The newest running instance of the pod's container."""
        running = [c for c in self.instances(uid, container) if c.state is rt.ContainerState.RUNNING]
        return running[0] if running else None

    def ready_sandbox(self, uid: str) -> rt.Sandbox | None:
        """The pod's newest ready sandbox."""
        ready = [s for s in self._record(uid).sandboxes if s.state is rt.SandboxState.READY]
        return max(ready, key=lambda s: s.created_at) if ready else None

    def running_pods(self) -> dict[str, Any]:
        """The v1 PodList of the runtime's pods, as the kubelet's GetRunningPods: every pod with a
        ready sandbox or a running container; of its containers, the running ones' name and image
        as the runtime lists it (containerd: the image ID); `containers: null` when none runs."""
        items = []
        for uid, record in sorted(self._cache.items()):
            running = [c for c in record.containers if c.state is rt.ContainerState.RUNNING]
            ready = [s for s in record.sandboxes if s.state is rt.SandboxState.READY]
            if not running and not ready:
                continue
            sandboxes = ready or list(record.sandboxes)
            meta = sandboxes[0].meta if sandboxes else rt.PodMeta("", "", uid)
            pod = Pod(
                metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=uid),
                spec=PodSpec(containers=[Container(name=c.name, image=c.image_ref or c.image) for c in running]),
            ).to_wire()
            if not running:
                pod["spec"]["containers"] = None
            items.append(pod)
        return {**PodList().to_wire(), "items": items}
