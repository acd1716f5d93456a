"""From a pod's container spec to the runtime's ContainerConfig, as kuberuntime generates it.

- command = command + args with $(VAR) references expanded (Kubernetes rules: $$ escapes,
  unknown references stay as written);
- env as pods.env resolved it (before the config is made: it may read the API server);
- mounts from volumeMounts and the pod's prepared volumes (subPath supported);
- resources through the kubelet's cgroup mapping, and the QoS oom_score_adj;
- the kubelet's labels and annotations, including the container spec hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.api.expansion import expand
from kubeletapi.cm.oom import oom_score_adj
from kubeletapi.cm.resources import PodResources, container_resource_config
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.node import NodeEnv
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.logfiles import live_log_path


def container_hash(container: Container) -> str:
    """A stable hash of the container spec: a change restarts the container."""
    blob = json.dumps(container.to_wire(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def mounts(container: Container, volumes: Mapping[str, rt.Mount]) -> tuple[rt.Mount, ...]:
    out = []
    for vm in container.volume_mounts:
        volume = volumes.get(vm.name)
        if volume is None:
            raise InvalidInput(f"container {container.name!r} mounts unknown volume {vm.name!r}")
        host = volume.host_path
        if vm.sub_path:
            host = f"{host.rstrip('/')}/{vm.sub_path}"
        out.append(rt.Mount(vm.mount_path, host, readonly=vm.read_only or volume.readonly, tmpfs=volume.tmpfs))
    return tuple(out)


def resources(container: Container, pod: PodResources, node: NodeEnv, cpuset_mems: str = "") -> rt.Resources:
    """The container's cgroup values and oom_score_adj, from the pod's figures (computed once);
    `cpuset_mems`: the NUMA nodes the memory manager gave it."""
    amounts = pod.containers[container.name]
    cfg = container_resource_config(amounts, cfs_quota_enabled=node.cfs_quota)
    adj = oom_score_adj(pod.qos, amounts.defaulted().memory_request or 0, node.memory_capacity or 1)
    return rt.Resources(
        cpu_shares=cfg.cpu_shares, cpu_quota=cfg.cpu_quota, cpu_period=cfg.cpu_period,
        memory_limit=cfg.memory_limit, oom_score_adj=adj, cpuset_mems=cpuset_mems,
    )


def container_config(
    pod: Pod, container: Container, attempt: int, kind: str, node: NodeEnv, volumes: Mapping[str, rt.Mount],
    pod_resources: PodResources, env: Sequence[tuple[str, str]], cpuset_mems: str = "",
) -> rt.ContainerConfig:
    """The runtime config of attempt `attempt` of `container` (kind "init" or "app"), with its
    environment `env`; the pod's resource figures are computed once per sync
    (cm.resources.pod_resources)."""
    env_map = dict(env)
    spec_command = tuple(expand(part, env_map) for part in container.command)
    spec_args = tuple(expand(part, env_map) for part in container.args)
    command = (*spec_command, *spec_args)
    if not container.command:
        command = ()  # the image's entrypoint would come first: the process runtime cannot know it
    meta = pod.metadata
    grace = pod.spec.termination_grace_period_seconds
    return rt.ContainerConfig(
        name=container.name, attempt=attempt, image=container.image, command=command,
        working_dir=container.working_dir, envs=tuple(env), mounts=mounts(container, volumes),
        log_path=live_log_path(container.name, attempt), stdin=container.stdin, stdin_once=container.stdin_once,
        tty=container.tty, resources=resources(container, pod_resources, node, cpuset_mems),
        labels={rt.POD_NAME: meta.name, rt.POD_NAMESPACE: meta.namespace, rt.POD_UID: meta.uid,
                rt.CONTAINER_NAME: container.name},
        annotations={rt.CONTAINER_HASH: container_hash(container), rt.RESTART_COUNT: str(attempt),
                     rt.CONTAINER_TYPE: kind, rt.GRACE_PERIOD: str(30 if grace is None else grace)},
        spec_command=spec_command, spec_args=spec_args,
    )
