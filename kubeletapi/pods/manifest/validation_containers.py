"""Container validation (app, init, sidecar and ephemeral containers): names, images, ports,
volume mounts, probes and lifecycle hooks, as pkg/apis/core/validation checks them.

Deliberate difference from the API server: volumeMounts[].mountPath must be absolute.
"""

from __future__ import annotations

import re

from kubeletapi.api.core_v1 import (
    Container,
    ContainerPort,
    LifecycleHandler,
    PodSpec,
    Probe,
    VolumeMount,
    wire_name,
)
from kubeletapi.pods.manifest.errors import FieldErrors, check_enum
from kubeletapi.pods.manifest.formats import dns1123_label, port_name, port_number, regex_error
from kubeletapi.pods.manifest.validation_env import validate_env, validate_env_from
from kubeletapi.pods.manifest.validation_resources import validate_resources

_NOT_FOR_INIT = "may not be set for init containers without restartPolicy=Always"


def validate_containers(spec: PodSpec, volumes: set[str], errs: FieldErrors) -> None:
    if not spec.containers:
        errs.required("spec.containers")
        return
    names: set[str] = set()
    for i, container in enumerate(spec.containers):
        path = f"spec.containers[{i}]"
        _validate_container(container, path, volumes, errs)
        if container.name in names:
            errs.duplicate(f"{path}.name", container.name)
        names.add(container.name)
        _validate_probes_and_lifecycle(container, path, spec.termination_grace_period_seconds, errs)
        if container.restart_policy is not None:
            errs.forbidden(f"{path}.restartPolicy", "may not be set for non-init containers")
    seen: set[str] = set()  # host ports are unique across the app containers
    for i, container in enumerate(spec.containers):
        for j, port in enumerate(container.ports):
            key = f"{port.host_ip}/{port.protocol}/{port.host_port}"
            if port.host_port and key in seen:
                errs.duplicate(f"spec.containers[{i}].ports[{j}].hostPort", key)
            seen.add(key)


def validate_init_containers(spec: PodSpec, volumes: set[str], errs: FieldErrors) -> None:
    names = {c.name for c in spec.containers}
    for i, container in enumerate(spec.init_containers):
        path = f"spec.initContainers[{i}]"
        _validate_container(container, path, volumes, errs)
        if container.restart_policy is not None and container.restart_policy != "Always":
            errs.unsupported(f"{path}.restartPolicy", container.restart_policy, ["Always"])
        if container.name in names:
            errs.duplicate(f"{path}.name", container.name)
        elif container.name:
            names.add(container.name)
        if container.restart_policy == "Always":  # a sidecar
            _validate_probes_and_lifecycle(container, path, spec.termination_grace_period_seconds, errs)
            continue
        hooks = ("lifecycle", "liveness_probe", "readiness_probe", "startup_probe")
        for key in (wire_name(h) for h in hooks if getattr(container, h) is not None):
            errs.forbidden(f"{path}.{key}", _NOT_FOR_INIT)


def validate_ephemeral_containers(spec: PodSpec, errs: FieldErrors) -> None:
    names = {c.name for c in spec.all_containers()}
    for i, container in enumerate(spec.ephemeral_containers):
        path = f"spec.ephemeralContainers[{i}]"
        if not container.name:
            errs.required(f"{path}.name")
        else:
            errs.invalid_each(f"{path}.name", container.name, dns1123_label(container.name))
        if container.name in names:
            errs.duplicate(f"{path}.name", container.name)
        names.add(container.name)
        if not container.image:
            errs.required(f"{path}.image")


def _validate_container(c: Container, path: str, volumes: set[str], errs: FieldErrors) -> None:
    if not c.name:
        errs.required(f"{path}.name")
    else:
        errs.invalid_each(f"{path}.name", c.name, dns1123_label(c.name))
    if not c.image:
        errs.required(f"{path}.image")
    elif c.image != c.image.strip():
        errs.invalid(f"{path}.image", c.image, "must not have leading or trailing whitespace")
    policies = ["File", "FallbackToLogsOnError"]
    check_enum(errs, f"{path}.terminationMessagePolicy", c.termination_message_policy, policies)
    _validate_ports(c.ports, f"{path}.ports", errs)
    validate_env(c.env, f"{path}.env", errs)
    validate_env_from(c.env_from, f"{path}.envFrom", errs)
    _validate_volume_mounts(c.volume_mounts, f"{path}.volumeMounts", volumes, errs)
    check_enum(errs, f"{path}.imagePullPolicy", c.image_pull_policy, ["Always", "IfNotPresent", "Never"])
    validate_resources(c.resources, f"{path}.resources", errs)


def _validate_ports(ports: list[ContainerPort], path: str, errs: FieldErrors) -> None:
    names: set[str] = set()
    for i, port in enumerate(ports):
        at = f"{path}[{i}]"
        if port.name:
            problems = port_name(port.name)
            errs.invalid_each(f"{at}.name", port.name, problems)
            if not problems and port.name in names:
                errs.duplicate(f"{at}.name", port.name)
            names.add(port.name)
        if port.container_port == 0:
            errs.required(f"{at}.containerPort")
        else:
            errs.invalid_each(f"{at}.containerPort", port.container_port, port_number(port.container_port))
        if port.host_port != 0:
            errs.invalid_each(f"{at}.hostPort", port.host_port, port_number(port.host_port))
        check_enum(errs, f"{at}.protocol", port.protocol, ["SCTP", "TCP", "UDP"])


