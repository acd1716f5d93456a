"""The downward API's values: pod fields and container resources as text, as the kubelet resolves
them for env (podFieldSelectorRuntimeValue, containerResourceRuntimeValue with
defaultPodLimitsForDownwardAPI) and for downwardAPI volume files (pkg/fieldpath
ExtractFieldPathAsString, ExtractResourceValueByContainerNameAndNodeAllocatable).

- metadata.name, namespace, uid; metadata.labels and metadata.annotations whole (`key="value"`
  lines, sorted, Go-quoted) or one key (`metadata.labels['app']`, "" when absent);
- for env also spec.nodeName, spec.serviceAccountName, status.hostIP(s), status.podIP(s);
- limits/requests of cpu (ceil of millicores / divisor), memory, ephemeral-storage and
  hugepages-<size> (ceil of bytes / divisor); the divisor defaults to 1; an unset (or zero) cpu,
  memory or ephemeral-storage limit is the node's allocatable amount (for env, a pod-level limit
  first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubeletapi.api.core_v1 import Container, Pod, ResourceFieldSelector
from kubeletapi.api.quantity import Quantity
from kubeletapi.errors import InvalidInput
from kubeletapi.gofmt import go_quote
from kubeletapi.pods.manifest.formats import qualified_name

DEFAULTED_LIMITS = ("cpu", "memory", "ephemeral-storage")  # MergeContainerResourceLimits
POD_LEVEL = ("cpu", "memory")  # IsSupportedPodLevelResource
# ConvertDownwardAPIFieldLabel: the labels env may name (spec.host is spec.nodeName's old name).
_ENV_LABELS = {"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
               "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
               "status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}


@dataclass(frozen=True)
class PodAddresses:
    """What env's status.* fields read: the node's name and addresses, the pod's IPs."""

    node_name: str
    host_ips: Sequence[str]
    pod_ips: Sequence[str]


def format_map(values: Mapping[str, str]) -> str:
    """fieldpath.FormatMap: `key="value"` lines, keys sorted, values quoted as Go's %q."""
    return "\n".join(f"{key}={go_quote(values[key])}" for key in sorted(values))


def split_subscript(path: str) -> tuple[str, str | None]:
    """SplitMaybeSubscriptedPath: "metadata.labels['app']" -> ("metadata.labels", "app")."""
    if not path.endswith("']"):
        return path, None
    base, sep, key = path[:-2].partition("['")
    if not sep or not base:
        return path, None
    return base, key


def object_field(pod: Pod, path: str) -> str:
    """ExtractFieldPathAsString: the metadata fields a downwardAPI volume file may name."""
    meta = pod.metadata
    base, key = split_subscript(path)
    if key is not None:
        if base not in ("metadata.annotations", "metadata.labels"):
            raise InvalidInput(f'fieldPath "{path}" does not support subscript')
        errs = qualified_name(key.lower() if base == "metadata.annotations" else key)
        if errs:
            raise InvalidInput(f"invalid key subscript in {path}: {';'.join(errs)}")
        source = meta.annotations if base == "metadata.annotations" else meta.labels
        return source.get(key, "")
    simple = {"metadata.name": meta.name, "metadata.namespace": meta.namespace, "metadata.uid": meta.uid}
    if path in simple:
        return simple[path]
    if path in ("metadata.annotations", "metadata.labels"):
        return format_map(meta.annotations if path == "metadata.annotations" else meta.labels)
    raise InvalidInput(f"unsupported fieldPath: {path}")


def pod_field(pod: Pod, api_version: str, path: str, where: PodAddresses) -> str:
    """podFieldSelectorRuntimeValue: the value of an env var's fieldRef."""
    if api_version not in ("", "v1"):  # "" is v1 before defaulting
        raise InvalidInput(f"unsupported pod version: {api_version}")
    base, key = split_subscript(path)
    if key is not None and base not in ("metadata.annotations", "metadata.labels"):
        raise InvalidInput(f"field label does not support subscript: {path}")
    if path == "spec.host":
        path = "spec.nodeName"
    elif key is None and path not in _ENV_LABELS:
        raise InvalidInput(f"field label not supported: {path}")
    runtime = {
        "spec.nodeName": lambda: pod.spec.node_name or where.node_name,
        "spec.serviceAccountName": lambda: pod.spec.service_account_name,
        "status.hostIP": lambda: where.host_ips[0] if where.host_ips else "",
        "status.hostIPs": lambda: ",".join(where.host_ips),
        "status.podIP": lambda: where.pod_ips[0] if where.pod_ips else "",
        "status.podIPs": lambda: ",".join(where.pod_ips),
    }
    if path in runtime:
        return runtime[path]()
    return object_field(pod, path)


def resource_value(pod: Pod, container: Container | None, ref: ResourceFieldSelector,
                   allocatable: Mapping[str, Quantity], *, pod_level: bool) -> str:
    """The value of a resourceFieldRef: of `ref.container_name` if set, else of `container`
    (env's own). `pod_level`: a pod-level limit defaults an unset container limit (env)."""
    if ref.container_name:
        named = [c for c in (*pod.spec.containers, *pod.spec.init_containers) if c.name == ref.container_name]
        if not named:
            raise InvalidInput(f"container {ref.container_name} not found")
        container = named[0]
    if container is None:
        raise InvalidInput("resourceFieldRef names no container")
    defaults = dict(allocatable)
    if pod_level and pod.spec.resources is not None:
        for name in POD_LEVEL:
            limit = pod.spec.resources.limits.get(name)
            if limit is not None and not limit.is_zero() and name in defaults:
                defaults[name] = limit
    return _container_value(container, ref, defaults)


def _container_value(container: Container, ref: ResourceFieldSelector, defaults: Mapping[str, Quantity]) -> str:
    """ExtractContainerResourceValue on the container with its limits defaulted."""
    kind, _, name = ref.resource.partition(".")
    known = name in DEFAULTED_LIMITS or name.startswith("hugepages-")
    if kind not in ("limits", "requests") or not known:
        raise InvalidInput(f"unsupported container resource : {ref.resource}")
    values = container.resources.limits if kind == "limits" else container.resources.requests
    quantity = values.get(name)
    if kind == "limits" and name in DEFAULTED_LIMITS and (quantity is None or quantity.is_zero()):
        quantity = defaults.get(name, quantity)
    divisor = ref.divisor if not ref.divisor.is_zero() else Quantity.from_int(1)
    if name == "cpu":
        return str(_ceil_div(quantity.milli_value() if quantity is not None else 0, divisor.milli_value()))
    return str(_ceil_div(quantity.value() if quantity is not None else 0, divisor.value()))


def _ceil_div(amount: int, unit: int) -> int:
    return -(-amount // unit) if unit > 0 else 0
