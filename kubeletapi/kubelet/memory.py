"""Wiring of the memory manager: from the configuration and the machine's NUMA topology to a
cm.memorymanager.MemoryManager, and the admit handler the pod manager offers new pods to."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kubeletapi.api.core_v1 import Pod
from kubeletapi.cm.memorymanager.manager import (
    POLICY_NONE,
    POLICY_STATIC,
    MemoryManager,
    node_allocatable_reservation,
)
from kubeletapi.cm.memorymanager.topology import read_topology
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import StartupError
from kubeletapi.pods.admission import Refusal


def memory_manager(cfg: KubeletConfiguration, opts: NodeOptions, memory_capacity: int,
                   sources_ready: Callable[[], bool]) -> MemoryManager:
    """NewManager + Start: StartupError (exit 1) with the kubelet's message when it cannot run."""
    policy = cfg.memory_manager_policy
    if policy == "BestEffort":  # the Windows-only policy
        raise StartupError('Failed to initialize memory manager: policy "BestEffort" is not available for '
                           'platform "linux"')
    if policy not in (POLICY_NONE, POLICY_STATIC):
        raise StartupError(f'Failed to initialize memory manager: unknown policy: "{policy}"')
    if policy == POLICY_NONE:
        return MemoryManager(policy, opts.root_dir, sources_ready=sources_ready)
    topology = read_topology(opts.numa_node_root)
    capacity = {"memory": memory_capacity}
    for node in topology:
        for pages in node.hugepages:
            capacity[pages.resource] = capacity.get(pages.resource, 0) + pages.total
    reservation = node_allocatable_reservation(cfg.kube_reserved, cfg.system_reserved, cfg.eviction_hard or {},
                                               capacity)
    reserved = [(entry.numa_node, dict(entry.limits)) for entry in cfg.reserved_memory]
    return MemoryManager(policy, opts.root_dir, topology, reservation, reserved, sources_ready)


class MemoryAdmission:
    """The topology manager's admit handler with the memory manager as its one hint provider."""

    def __init__(self, manager: MemoryManager) -> None:
        self._manager = manager

    def admit(self, pod: Pod, admitted: Sequence[Pod]) -> Refusal | None:
        verdict = self._manager.allocate(pod, admitted)
        return None if verdict is None else Refusal(*verdict)
