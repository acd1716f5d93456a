"""The ConfigMaps (or Secrets) the node's pods reference, kept by one watch per object, as the
kubelet's watch-based manager does (pkg/kubelet/util/manager/watch_based_manager.go: the default
configMapAndSecretChangeDetectionStrategy, Watch).

- A pod's references are set on each of its syncs and dropped when it is removed; an object
  referenced by several pods is watched once. Its reflector LISTs the namespace with
  fieldSelector metadata.name=<name>, then WATCHes from the list's version (timeouts of 30 to 60
  minutes, the reflector's MinWatchTimeout), re-listing after 410 Gone or a failure (back-off
  0.8 s doubling to 30 s). An immutable object is not watched once read.
- get() answers from the cache; before the first list it waits up to a second (the kubelet's
  poll), then fails with "failed to sync ... cache". A missing object is NotFound with the
  kubelet's message (`configmap "x" not found`).
- A change of an object (created, modified, deleted) calls `on_change` with the UIDs of the pods
  referencing it, so their volumes are updated at once rather than on the next periodic sync;
  the first list does too if a get() gave up waiting for it.
- The Node authorizer lets a node read only objects its pods reference; a refusal (403) is logged
  with the object named (once per distinct answer), and the reflector keeps retrying.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubeletapi.aio import cancel_and_wait
from kubeletapi.clock import Clock
from kubeletapi.errors import Forbidden, Gone, KubeletError, NotFound, Unavailable

log = logging.getLogger(__name__)

SYNC_WAIT_S = 1.0  # objectCache.Get polls up to a second for the first list
MIN_WATCH_S = 1800  # ReflectorOptions.MinWatchTimeout: 30 minutes, the timeout drawn in [min, 2 min)
FIRST_BACKOFF_S = 0.8  # the reflector's back-off: 800 ms doubling to 30 s
MAX_BACKOFF_S = 30.0

Json = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)


class ObjectsApi(Protocol):
    """List and watch (apiclient.ApiClient)."""

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> Json: ...

    def watch(self, path: str, resource_version: str, params: Mapping[str, str] | None = None,
              timeout_s: int = MIN_WATCH_S) -> AsyncIterator[Json]: ...


@dataclass
class _Item:
    refs: set[str] = field(default_factory=set)  # pod UIDs
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    obj: Json | None = None
    version: str = ""
    immutable: bool = False
    gave_up: bool = False  # a get() timed out before the first list: tell the pods when it lands
    error: str = ""  # the reflector's last failure
    task: asyncio.Task[None] | None = None


def _version(obj: Json | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


class ObjectCache:
    def __init__(self, api: ObjectsApi, resource: str, kind: str, clock: Clock,
                 on_change: Callable[[set[str]], None], rand: Callable[[], float] = random.random) -> None:
        """`resource`: "configmaps" | "secrets"; `kind`: how messages name one ("configmap")."""
        self._api = api
        self._resource = resource
        self._kind = kind
        self._clock = clock
        self._on_change = on_change
        self._rand = rand
        self._items: dict[Key, _Item] = {}
        self._pods: dict[str, set[Key]] = {}  # pod UID -> what it references

    # --- references ------------------------------------------------------------------------------
    def set_references(self, pod_uid: str, namespace: str, names: Iterable[str]) -> None:
        """What the pod references now (RegisterPod): new objects are watched, objects no pod
        references any more are dropped."""
        wanted = {(namespace, name) for name in names if name}
        old = self._pods.get(pod_uid, set())
        for key in wanted - old:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = _Item()
                item.task = asyncio.create_task(self._reflect(key, item), name=f"{self._kind}-{key[0]}/{key[1]}")
            item.refs.add(pod_uid)
        for key in old - wanted:
            self._drop(key, pod_uid)
        if wanted:
            self._pods[pod_uid] = wanted
        else:
            self._pods.pop(pod_uid, None)

    def forget(self, pod_uid: str) -> None:
        """The pod is gone (UnregisterPod)."""
        for key in self._pods.pop(pod_uid, set()):
            self._drop(key, pod_uid)

    def _drop(self, key: Key, pod_uid: str) -> None:
        item = self._items.get(key)
        if item is None:
            return
        item.refs.discard(pod_uid)
        if not item.refs:
            del self._items[key]
            if item.task is not None:
                item.task.cancel()

    def watched(self) -> list[Key]:
        return sorted(self._items)

    async def stop(self) -> None:
        await cancel_and_wait(i.task for i in self._items.values() if i.task is not None)
        self._items.clear()
        self._pods.clear()

    # --- reads -----------------------------------------------------------------------------------
    async def get(self, namespace: str, name: str) -> Json:
        item = self._items.get((namespace, name))
        if item is None:
            raise Unavailable(f'object "{namespace}"/"{name}" not registered')
        if not item.synced.is_set() and not await self._wait_synced(item):
            item.gave_up = True
            why = f" ({item.error})" if item.error else ""
            raise Unavailable(f"failed to sync {self._kind} cache: timed out waiting for the condition{why}")
        if item.obj is None:
            raise NotFound(f'{self._kind} "{name}" not found')
        return item.obj

    async def _wait_synced(self, item: _Item) -> bool:
        synced = asyncio.ensure_future(item.synced.wait())
        timer = asyncio.ensure_future(self._clock.sleep(SYNC_WAIT_S))
        try:
            await asyncio.wait((synced, timer), return_when=asyncio.FIRST_COMPLETED)
        finally:
            synced.cancel()
            timer.cancel()
        return item.synced.is_set()

    # --- the reflector ---------------------------------------------------------------------------
    async def _reflect(self, key: Key, item: _Item) -> None:
        namespace, name = key
        path = f"/api/v1/namespaces/{namespace}/{self._resource}"
        params = {"fieldSelector": f"metadata.name={name}"}
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                listed = await self._api.list(path, params)
                items = [o for o in listed.get("items") or [] if isinstance(o, dict)]
                self._store(key, item, items[0] if items else None)
                backoff = FIRST_BACKOFF_S
                version = _version(listed)
                while not item.immutable:
                    version = await self._watch(key, item, path, params, version)
                return  # immutable: never changes again (the kubelet stops watching it too)
            except Gone:
                continue  # list afresh at once
            except KubeletError as exc:
                self._failed(key, item, exc)
                await self._clock.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    async def _watch(self, key: Key, item: _Item, path: str, params: Mapping[str, str], version: str) -> str:
        timeout = int(MIN_WATCH_S * (1 + self._rand()))
        async for event in self._api.watch(path, version, params, timeout):
            kind, obj = event.get("type"), event.get("object") or {}
            version = _version(obj) or version
            if kind in ("ADDED", "MODIFIED"):
                self._store(key, item, obj)
            elif kind == "DELETED":
                self._store(key, item, None)
            if item.immutable:
                break
        return version

    def _store(self, key: Key, item: _Item, obj: Json | None) -> None:
        if item.error:
            log.info("%s %s/%s: read again", self._kind, *key)
            item.error = ""
        first = not item.synced.is_set()
        changed = (obj is None) != (item.obj is None) or _version(obj) != item.version
        item.obj, item.version = obj, _version(obj)
        item.immutable = bool(obj and obj.get("immutable") is True)
        item.synced.set()
        if (changed and not first) or (first and item.gave_up):
            item.gave_up = False
            self._on_change(set(item.refs))

    def _failed(self, key: Key, item: _Item, exc: KubeletError) -> None:
        message = str(exc)
        if message != item.error:
            if isinstance(exc, Forbidden):
                log.warning("%s %s/%s: the API server refuses this node (the Node authorizer allows only "
                            "objects its pods reference): %s", self._kind, *key, message)
            else:
                log.warning("%s %s/%s: cannot read it: %s; retrying", self._kind, *key, message)
        item.error = message
