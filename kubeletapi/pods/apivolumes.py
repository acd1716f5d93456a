"""The volumes a pod's files come from the API server for: configMap, secret, downwardAPI and
projected (serviceAccountToken, configMap, secret, downwardAPI), as the kubelet's plugins set
them up (pkg/volume/configmap, secret, downwardapi, projected).

- Each lives in <root-dir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>; secret, downwardAPI
  and projected volumes are a tmpfs there (the kubelet wraps them in a memory emptyDir: secrets
  never touch the disk), configMap volumes a plain directory. Containers mount them read-only.
- The payload is gathered first (objects from the watch-based caches, tokens from the token
  manager), then written with the atomic writer, off the event loop. Every sync of the pod
  writes again, and only a changed payload swaps ..data: the caches poke the pods using an
  object when it changes, the token manager when a token is due, and a pod update brings new
  labels and annotations, so updates land in seconds (the kubelet remounts once a minute).
- A missing object fails the volume unless the source is optional; a failure is the kubelet's
  FailedMount message (`MountVolume.SetUp failed for volume "x" : ...`), retried with its
  back-off (0.5 s doubling to 2m2s) or as soon as a watched object changes.
- `register(pod)` tells the caches what the pod references (env and imagePullSecrets included);
  `teardown(uid)` forgets it and its tokens.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from kubeletapi.api.core_v1 import Pod, Volume
from kubeletapi.api.quantity import Quantity
from kubeletapi.api.volumes_v1 import (
    ConfigMapVolumeSource,
    DownwardAPIVolumeSource,
    ProjectedVolumeSource,
    SecretVolumeSource,
    VolumeProjection,
    parse,
)
from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput, KubeletError, NotFound
from kubeletapi.pods.atomicwriter import AtomicWriter, FileProjection
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.payloads import (
    Payload,
    aggregate,
    configmap_data,
    downward_payload,
    key_payload,
    secret_data,
)
from kubeletapi.pods.podrefs import configmap_names, secret_names
from kubeletapi.pods.tokens import TokenSpec
from kubeletapi.pods.volumes import VolumeError, setup_failed
from kubeletapi.runtime.types import Mount

Json = dict[str, Any]
PLUGIN_DIRS = {"configMap": "kubernetes.io~configmap", "secret": "kubernetes.io~secret",
               "downwardAPI": "kubernetes.io~downward-api", "projected": "kubernetes.io~projected"}
ON_TMPFS = {"secret", "downwardAPI", "projected"}
KINDS = tuple(PLUGIN_DIRS)
RETRY_FIRST_S = 0.5  # nestedpendingoperations: initialDurationBeforeRetry
RETRY_MAX_S = 122.0  # maxDurationBeforeRetry, 2m2s
DEFAULT_TOKEN_TTL_S = 3600


class ObjectReader(Protocol):
    """A ConfigMap or Secret cache (pods.objectcache.ObjectCache)."""

    def set_references(self, pod_uid: str, namespace: str, names: set[str]) -> None: ...

    def forget(self, pod_uid: str) -> None: ...

    async def get(self, namespace: str, name: str) -> Json: ...


class TokenSource(Protocol):
    """Service-account tokens (pods.tokens.TokenManager)."""

    async def token(self, spec: TokenSpec) -> str: ...

    def forget(self, pod_uid: str) -> None: ...


async def read_object(reader: ObjectReader, namespace: str, name: str, optional: bool) -> Json | None:
    """The object; None when it is missing and `optional`."""
    try:
        return await reader.get(namespace, name)
    except NotFound:
        if optional:
            return None
        raise


class ApiVolumes:
    def __init__(self, node: NodeEnv, configmaps: ObjectReader, secrets: ObjectReader, tokens: TokenSource,
                 allocatable: Callable[[], Mapping[str, Quantity]], clock: Clock,
                 run: Callable[[list[str]], None]) -> None:
        self._node = node
        self._configmaps = configmaps
        self._secrets = secrets
        self._tokens = tokens
        self._allocatable = allocatable
        self._clock = clock
        self._run = run
        self._backoff = Backoff(clock, RETRY_FIRST_S, RETRY_MAX_S, float("inf"))

    def register(self, pod: Pod) -> None:
        meta = pod.metadata
        self._configmaps.set_references(meta.uid, meta.namespace, configmap_names(pod))
        self._secrets.set_references(meta.uid, meta.namespace, secret_names(pod))

    def teardown(self, uid: str) -> None:
        self._configmaps.forget(uid)
        self._secrets.forget(uid)
        self._tokens.forget(uid)
        self._backoff.forget(f"{uid}/")

    async def setup(self, pod: Pod, volume: Volume, kind: str) -> Mount:
        """Write the volume (`kind`: one of KINDS); what the containers mount."""
        key = f"{pod.metadata.uid}/{volume.name}"
        path = self._node.pod_dir(pod.metadata.uid) / "volumes" / PLUGIN_DIRS[kind] / volume.name
        try:
            payload = await self._payload(pod, volume, kind)
            await asyncio.to_thread(self._write, path, payload, kind in ON_TMPFS)
        except (KubeletError, OSError) as exc:
            self._backoff.next(key)
            raise VolumeError(setup_failed(volume.name, str(exc)),
                              retry_s=self._backoff.current(key)) from exc
        self._backoff.forget(key)
        return Mount("", str(path), readonly=True)

    def _write(self, path: Path, payload: Payload, tmpfs: bool) -> None:
        path.mkdir(parents=True, exist_ok=True)
        if tmpfs and self._node.isolated and not os.path.ismount(path):
            self._run(["mount", "-t", "tmpfs", "tmpfs", str(path)])
        AtomicWriter(path, self._clock.now).write(payload)

    async def _payload(self, pod: Pod, volume: Volume, kind: str) -> Payload:
        where = f'volume "{volume.name}"'
        ns = pod.metadata.namespace
        try:
            if kind == "configMap":
                cm = parse(ConfigMapVolumeSource, volume.config_map, where)
                obj = await read_object(self._configmaps, ns, cm.name, bool(cm.optional))
                data = configmap_data(obj) if obj is not None else {}
                return key_payload("configmap", data, cm.items, cm.default_mode, bool(cm.optional))
            if kind == "secret":
                sec = parse(SecretVolumeSource, volume.secret, where)
                obj = await read_object(self._secrets, ns, sec.secret_name, bool(sec.optional))
                data = secret_data(obj) if obj is not None else {}
                return key_payload("secret", data, sec.items, sec.default_mode, bool(sec.optional))
            if kind == "downwardAPI":
                dapi = parse(DownwardAPIVolumeSource, volume.downward_api, where)
                return downward_payload(dapi.items, pod, dapi.default_mode, self._allocatable())
            return await self._projected(pod, parse(ProjectedVolumeSource, volume.projected, where))
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None

    async def _projected(self, pod: Pod, source: ProjectedVolumeSource) -> Payload:
        """collectData: every source's files; every failing source named in one error."""
        payload: Payload = {}
        errors: list[str] = []
        for projection in source.sources:
            try:
                payload.update(await self._projection(pod, projection, source.default_mode))
            except KubeletError as exc:
                errors.append(str(exc))
        if errors:
            raise InvalidInput(aggregate(errors))
        return payload

    async def _projection(self, pod: Pod, p: VolumeProjection, default_mode: int | None) -> Payload:
        ns = pod.metadata.namespace
        if p.secret is not None:
            obj = await read_object(self._secrets, ns, p.secret.name, bool(p.secret.optional))
            data = secret_data(obj) if obj is not None else {}
            return key_payload("secret", data, p.secret.items, default_mode, bool(p.secret.optional))
        if p.config_map is not None:
            obj = await read_object(self._configmaps, ns, p.config_map.name, bool(p.config_map.optional))
            data = configmap_data(obj) if obj is not None else {}
            return key_payload("configmap", data, p.config_map.items, default_mode, bool(p.config_map.optional))
        if p.downward_api is not None:
            return downward_payload(p.downward_api.items, pod, default_mode, self._allocatable())
        if p.service_account_token is not None:
            return await self._token(pod, p, default_mode)
        kind = "ClusterTrustBundle" if p.cluster_trust_bundle is not None else "PodCertificate"
        raise InvalidInput(f"{kind} projections are not supported by kubeletapi")

    async def _token(self, pod: Pod, p: VolumeProjection, default_mode: int | None) -> Payload:
        assert p.service_account_token is not None
        tp = p.service_account_token
        meta = pod.metadata
        spec = TokenSpec(meta.namespace, pod.spec.service_account_name or "default",
                         (tp.audience,) if tp.audience else (), tp.expiration_seconds or DEFAULT_TOKEN_TTL_S,
                         meta.name, meta.uid)
        token = await self._tokens.token(spec)
        # With an fsGroup the kubelet writes the token 0600 (and lets the ownership change open it to
        # the group); kubeletapi changes no ownership.
        fs_group = (pod.spec.security_context or {}).get("fsGroup")
        mode = 0o600 if fs_group is not None else (0o644 if default_mode is None else default_mode)
        return {tp.path: FileProjection(token.encode(), mode)}
