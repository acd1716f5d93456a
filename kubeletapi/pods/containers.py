"""From a pod's container spec to the runtime's ContainerConfig, as kuberuntime generates it.

- command = command + args with $(VAR) references expanded (Kubernetes rules: $$ escapes,
  unknown references stay as written);
- env in order, each value expanded against the ones before it, valueFrom.fieldRef and
  resourceFieldRef resolved; configMap and secret references cannot be resolved without an
  API server and are a CreateContainerConfigError (InvalidInput);
- mounts from volumeMounts and the pod's prepared volumes (subPath supported);
- resources through the kubelet's cgroup mapping, and the QoS oom_score_adj;
- the kubelet's labels and annotations, including the container spec hash.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping

from kubeletapi.api.core_v1 import Container, EnvVar, Pod
from kubeletapi.api.expansion import expand
from kubeletapi.api.quantity import Quantity
from kubeletapi.cm.oom import oom_score_adj
from kubeletapi.cm.resources import PodResources, container_resource_config
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.node import NodeEnv
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.logfiles import live_log_path

_FIELD_INDEX = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def container_hash(container: Container) -> str:
    """A stable hash of the container spec: a change restarts the container."""
    blob = json.dumps(container.to_wire(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _field_ref(pod: Pod, path: str, node: NodeEnv) -> str:
    values = {
        "metadata.name": pod.metadata.name,
        "metadata.namespace": pod.metadata.namespace,
        "metadata.uid": pod.metadata.uid,
        "spec.nodeName": pod.spec.node_name or node.node_name,
        "spec.serviceAccountName": pod.spec.service_account_name,
        "status.hostIP": node.node_ip,
        "status.hostIPs": node.node_ip,
        "status.podIP": node.node_ip,  # host network: the pod's IP is the node's
        "status.podIPs": node.node_ip,
    }
    if path in values:
        return values[path]
    indexed = _FIELD_INDEX.match(path)
    if indexed:
        source = pod.metadata.labels if indexed.group(1) == "labels" else pod.metadata.annotations
        return source.get(indexed.group(2), "")
    raise InvalidInput(f"unsupported fieldRef fieldPath {path!r}")


def _resource_ref(container: Container, resource: str, divisor: Quantity, node: NodeEnv) -> str:
    kind, _, name = resource.partition(".")
    values = container.resources.limits if kind == "limits" else container.resources.requests
    quantity = values.get(name)
    if name == "cpu":
        milli = quantity.milli_value() if quantity is not None else (node.cpu_capacity_milli if kind == "limits" else 0)
        unit = divisor.milli_value() if not divisor.is_zero() else 1000
        return str(max(math.ceil(milli / unit), 1 if milli else 0))
    amount = quantity.value() if quantity is not None else (node.memory_capacity if kind == "limits" else 0)
    unit = divisor.value() if not divisor.is_zero() else 1
    return str(math.ceil(amount / unit))


def _env_value(pod: Pod, container: Container, var: EnvVar, env: Mapping[str, str], node: NodeEnv) -> str:
    source = var.value_from
    if source is None:
        return expand(var.value, env)
    if source.field_ref is not None:
        return _field_ref(pod, source.field_ref.field_path, node)
    if source.resource_field_ref is not None:
        resource = source.resource_field_ref
        return _resource_ref(container, resource.resource, resource.divisor, node)
    ref = source.config_map_key_ref or source.secret_key_ref
    kind = "configmap" if source.config_map_key_ref is not None else "secret"
    if ref is not None and ref.optional:
        return ""
    raise InvalidInput(
        f'{kind} "{ref.name if ref else ""}" not found: kubeletapi has no API server to read it from '
        f"(environment variable {var.name})"
    )


def environment(pod: Pod, container: Container, node: NodeEnv) -> list[tuple[str, str]]:
    """The container's environment, in order (a later duplicate replaces an earlier one)."""
    if container.env_from:
        raise InvalidInput(f"container {container.name!r}: envFrom needs ConfigMaps or Secrets (no API server)")
    env: dict[str, str] = {}
    for var in container.env:
        env[var.name] = _env_value(pod, container, var, env, node)
    return list(env.items())


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


def resources(container: Container, pod: PodResources, node: NodeEnv) -> rt.Resources:
    """The container's cgroup values and oom_score_adj, from the pod's figures (computed once)."""
    amounts = pod.containers[container.name]
    cfg = container_resource_config(amounts, cfs_quota_enabled=node.cfs_quota)
    adj = oom_score_adj(pod.qos, amounts.defaulted().memory_request or 0, node.memory_capacity or 1)
    return rt.Resources(
        cpu_shares=cfg.cpu_shares, cpu_quota=cfg.cpu_quota, cpu_period=cfg.cpu_period,
        memory_limit=cfg.memory_limit, oom_score_adj=adj,
    )


def container_config(
    pod: Pod, container: Container, attempt: int, kind: str, node: NodeEnv, volumes: Mapping[str, rt.Mount],
    pod_resources: PodResources,
) -> rt.ContainerConfig:
    """The runtime config of attempt `attempt` of `container` (kind "init" or "app"); the pod's
    resource figures are computed once per sync (cm.resources.pod_resources)."""
    env = environment(pod, container, node)
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
        tty=container.tty, resources=resources(container, pod_resources, node),
        labels={rt.POD_NAME: meta.name, rt.POD_NAMESPACE: meta.namespace, rt.POD_UID: meta.uid,
                rt.CONTAINER_NAME: container.name},
        annotations={rt.CONTAINER_HASH: container_hash(container), rt.RESTART_COUNT: str(attempt),
                     rt.CONTAINER_TYPE: kind, rt.GRACE_PERIOD: str(30 if grace is None else grace)},
        spec_command=spec_command, spec_args=spec_args,
    )
