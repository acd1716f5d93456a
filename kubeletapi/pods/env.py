"""A container's environment, as the kubelet makes it (makeEnvironmentVariables).

- envFrom first, in order: every key of the ConfigMap's data or the Secret's data, with the
  prefix (the 1.34 kubelet, RelaxedEnvironmentVariableValidation being GA, skips no key);
- then env in order, replacing: a value is expanded ($(VAR), $$) against the variables so far
  and the service variables; valueFrom reads configMapKeyRef / secretKeyRef (a missing object
  or key is skipped when optional), fieldRef (pods.fieldpath) or resourceFieldRef (unset limits
  default to the node's allocatable, or the pod-level limit);
- then the service variables not already set (pods.services): a pod from the API server waits
  for the Services to be listed once, as the kubelet does.
Any failure is the container's CreateContainerConfigError (InvalidInput) with the kubelet's
message (`configmap "x" not found`, `couldn't find key k in ConfigMap ns/x`).

A standalone node (no API server) resolves fieldRef and resourceFieldRef only: a
configMapKeyRef/secretKeyRef is "" when optional and an error otherwise, envFrom an error.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kubeletapi.api.core_v1 import Container, EnvVar, KeySelector, Pod
from kubeletapi.api.expansion import expand
from kubeletapi.api.quantity import Quantity
from kubeletapi.errors import InvalidInput, KubeletError, NotFound
from kubeletapi.pods.fieldpath import PodAddresses, pod_field, resource_value
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.payloads import secret_data
from kubeletapi.pods.static import is_static

Json = dict[str, Any]
NO_SERVICES = "services have not yet been read at least once, cannot construct envvars"


class ObjectGetter(Protocol):
    """A ConfigMap or Secret cache (pods.objectcache.ObjectCache)."""

    async def get(self, namespace: str, name: str) -> Json: ...


class ServiceVars(Protocol):
    """The cluster's Services as variables (pods.services.ServiceEnv)."""

    def synced(self) -> bool: ...

    def env(self, namespace: str, enable_service_links: bool) -> dict[str, str]: ...


class EnvResolver:
    def __init__(self, node: NodeEnv, configmaps: ObjectGetter | None = None, secrets: ObjectGetter | None = None,
                 services: ServiceVars | None = None,
                 allocatable: Callable[[], Mapping[str, Quantity]] | None = None) -> None:
        self._node = node
        self._configmaps = configmaps
        self._secrets = secrets
        self._services = services
        self._allocatable = allocatable or node.capacity

    async def environment(self, pod: Pod, container: Container) -> list[tuple[str, str]]:
        """The container's variables in order; InvalidInput says why they cannot be made."""
        try:
            return await self._environment(pod, container)
        except InvalidInput:
            raise
        except KubeletError as exc:  # the kubelet makes every failure here a config error
            raise InvalidInput(str(exc)) from exc

    async def _environment(self, pod: Pod, container: Container) -> list[tuple[str, str]]:
        service_env = self._service_env(pod)
        objects = _Objects(pod.metadata.namespace, self._configmaps, self._secrets)
        env: dict[str, str] = {}
        for source in container.env_from:
            ref = source.config_map_ref or source.secret_ref
            if ref is None:
                continue
            kind = "configmap" if source.config_map_ref is not None else "secret"
            data = await objects.data(kind, ref.name, bool(ref.optional), f"envFrom of container {container.name!r}")
            for key, text in (data or {}).items():
                env[source.prefix + key] = text
        for var in container.env:
            value = await self._value(pod, container, var, ChainMap(env, service_env), objects)
            if value is not None:
                env[var.name] = value
        return [*env.items(), *sorted((k, v) for k, v in service_env.items() if k not in env)]

    def _service_env(self, pod: Pod) -> dict[str, str]:
        if self._services is None:
            return {}
        if not is_static(pod) and not self._services.synced():
            raise InvalidInput(NO_SERVICES)
        links = pod.spec.enable_service_links is not False
        return self._services.env(pod.metadata.namespace, links)

    async def _value(self, pod: Pod, container: Container, var: EnvVar, known: Mapping[str, str],
                     objects: _Objects) -> str | None:
        """The variable's value; None when an optional source leaves it unset."""
        source = var.value_from
        if var.value or source is None:
            return expand(var.value, known)
        if source.field_ref is not None:
            addresses = PodAddresses(self._node.node_name, [self._node.node_ip], [self._node.node_ip])
            return pod_field(pod, source.field_ref.api_version, source.field_ref.field_path, addresses)
        if source.resource_field_ref is not None:
            return resource_value(pod, container, source.resource_field_ref, self._allocatable(), pod_level=True)
        if source.config_map_key_ref is not None:
            return await objects.key("configmap", source.config_map_key_ref, var)
        if source.secret_key_ref is not None:
            return await objects.key("secret", source.secret_key_ref, var)
        return ""  # fileKeyRef: the EnvFiles gate is off in 1.34, the kubelet sets ""


class _Objects:
    """The ConfigMaps and Secrets one container's env reads, each fetched once."""

    def __init__(self, namespace: str, configmaps: ObjectGetter | None, secrets: ObjectGetter | None) -> None:
        self._namespace = namespace
        self._readers = {"configmap": configmaps, "secret": secrets}
        self._seen: dict[tuple[str, str], dict[str, str] | None] = {}

    async def data(self, kind: str, name: str, optional: bool, what: str) -> dict[str, str] | None:
        """The object's data as text; None when it is missing and `optional`."""
        key = (kind, name)
        if key not in self._seen:
            reader = self._readers[kind]
            if reader is None:
                raise InvalidInput(f'{kind} "{name}": {what} needs an API server, and kubeletapi runs '
                                   "standalone (no --kubeconfig)")
            try:
                obj = await reader.get(self._namespace, name)
            except NotFound:
                if not optional:
                    raise
                obj = None
            self._seen[key] = None if obj is None else _text(kind, obj)
        return self._seen[key]

    async def key(self, kind: str, ref: KeySelector, var: EnvVar) -> str | None:
        optional = bool(ref.optional)
        if self._readers[kind] is None and optional:
            return ""  # a standalone node's optional reference (as before the API server came)
        data = await self.data(kind, ref.name, optional, f"environment variable {var.name}")
        if data is None:
            return None
        if ref.key not in data:
            if optional:
                return None
            title = "ConfigMap" if kind == "configmap" else "Secret"
            raise InvalidInput(f"couldn't find key {ref.key} in {title} {self._namespace}/{ref.name}")
        return data[ref.key]


def _text(kind: str, obj: Json) -> dict[str, str]:
    if kind == "configmap":  # env reads data only, not binaryData
        return {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
    return {k: v.decode(errors="replace") for k, v in secret_data(obj).items()}
