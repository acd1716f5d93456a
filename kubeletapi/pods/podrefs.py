"""The ConfigMaps and Secrets a pod references (podutil.VisitPodConfigmapNames and
VisitPodSecretNames): what the node must watch for it, and all the Node authorizer lets it read.

ConfigMaps: env configMapKeyRef, envFrom configMapRef, configMap volumes and projections.
Secrets: imagePullSecrets, env secretKeyRef, envFrom secretRef, secret volumes and projections.
Every container counts: init, app and ephemeral.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubeletapi.api.core_v1 import Container, Pod


def _containers(pod: Pod) -> Iterator[Container]:
    yield from pod.spec.init_containers
    yield from pod.spec.containers
    yield from pod.spec.ephemeral_containers


def _projections(pod: Pod, key: str) -> Iterator[dict[str, Any]]:
    for volume in pod.spec.volumes:
        sources = (volume.projected or {}).get("sources") or []
        for source in sources:
            ref = source.get(key) if isinstance(source, dict) else None
            if isinstance(ref, dict):
                yield ref


def configmap_names(pod: Pod) -> set[str]:
    names: set[str] = set()
    for c in _containers(pod):
        names.update(e.config_map_ref.name for e in c.env_from if e.config_map_ref is not None)
        names.update(v.value_from.config_map_key_ref.name for v in c.env
                     if v.value_from is not None and v.value_from.config_map_key_ref is not None)
    names.update(str(v.config_map.get("name") or "") for v in pod.spec.volumes if v.config_map is not None)
    names.update(str(ref.get("name") or "") for ref in _projections(pod, "configMap"))
    names.discard("")
    return names


def pull_secret_names(pod: Pod) -> list[str]:
    """The names of the pod's imagePullSecrets, in order (empty names skipped)."""
    names = (str(ref.get("name") or "") for ref in pod.spec.image_pull_secrets if isinstance(ref, dict))
    return [name for name in names if name]


def secret_names(pod: Pod) -> set[str]:
    names = set(pull_secret_names(pod))
    for c in _containers(pod):
        names.update(e.secret_ref.name for e in c.env_from if e.secret_ref is not None)
        names.update(v.value_from.secret_key_ref.name for v in c.env
                     if v.value_from is not None and v.value_from.secret_key_ref is not None)
    names.update(str(v.secret.get("secretName") or "") for v in pod.spec.volumes if v.secret is not None)
    names.update(str(ref.get("name") or "") for ref in _projections(pod, "secret"))
    names.discard("")
    return names
