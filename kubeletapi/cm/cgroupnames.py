"""Names in the kubepods hierarchy (qos_container_manager_linux.go, pod_container_manager_linux.go):
Guaranteed pods sit directly in `<root>/kubepods`, the others in its `burstable` and `besteffort`
children; a pod's cgroup is `pod<uid>`, a container's is named by its ID (cgroupfs driver).
"""

from __future__ import annotations

import posixpath

from kubeletapi.cm.qos import QOSClass
from kubeletapi.errors import InvalidInput

NODE_ALLOCATABLE_CGROUP = "kubepods"
POD_CGROUP_PREFIX = "pod"
QOS_CHILDREN = {QOSClass.BURSTABLE: "burstable", QOSClass.BEST_EFFORT: "besteffort"}


def qos_parent(cgroup_root: str, qos: QOSClass) -> str:
    """The cgroup holding a QoS class's pods: Guaranteed pods sit directly in `<root>/kubepods`."""
    base = posixpath.join("/", cgroup_root or "/", NODE_ALLOCATABLE_CGROUP)
    child = QOS_CHILDREN.get(qos)
    return posixpath.join(base, child) if child else base


def pod_cgroup_name(pod_uid: str) -> str:
    """The pod cgroup's own name: `pod<uid>` (GetPodCgroupNameSuffix)."""
    if not pod_uid or "/" in pod_uid:
        raise InvalidInput(f"invalid pod UID {pod_uid!r} for a cgroup name")
    return POD_CGROUP_PREFIX + pod_uid


def pod_cgroup_path(cgroup_root: str, qos: QOSClass, pod_uid: str) -> str:
    """`/kubepods/burstable/pod<uid>` and the like."""
    return posixpath.join(qos_parent(cgroup_root, qos), pod_cgroup_name(pod_uid))


def container_cgroup_path(pod_path: str, container_id: str) -> str:
    """A container's cgroup under its pod's, named by the container ID (cgroupfs driver)."""
    if not container_id or "/" in container_id or container_id in {".", ".."}:
        raise InvalidInput(f"invalid container ID {container_id!r} for a cgroup name")
    return posixpath.join(pod_path, container_id)
