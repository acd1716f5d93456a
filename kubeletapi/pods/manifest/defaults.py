"""The defaults the v1 scheme applies when a Pod is decoded (SetObjectDefaults_Pod).

From k8s.io/kubernetes pkg/apis/core/v1/defaults.go and the declarative defaults of types.go,
plus the image-reference parsing the kubelet uses to pick imagePullPolicy.
"""

from __future__ import annotations

import re
from typing import Any

from kubeletapi.api.core_v1 import (
    Container,
    EmptyDirVolumeSource,
    HTTPGetAction,
    Pod,
    Probe,
    ResourceRequirements,
    Volume,
)
from kubeletapi.api.fields import SCHEMAS

_REFERENCE = re.compile(
    r"^(?:(?P<domain>(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*"
    r"[a-zA-Z0-9]))*(?::[0-9]+)?)/)?(?P<path>[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)"
    r"[a-z0-9]+)*)*)(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*"
    r":[0-9a-fA-F]{32,}))?$"
)


def image_tag(image: str) -> str:
    """The tag parsers.ParseImageName reports: "latest" when there is neither tag nor digest."""
    match = _REFERENCE.match(image)
    if match is None:
        return ""  # not a valid reference: the kubelet ignores the error and sees no tag
    if match["tag"]:
        return match["tag"]
    return "" if match["digest"] else "latest"


def apply_defaults(pod: Pod) -> None:
    """Set the defaults the v1 scheme applies when a Pod is decoded (SetObjectDefaults_Pod)."""
    spec = pod.spec
    spec.dns_policy = spec.dns_policy or "ClusterFirst"
    spec.restart_policy = spec.restart_policy or "Always"
    if spec.security_context is None:
        spec.security_context = {}
    if spec.termination_grace_period_seconds is None:
        spec.termination_grace_period_seconds = 30
    spec.scheduler_name = spec.scheduler_name or "default-scheduler"
    if spec.enable_service_links is None:
        spec.enable_service_links = True
    for volume in spec.volumes:
        _default_volume(volume)
    for container in spec.all_containers():
        _default_container(container, pod_level=True, host_network=spec.host_network)
    for ephemeral in spec.ephemeral_containers:
        _default_container(ephemeral, pod_level=False, host_network=False)
    _round_resources(spec.resources)
    spec.overhead = {k: q.round_up_milli() for k, q in spec.overhead.items()}
    pod.status.allocated_resources = {k: q.round_up_milli() for k, q in pod.status.allocated_resources.items()}


def _default_container(c: Container, *, pod_level: bool, host_network: bool) -> None:
    if not c.image_pull_policy:
        c.image_pull_policy = "Always" if image_tag(c.image) == "latest" else "IfNotPresent"
    c.termination_message_path = c.termination_message_path or "/dev/termination-log"
    c.termination_message_policy = c.termination_message_policy or "File"
    for port in c.ports:
        port.protocol = port.protocol or "TCP"
        if host_network and port.host_port == 0:
            port.host_port = port.container_port
    for env in c.env:
        if env.value_from is not None and env.value_from.field_ref is not None:
            env.value_from.field_ref.api_version = env.value_from.field_ref.api_version or "v1"
    if pod_level and c.resources.limits:  # SetDefaults_Pod: requests default to limits
        c.resources.requests = {**c.resources.limits, **c.resources.requests}
    _round_resources(c.resources)
    for probe in (c.liveness_probe, c.readiness_probe, c.startup_probe):
        if probe is not None:
            _default_probe(probe)
    if c.lifecycle is not None:
        for handler in (c.lifecycle.post_start, c.lifecycle.pre_stop):
            if handler is not None and handler.http_get is not None:
                _default_http_get(handler.http_get)


def _round_resources(resources: ResourceRequirements | None) -> None:
    if resources is not None:  # SetDefaults_ResourceList: round up to milli precision
        resources.limits = {k: q.round_up_milli() for k, q in resources.limits.items()}
        resources.requests = {k: q.round_up_milli() for k, q in resources.requests.items()}


def _default_probe(probe: Probe) -> None:
    probe.timeout_seconds = probe.timeout_seconds or 1
    probe.period_seconds = probe.period_seconds or 10
    probe.success_threshold = probe.success_threshold or 1
    probe.failure_threshold = probe.failure_threshold or 3
    if probe.http_get is not None:
        _default_http_get(probe.http_get)
    if probe.grpc is not None and probe.grpc.service is None:
        probe.grpc.service = ""


def _default_http_get(action: HTTPGetAction) -> None:
    action.path = action.path or "/"
    action.scheme = action.scheme or "HTTP"


_DEFAULT_MODES = {
    "secret": "SecretVolumeSource",
    "config_map": "ConfigMapVolumeSource",
    "downward_api": "DownwardAPIVolumeSource",
    "projected": "ProjectedVolumeSource",
}


def _default_volume(volume: Volume) -> None:
    if not volume.sources():
        volume.empty_dir = EmptyDirVolumeSource()
    if volume.host_path is not None and volume.host_path.type is None:
        volume.host_path.type = ""
    for name, schema in _DEFAULT_MODES.items():
        source = getattr(volume, name)
        if isinstance(source, dict) and "defaultMode" not in source:
            setattr(volume, name, _with_default(source, "defaultMode", 0o644, schema))
    sources = volume.projected.get("sources") if volume.projected else None
    for projection in sources if isinstance(sources, list) else []:
        token = projection.get("serviceAccountToken") if isinstance(projection, dict) else None
        if isinstance(token, dict) and "expirationSeconds" not in token:
            projection["serviceAccountToken"] = _with_default(
                token, "expirationSeconds", 3600, "ServiceAccountTokenProjection"
            )


def _with_default(obj: dict[str, Any], key: str, value: Any, schema: str) -> dict[str, Any]:
    """`obj` plus `key`, placed where Go's struct order puts it."""
    order = list(SCHEMAS[schema])
    merged = {**obj, key: value}
    return dict(sorted(merged.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
