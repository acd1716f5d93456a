"""What the pod syncer knows of one pod: its state kept from one sync to the next (PodSyncState)
and the context of one sync (SyncContext: the pod's sandbox, its config and resources, its
volumes), which the sync's parts share (sync.py sequences the containers, starting.py starts one).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import cached_property

from kubeletapi.api.core_v1 import Pod
from kubeletapi.cm.cgroupnames import pod_cgroup_path
from kubeletapi.cm.resources import PodResources, pod_resources
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.status import PodView
from kubeletapi.runtime import types as rt

CONFIG_RETRY_S = 10.0  # a container (or its volumes) could not be set up: try again then


@dataclass
class PodSyncState:
    first_seen: float
    start_time: dt.datetime | None = None
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    reported_running: bool = False
    synced: bool = False
    # container id -> (reason, message) of an instance killed for a failed probe
    killed: dict[str, tuple[str, str]] = field(default_factory=dict)
    runtime_down: bool = False  # the last sync could not reach the runtime (logged once)
    changing: bool = False  # this sync called the runtime to change the pod
    changed: int = 0  # the pod cache's mark after the last sync that changed the pod


@dataclass
class SyncContext:
    pod: Pod
    sandbox_id: str
    view: PodView
    volumes: dict[str, rt.Mount]
    state: PodSyncState
    node: NodeEnv
    sandbox_attempt: int = 0
    init_done: bool = True

    @cached_property
    def resources(self) -> PodResources:
        return pod_resources(self.pod, pod_pids_limit=self.node.pod_pids_limit, cfs_quota_enabled=self.node.cfs_quota)

    @cached_property
    def sandbox(self) -> rt.SandboxConfig:
        """The sandbox's config (also what an image pull for the pod is given)."""
        meta, node = self.pod.metadata, self.node
        parent = pod_cgroup_path(node.cgroup_root, self.resources.qos, meta.uid) if node.isolated else ""
        cfg = self.resources.cgroup
        return rt.SandboxConfig(
            meta=rt.PodMeta(meta.name, meta.namespace, meta.uid, self.sandbox_attempt),
            hostname=self.pod.spec.hostname or meta.name[:63],
            log_directory=str(node.pod_log_dir(meta.namespace, meta.name, meta.uid)),
            cgroup_parent=parent,
            resources=rt.Resources(cpu_shares=cfg.cpu_shares, cpu_quota=cfg.cpu_quota, cpu_period=cfg.cpu_period,
                                   memory_limit=cfg.memory_limit, pids_limit=cfg.pids_limit),
            labels={rt.POD_NAME: meta.name, rt.POD_NAMESPACE: meta.namespace, rt.POD_UID: meta.uid},
            annotations=dict(meta.annotations),
            host_network=self.pod.spec.host_network,
        )

