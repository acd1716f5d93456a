"""Mirror pods: the API server's copies of this node's static pods (the kubelet's
pod/mirror_client.go, tryReconcileMirrorPods in kubelet.go, HandlePodCleanups in kubelet_pods.go).

- Every admitted static pod (file or URL source) has one mirror pod: the same namespace, name,
  labels, annotations and spec, plus the annotation kubernetes.io/config.mirror = the static
  pod's kubernetes.io/config.hash and a single controller owner reference to this node's Node
  (with its UID, without blockOwnerDeletion): what NodeRestriction admits from a node. None is
  created before the API server's pods were listed and the Node's UID is known.
- A mirror being deleted (kubectl delete) or mirroring another version of the static pod (the
  manifest changed) is deleted at once (gracePeriodSeconds 0, its UID as precondition) and
  created anew. Only the API object changes: the static pod is never touched.
- A mirror whose static pod this node no longer defines (its manifest was removed) is deleted
  once every source has been read and that static pod's containers have stopped.
- The API server away (Unavailable) ends the pass; passes resume with back-off (1 s doubling to
  30 s) and the static pods keep running. Any other refusal (Forbidden from NodeRestriction for a
  static pod that references a secret, a namespace the API does not have, a name an API pod
  holds) is logged with the mirror pod named and retried for that pod alone with back-off.
- Statuses (status/status_manager.go): a static pod is reported through its mirror pod, as a
  BoundPod under the mirror's name and UID with the mirror's API status; the status sync never
  deletes a mirror pod (it is never `deleting` nor `finished` there).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletapi.aio import wait_event
from kubeletapi.api.core_v1 import Pod, PodStatus
from kubeletapi.clock import Clock
from kubeletapi.errors import Conflict, KubeletError, NotFound, Unavailable
from kubeletapi.pods.apistatus import BoundPod
from kubeletapi.pods.sources import MirrorPod
from kubeletapi.pods.static import CONFIG_HASH, CONFIG_MIRROR

log = logging.getLogger(__name__)

PERIOD_S = 10.0  # a pass at least this often, besides every change the pod manager reports
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0  # the API server away
MAX_POD_BACKOFF_S = 120.0  # one mirror pod refused
PENDING_S = 10.0  # a mirror created but not yet seen in the API's pods is not created again this long
NODE_WAIT_S = 1.0  # the Node's UID unknown yet: look again this soon

Json = dict[str, Any]
FullName = tuple[str, str]  # (namespace, name)


class MirrorApi(Protocol):
    """Pod creation and deletion (apiclient.ApiClient)."""

    async def create(self, path: str, body: Json) -> Json: ...

    async def delete(self, path: str, options: Json | None = None) -> Json: ...


class StaticPods(Protocol):
    """What the node defines and what the API holds (pods.manager.PodManager)."""

    def static_pods(self) -> list[Pod]: ...

    def static_stopping(self) -> set[FullName]: ...

    def mirror_pods(self) -> Sequence[MirrorPod] | None: ...

    def sources_not_ready(self) -> str | None: ...


def full_name(pod: Pod) -> FullName:
    return (pod.metadata.namespace, pod.metadata.name)


def config_hash(pod: Pod) -> str:
    return pod.metadata.annotations.get(CONFIG_HASH, "")


def mirror_body(pod: Pod, node_name: str, node_uid: str) -> Json:
    """The mirror pod of the static pod `pod` (CreateMirrorPod): its metadata and spec, the
    config.mirror annotation and the controller owner reference to the Node; no status and no
    server-set metadata."""
    body = pod.to_wire()
    body.pop("status", None)
    meta = body.setdefault("metadata", {})
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "selfLink", "deletionTimestamp",
                "deletionGracePeriodSeconds", "managedFields"):
        meta.pop(key, None)
    meta["annotations"] = {**(meta.get("annotations") or {}), CONFIG_MIRROR: config_hash(pod)}
    meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid,
                                "controller": True}]
    return {**body, "apiVersion": "v1", "kind": "Pod"}


def _path(namespace: str, name: str = "") -> str:
    base = f"/api/v1/namespaces/{namespace}/pods"
    return f"{base}/{name}" if name else base


@dataclass
class _Retry:
    delay: float
    at: float
    error: str


class MirrorPods:
    def __init__(self, api: MirrorApi, pods: StaticPods, node_name: str, node_uid: Callable[[], Awaitable[str]],
                 statuses: Callable[[str], PodStatus | None], clock: Clock,
                 mirrors_changed: Callable[[], None] = lambda: None) -> None:
        """`node_uid`: the Node's UID, "" while it is not known; `statuses`: a static pod's
        status by its UID; `mirrors_changed`: called when the mirror a static pod reports
        through changes (the status sync writes to a new mirror at once)."""
        self._api = api
        self._pods = pods
        self._node_name = node_name
        self._node_uid = node_uid
        self._statuses = statuses
        self._clock = clock
        self._mirrors_changed = mirrors_changed
        self._wake = asyncio.Event()
        self._created: dict[FullName, tuple[str, float]] = {}  # created, not yet listed: (mirror uid, when)
        self._deleted: set[str] = set()  # mirror UIDs deleted that the API's pods may still list
        self._retry: dict[FullName, _Retry] = {}  # mirror pods refused, by name
        self._paused_until = float("-inf")  # the API server away: no pass before this
        self._outage_delay = FIRST_BACKOFF_S
        self._failing = ""
        self._node_wait = False  # the last pass needed the Node's UID and had none
        self._reported: set[str] = set()  # the UIDs of the mirror pods statuses were last reported to

    def notify(self) -> None:
        """Something changed (a source, the API's pods, a pod that stopped): a pass soon."""
        self._wake.set()

    async def run(self) -> None:
        while True:
            self._wake.clear()
            await self.sync()
            await wait_event(self._wake, self.next_pass_in())

    def next_pass_in(self) -> float:
        """Seconds to the next pass unless a change comes first: the next retry, the end of an
        outage's pause or of a created mirror's wait, else the period."""
        now = self._clock.monotonic()
        due = [self._paused_until, *(r.at for r in self._retry.values()),
               *(at + PENDING_S for _, at in self._created.values())]
        if self._node_wait:
            due.append(now + NODE_WAIT_S)
        # During a pause, retries that fell due wait for its end (they are past: ignored here).
        return max(min([now + PERIOD_S, *(at for at in due if at > now)]) - now, 0.05)

    async def sync(self) -> None:
        """One pass: create, replace and delete mirror pods as the static pods require."""
        mirrors = self._pods.mirror_pods()
        if mirrors is None:
            return  # the API server's pods not listed yet: which mirrors exist is unknown
        self._note(mirrors)
        now = self._clock.monotonic()
        if now < self._paused_until:
            return
        try:
            await self._reconcile(mirrors, now)
        except Unavailable as exc:
            if str(exc) != self._failing:
                log.warning("mirror pods: %s; the static pods keep running, retrying in %.0fs", exc,
                            self._outage_delay)
            self._failing = str(exc)
            self._paused_until = self._clock.monotonic() + self._outage_delay
            self._outage_delay = min(self._outage_delay * 2, MAX_BACKOFF_S)
            return
        if self._failing:
            log.info("mirror pods: the API server answers again")
            self._failing = ""
        self._outage_delay = FIRST_BACKOFF_S

    def _note(self, mirrors: Sequence[MirrorPod]) -> None:
        """Forget what the API's pods now show (created mirrors listed, deleted ones gone); tell
        the status sync when a static pod reports through another mirror."""
        listed = {m.uid for m in mirrors}
        now = self._clock.monotonic()
        self._created = {name: (uid, at) for name, (uid, at) in self._created.items()
                         if uid not in listed and now < at + PENDING_S}
        self._deleted &= listed
        reported = {b.uid for b in self.bound_pods()}
        if reported != self._reported:
            self._reported = reported
            self._mirrors_changed()

    async def _reconcile(self, mirrors: Sequence[MirrorPod], now: float) -> None:
        by_name = {(m.namespace, m.name): m for m in mirrors if m.uid not in self._deleted}
        statics = {full_name(p): p for p in self._pods.static_pods()}
        self._retry = {name: r for name, r in self._retry.items() if name in statics or name in by_name}
        self._node_wait = False
        for name, pod in statics.items():
            if self._due(name, now):
                await self._attempt(name, self._ensure(pod, by_name.get(name), now))
        if self._pods.sources_not_ready() is not None:
            return  # a source not read yet may still define the static pod of a mirror
        stopping = self._pods.static_stopping()
        for name, mirror in by_name.items():
            if name not in statics and name not in stopping and self._due(name, now):
                await self._attempt(name, self._delete(mirror, "its static pod is no longer defined"))

    def _due(self, name: FullName, now: float) -> bool:
        retry = self._retry.get(name)
        return retry is None or now >= retry.at

    async def _attempt(self, name: FullName, action: Awaitable[None]) -> None:
        """Run one mirror pod's action; a refusal is logged once and retried with back-off."""
        try:
            await action
        except Unavailable:
            raise
        except KubeletError as exc:
            previous = self._retry.get(name)
            delay = FIRST_BACKOFF_S if previous is None else min(previous.delay * 2, MAX_POD_BACKOFF_S)
            if previous is None or previous.error != str(exc):
                log.warning("mirror pod %s/%s: %s; retrying in %.0fs", *name, exc, delay)
            self._retry[name] = _Retry(delay, self._clock.monotonic() + delay, str(exc))
        else:
            if self._retry.pop(name, None) is not None:
                log.info("mirror pod %s/%s: done after earlier failures", *name)

    async def _ensure(self, pod: Pod, mirror: MirrorPod | None, now: float) -> None:
        """tryReconcileMirrorPods: replace a mirror that does not match, create a missing one."""
        if mirror is not None and (mirror.deleting or mirror.config_hash != config_hash(pod)):
            why = "it is being deleted" if mirror.deleting else "it mirrors another version of the static pod"
            await self._delete(mirror, why)
            mirror = None
        if mirror is not None:
            return
        created = self._created.get(full_name(pod))
        if created is not None and now < created[1] + PENDING_S:
            return  # created moments ago: the API's pods do not list it yet
        await self._create(pod)

    async def _create(self, pod: Pod) -> None:
        node_uid = await self._node_uid()
        if not node_uid:
            self._node_wait = True  # the Node is not registered yet (or its UID unknown)
            return
        meta = pod.metadata
        if full_name(pod) not in self._retry:  # a retry was logged with its reason
            log.info("Creating a mirror pod for static pod %s/%s", meta.namespace, meta.name)
        created = await self._api.create(_path(meta.namespace), mirror_body(pod, self._node_name, node_uid))
        uid = str((created.get("metadata") or {}).get("uid", ""))
        self._created[full_name(pod)] = (uid, self._clock.monotonic())

    async def _delete(self, mirror: MirrorPod, why: str) -> None:
        """DeleteMirrorPod: at once, and only that object (its UID; the kubelet deletes orphans
        by name alone, the UID listed is the safer precondition); one already gone or replaced by
        another is no error."""
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": mirror.uid}}
        try:
            await self._api.delete(_path(mirror.namespace, mirror.name), options)
        except (NotFound, Conflict):
            pass
        else:
            log.info("Deleted mirror pod %s/%s (%s): %s", mirror.namespace, mirror.name, mirror.uid, why)
        self._deleted.add(mirror.uid)

    # --- statuses ------------------------------------------------------------------------------
    def bound_pods(self) -> list[BoundPod]:
        """The static pods that have their mirror pod, as the status sync writes them: under the
        mirror's namespace, name and UID, with the mirror's API status as `reported`."""
        by_name = {(m.namespace, m.name): m for m in self._pods.mirror_pods() or ()}
        out = []
        for pod in self._pods.static_pods():
            mirror = by_name.get(full_name(pod))
            if (mirror is None or mirror.deleting or mirror.uid in self._deleted
                    or mirror.config_hash != config_hash(pod)):
                continue  # none yet, or one about to be replaced: nothing to report to
            out.append(BoundPod(mirror.namespace, mirror.name, mirror.uid, self._statuses(pod.metadata.uid),
                                mirror.status))
        return out
