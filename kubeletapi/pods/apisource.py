"""Pods from the API server: those bound to this node (spec.nodeName), listed then watched, as
the kubelet's NewSourceApiserver does once its Node exists. Every change emits the whole set
(a SET update), so the manager reconciles exactly as for static pods.

The rule of every source holds: a failed list or a broken watch is no news, the last set stays
in force (running pods are never touched because the API server is away); the source retries
with back-off (1 s doubling to 30 s) and lists afresh, and a watch whose version the server no
longer has (410 Gone) lists afresh at once. Mirror pods (the API's copies of static pods,
annotation kubernetes.io/config.mirror) are not pods to run: they are reported beside the set.
Every pod of each set, mirror pods included, goes to the pod startup SLI tracker with the time
the set arrived (the kubelet's config layer calls ObservedPodOnWatch so).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from pydantic import ValidationError

from kubeletapi.api.core_v1 import PodStatus
from kubeletapi.clock import Clock
from kubeletapi.errors import Gone, InvalidInput, KubeletError
from kubeletapi.pods.manifest import decode_api_pod
from kubeletapi.pods.sources import ApiRef, Emit, ManifestResult, MirrorPod, PodUpdate
from kubeletapi.pods.static import CONFIG_MIRROR, CONFIG_SEEN, CONFIG_SOURCE, rfc3339_nano

log = logging.getLogger(__name__)
SOURCE = "api"
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
WATCH_TIMEOUT_S = 300

Json = dict[str, Any]


class PodsApi(Protocol):
    """List and watch (apiclient.ApiClient)."""

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> Json: ...

    def watch(self, path: str, resource_version: str, params: Mapping[str, str] | None = None,
              timeout_s: int = WATCH_TIMEOUT_S) -> AsyncIterator[Json]: ...


class StartupWatch(Protocol):
    """The pod startup SLI tracker (pods.startupsli.PodStartupTracker)."""

    def observed_on_watch(self, pod: Mapping[str, Any], when: float) -> None: ...


def _now(clock: Clock) -> dt.datetime:
    return dt.datetime.fromtimestamp(clock.now(), dt.UTC)


def origin(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class ApiServerSource:
    def __init__(self, api: PodsApi, node_name: str, ready: Callable[[], Awaitable[object]], clock: Clock,
                 startup: StartupWatch | None = None) -> None:
        self._api = api
        self._startup = startup
        self._params = {"fieldSelector": f"spec.nodeName={node_name}"}
        self._ready = ready
        self._clock = clock
        self._objects: dict[str, Json] = {}  # uid -> the pod object last seen
        self._results: dict[str, ManifestResult] = {}  # uid -> its decoded result (cached by resourceVersion)
        self._seen: dict[str, str] = {}  # uid -> kubernetes.io/config.seen: when this node first saw it
        self._mirrors: dict[str, tuple[str, MirrorPod]] = {}  # uid -> (resourceVersion, the mirror pod)
        self._failing = ""

    async def run(self, emit: Emit) -> None:
        await self._ready()  # the kubelet watches pods only once its Node exists
        log.info("Watching apiserver")
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                version = await self._list(emit)
                backoff = FIRST_BACKOFF_S
                while True:
                    version = await self._watch(version, emit)
            except Gone:
                log.info("pods from the API server: the watch's version is gone; listing afresh")
            except KubeletError as exc:
                if str(exc) != self._failing:
                    log.warning("pods from the API server: %s; the pods keep running, retrying in %.0fs",
                                exc, backoff)
                self._failing = str(exc)
                await self._clock.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _list(self, emit: Emit) -> str:
        listed = await self._api.list("/api/v1/pods", self._params)
        if self._failing:
            log.info("pods from the API server: listing again")
            self._failing = ""
        self._objects = {}
        for obj in listed.get("items") or []:
            if isinstance(obj, dict) and (uid := (obj.get("metadata") or {}).get("uid")):
                self._objects[uid] = obj
        emit(self._update())
        return str((listed.get("metadata") or {}).get("resourceVersion", ""))

    async def _watch(self, version: str, emit: Emit) -> str:
        """Events until the server ends the watch; the version to watch from next."""
        async for event in self._api.watch("/api/v1/pods", version, self._params, WATCH_TIMEOUT_S):
            kind, obj = event.get("type"), event.get("object") or {}
            meta = obj.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            uid = meta.get("uid")
            if not uid:
                continue
            if kind == "DELETED":
                self._objects.pop(uid, None)
            elif kind in ("ADDED", "MODIFIED"):
                self._objects[uid] = obj
            emit(self._update())
        return version

    def _update(self) -> PodUpdate:
        results = []
        mirrors = []
        seen_at = self._clock.now()
        for uid, obj in self._objects.items():
            if self._startup is not None:
                self._startup.observed_on_watch(obj, seen_at)
            annotations = (obj.get("metadata") or {}).get("annotations") or {}
            if CONFIG_MIRROR in annotations:
                mirrors.append(self._mirror(uid, obj))
                continue
            results.append(self._decoded(uid, obj))
        self._results = {r.pod.metadata.uid: r for r in results if r.pod is not None}
        self._mirrors = {m.uid: self._mirrors[m.uid] for m in mirrors}
        self._seen = {uid: seen for uid, seen in self._seen.items() if uid in self._objects}
        return PodUpdate(SOURCE, tuple(results), tuple(mirrors))

    def _mirror(self, uid: str, obj: Json) -> MirrorPod:
        """A mirror pod as the node tracks it (cached by resourceVersion): its identity, the
        static pod it mirrors and the status the API server holds for it."""
        meta = obj.get("metadata") or {}
        version = str(meta.get("resourceVersion", ""))
        cached = self._mirrors.get(uid)
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            status: PodStatus | None = PodStatus.model_validate(obj.get("status") or {}, strict=True, by_alias=True,
                                                                 by_name=False)
        except ValidationError:
            status = None  # a field this node does not know: the status sync compares with nothing
        mirror = MirrorPod(str(meta.get("namespace", "")), str(meta.get("name", "")), uid,
                           str((meta.get("annotations") or {})[CONFIG_MIRROR]), bool(meta.get("deletionTimestamp")),
                           status)
        self._mirrors[uid] = (version, mirror)
        return mirror

    def _decoded(self, uid: str, obj: Json) -> ManifestResult:
        version = (obj.get("metadata") or {}).get("resourceVersion")
        cached = self._results.get(uid)
        if cached is not None and cached.pod is not None and cached.pod.metadata.resource_version == version:
            return cached
        where = origin(obj)
        try:
            pod = decode_api_pod(obj, where)
        except InvalidInput as exc:
            meta = obj.get("metadata") or {}
            ref = ApiRef(str(meta.get("namespace", "")), str(meta.get("name", "")), uid,
                         bool(meta.get("deletionTimestamp")))
            return ManifestResult(where, error=str(exc), api=ref)
        annotations = pod.metadata.annotations
        annotations[CONFIG_SOURCE] = SOURCE  # as the kubelet's config layer marks every pod
        annotations[CONFIG_SEEN] = self._seen.setdefault(uid, rfc3339_nano(_now(self._clock)))
        return ManifestResult(where, pod=pod)
