"""validate_pod: pkg/apis/core/validation ValidatePod restated for the fields a node agent acts on.

This module owns the pod-level checks (metadata, spec scalars, volumes) and the order in which
ValidatePod reports problems; containers, environment and resources have their own modules.
Deliberate differences: terminationGracePeriodSeconds must be >= 0; a pod has at most
MAX_CONTAINERS containers (init, app and ephemeral together: the API server sets no number, but
every container costs the node a process, a cgroup and a log; a document beyond it is refused
before it is decoded: too_many_containers).
"""

from __future__ import annotations

from typing import Any

from kubeletapi.api.core_v1 import HostPathVolumeSource, ObjectMeta, Pod, PodSpec, Volume
from kubeletapi.pods.manifest.errors import FieldErrors, check_enum
from kubeletapi.pods.manifest.formats import dns1123_label, dns1123_subdomain, label_value, qualified_name
from kubeletapi.pods.manifest.validation_containers import (
    validate_containers,
    validate_ephemeral_containers,
    validate_host_network_ports,
    validate_init_containers,
)
from kubeletapi.pods.manifest.validation_resources import validate_quantity

MAX_CONTAINERS = 256
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def too_many_containers(doc: dict[str, Any]) -> str | None:
    """The refusal of a pod document with more than MAX_CONTAINERS containers, checked on the raw
    document so that such a pod costs no per-container decoding."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return None
    count = sum(len(v) for k in _CONTAINER_LISTS if isinstance(v := spec.get(k), list))
    if count <= MAX_CONTAINERS:
        return None
    return (f"spec.containers: Too many: {count}: must have at most {MAX_CONTAINERS} items "
            "(init, app and ephemeral containers together)")


def validate_pod(pod: Pod) -> list[str]:
    """The problems ValidatePod reports for a defaulted pod, in its order (map keys in file order)."""
    errs = FieldErrors()
    _validate_meta(pod.metadata, errs)
    spec = pod.spec
    volumes = _validate_volumes(spec.volumes, errs)
    validate_containers(spec, volumes, errs)
    validate_init_containers(spec, volumes, errs)
    validate_ephemeral_containers(spec, errs)
    if spec.host_network:
        validate_host_network_ports(spec, errs)
    check_enum(errs, "spec.restartPolicy", spec.restart_policy, ["Always", "OnFailure", "Never"])
    check_enum(errs, "spec.dnsPolicy", spec.dns_policy, ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"])
    _validate_labels(spec.node_selector, "spec.nodeSelector", errs)
    _validate_spec_scalars(spec, errs)
    return list(errs)


def _validate_meta(meta: ObjectMeta, errs: FieldErrors) -> None:
    if not meta.name:
        detail = "a static pod needs a name" if meta.generate_name else "name or generateName is required"
        errs.required("metadata.name", detail)
    else:
        errs.invalid_each("metadata.name", meta.name, dns1123_subdomain(meta.name))
    if meta.namespace:
        errs.invalid_each("metadata.namespace", meta.namespace, dns1123_label(meta.namespace))
    _validate_labels(meta.labels, "metadata.labels", errs)
    for key in meta.annotations:
        errs.invalid_each("metadata.annotations", key, qualified_name(key.lower()))
    if sum(len(k.encode()) + len(v.encode()) for k, v in meta.annotations.items()) > 256 * 1024:
        errs.append("metadata.annotations: Too long: may not be more than 262144 bytes")


def _validate_labels(labels: dict[str, str], path: str, errs: FieldErrors) -> None:
    for key, value in labels.items():
        errs.invalid_each(path, key, qualified_name(key))
        errs.invalid_each(path, value, label_value(value))


def _validate_spec_scalars(spec: PodSpec, errs: FieldErrors) -> None:
    names = (
        ("spec.serviceAccountName", spec.service_account_name, dns1123_subdomain),
        ("spec.nodeName", spec.node_name, dns1123_subdomain),
        ("spec.hostname", spec.hostname, dns1123_label),
        ("spec.subdomain", spec.subdomain, dns1123_label),
        ("spec.priorityClassName", spec.priority_class_name, dns1123_subdomain),
    )
    for path, value, check in names:
        if value:
            errs.invalid_each(path, value, check(value))
    deadline = spec.active_deadline_seconds
    if deadline is not None and not 1 <= deadline <= 2**31 - 1:
        errs.invalid("spec.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive")
    grace = spec.termination_grace_period_seconds
    if grace is not None and grace < 0:
        errs.invalid("spec.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0")
    for name, quantity in spec.overhead.items():
        validate_quantity(name, quantity, f"spec.overhead[{name}]", errs)


# --- volumes ---

_HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"]


def _validate_volumes(volumes: list[Volume], errs: FieldErrors) -> set[str]:
    """Validate spec.volumes; the names of the valid ones (mounts may only refer to those)."""
    names: set[str] = set()
    for i, volume in enumerate(volumes):
        path, local = f"spec.volumes[{i}]", FieldErrors()
        sources = volume.sources()
        if not sources:
            local.required(path, "must specify a volume type")
        for extra in sources[1:]:
            local.forbidden(f"{path}.{extra}", "may not specify more than 1 volume type")
        if volume.host_path is not None:
            _validate_host_path(volume.host_path, f"{path}.hostPath", local)
        if (
            volume.empty_dir is not None
            and volume.empty_dir.size_limit is not None
            and volume.empty_dir.size_limit.sign() < 0
        ):
            local.forbidden(f"{path}.emptyDir.sizeLimit", "SizeLimit field must be a valid resource quantity")
        if not volume.name:
            local.required(f"{path}.name")
        else:
            local.invalid_each(f"{path}.name", volume.name, dns1123_label(volume.name))
        if volume.name in names:
            local.duplicate(f"{path}.name", volume.name)
        errs.extend(local)
        if not local:
            names.add(volume.name)
    return names


def _validate_host_path(source: HostPathVolumeSource, path: str, errs: FieldErrors) -> None:
    if not source.path:
        errs.required(f"{path}.path")
        return
    if ".." in source.path.split("/"):
        errs.invalid(f"{path}.path", source.path, "must not contain '..'")
    if source.type is not None and source.type not in _HOST_PATH_TYPES:
        errs.unsupported(f"{path}.type", source.type, _HOST_PATH_TYPES)