def validate_host_network_ports(spec: PodSpec, errs: FieldErrors) -> None:
    for group, containers in (("containers", spec.containers), ("initContainers", spec.init_containers)):
        for i, container in enumerate(containers):
            for j, port in enumerate(container.ports):
                if port.host_port != port.container_port:
                    detail = "must match `containerPort` when `hostNetwork` is true"
                    errs.invalid(f"spec.{group}[{i}].ports[{j}].hostPort", port.host_port, detail)


def _validate_volume_mounts(mounts: list[VolumeMount], path: str, volumes: set[str], errs: FieldErrors) -> None:
    mount_paths: set[str] = set()
    for i, mount in enumerate(mounts):
        at = f"{path}[{i}]"
        if not mount.name:
            errs.required(f"{at}.name")
        if mount.name not in volumes:
            errs.not_found(f"{at}.name", mount.name)
        if not mount.mount_path:
            errs.required(f"{at}.mountPath")
        elif not mount.mount_path.startswith("/"):
            errs.invalid(f"{at}.mountPath", mount.mount_path, "must be an absolute path")
        if mount.mount_path in mount_paths:
            errs.invalid(f"{at}.mountPath", mount.mount_path, "must be unique")
        mount_paths.add(mount.mount_path)
        if mount.sub_path.startswith("/"):
            errs.invalid(f"{at}.subPath", mount.sub_path, "must be a relative path")
        if ".." in mount.sub_path.split("/"):
            errs.invalid(f"{at}.subPath", mount.sub_path, "must not contain '..'")


# --- probes and lifecycle hooks ---


def _validate_probes_and_lifecycle(c: Container, path: str, grace: int | None, errs: FieldErrors) -> None:
    if c.lifecycle is not None:
        for key, hook in (("postStart", c.lifecycle.post_start), ("preStop", c.lifecycle.pre_stop)):
            if hook is not None:
                _validate_action(hook, hook.handlers(), f"{path}.lifecycle.{key}", grace, errs)
    for key, probe in (
        ("livenessProbe", c.liveness_probe),
        ("readinessProbe", c.readiness_probe),
        ("startupProbe", c.startup_probe),
    ):
        if probe is None:
            continue
        at = f"{path}.{key}"
        _validate_action(probe, probe.handlers(), at, grace, errs)
        for field in (
            "initial_delay_seconds",
            "timeout_seconds",
            "period_seconds",
            "success_threshold",
            "failure_threshold",
        ):
            if (value := getattr(probe, field)) < 0:
                errs.invalid(f"{at}.{wire_name(field)}", value, "must be greater than or equal to 0")
        if probe.termination_grace_period_seconds is not None and probe.termination_grace_period_seconds <= 0:
            errs.invalid(
                f"{at}.terminationGracePeriodSeconds", probe.termination_grace_period_seconds, "must be greater than 0"
            )
        if key != "readinessProbe" and probe.success_threshold != 1:
            errs.invalid(f"{at}.successThreshold", probe.success_threshold, "must be 1")
        if key == "readinessProbe" and probe.termination_grace_period_seconds is not None:
            detail = "must not be set for readinessProbes"
            errs.invalid(f"{at}.terminationGracePeriodSeconds", probe.termination_grace_period_seconds, detail)


def _validate_action(
    obj: Probe | LifecycleHandler, handlers: list[str], path: str, grace: int | None, errs: FieldErrors
) -> None:
    """Exactly one handler; then the first one's own fields."""
    if not handlers:
        errs.required(path, "must specify a handler type")
        return
    for extra in handlers[1:]:
        errs.forbidden(f"{path}.{extra}", "may not specify more than 1 handler type")
    first = handlers[0]
    if first == "exec" and obj.exec is not None and not obj.exec.command:
        errs.required(f"{path}.exec.command")
    elif first == "httpGet" and obj.http_get is not None:
        action = obj.http_get
        if not action.path:
            errs.required(f"{path}.httpGet.path")
        _validate_port_ref(action.port, f"{path}.httpGet.port", errs)
        if action.scheme not in ("HTTP", "HTTPS"):
            errs.unsupported(f"{path}.httpGet.scheme", action.scheme, ["HTTP", "HTTPS"])
        for header in action.http_headers:
            if not re.fullmatch("[-A-Za-z0-9]+", header.name):
                msg = "a valid HTTP header must consist of alphanumeric characters or '-'"
                errs.invalid(
                    f"{path}.httpGet.httpHeaders", header.name, regex_error(msg, "[-A-Za-z0-9]+", "X-Header-Name")
                )
    elif first == "tcpSocket" and obj.tcp_socket is not None:
        _validate_port_ref(obj.tcp_socket.port, f"{path}.tcpSocket.port", errs)
    elif first == "grpc" and isinstance(obj, Probe) and obj.grpc is not None:
        errs.invalid_each(f"{path}.grpc.port", obj.grpc.port, port_number(obj.grpc.port))
    elif first == "sleep" and isinstance(obj, LifecycleHandler) and obj.sleep is not None:
        seconds = obj.sleep.seconds
        if grace is not None and not 0 <= seconds <= grace:
            detail = f"must be non-negative and less than terminationGracePeriodSeconds ({grace})"
            errs.invalid(f"{path}.sleep", seconds, detail)


def _validate_port_ref(port: int | str, path: str, errs: FieldErrors) -> None:
    """ValidatePortNumOrName."""
    errs.invalid_each(path, port, port_number(port) if isinstance(port, int) else port_name(port))
