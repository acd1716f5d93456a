"""Pod statuses to the API server: the kubelet's status manager sync (status/status_manager.go).

- Each pod's status goes to pods/<name>/status as a strategic-merge patch with metadata.uid as
  precondition (a pod deleted and re-created under the same name is never written to), when the
  node's status changed (the status store says so at once) and on a resync every 10 s that
  compares with what the API server holds (an outage, another writer).
- The patch is computed from the API's status to the node's (the kubelet's PatchPodStatus):
  conditions the kubelet does not own (a readiness gate's, DisruptionTarget) are kept, lists the
  kubelet owns are replaced whole (`$patch: replace` for the merge lists; the atomic container
  statuses as they are), fields the node no longer reports are cleared; none is sent when
  nothing would change.
- A deleted pod whose containers are all stopped (finished) and whose final status was written
  is deleted from the API with gracePeriodSeconds 0 and the UID as precondition.
- kubelet_pod_status_sync_duration_seconds: from the first pass that found a pod's status changed
  to the pass that wrote it (or found nothing left to write), truncated to milliseconds as the
  kubelet's; several changes before one write are one observation, an outage's retries included.
- The pod startup SLI tracker (pods.startupsli) gets the pod the API server returns for every
  patch sent (the kubelet's RecordStatusUpdated), and forgets a pod that left the node
  (DeletePodStartupState).
- The API server away: nothing is lost; what is pending goes out when it answers again. A pod the
  API no longer has (404, or 409 for a UID precondition) is dropped; a Forbidden answer is
  logged with the pod named.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletapi.aio import wait_event
from kubeletapi.api.core_v1 import PodStatus
from kubeletapi.clock import Clock
from kubeletapi.errors import Conflict, Forbidden, KubeletError, NotFound

log = logging.getLogger(__name__)

RESYNC_S = 10.0  # the kubelet's syncPeriod for statuses
RETRY_S = 2.0  # the API server did not answer: try the pending writes again this soon
# PodConditionsByKubelet (pkg/kubelet/types/pod_status.go) with the feature-gated ones of 1.34.
KUBELET_CONDITIONS = frozenset({"PodScheduled", "Ready", "Initialized", "ContainersReady",
                                "PodReadyToStartContainers", "PodResizePending", "PodResizeInProgress"})
# Status fields other components own: never cleared by the node.
FOREIGN_FIELDS = frozenset({"nominatedNodeName", "resourceClaimStatuses", "extendedResourceClaimStatus"})
# Lists of patchStrategy merge, replaced whole by a `$patch: replace` element. The container
# statuses are atomic lists: a patch's list replaces the API's as it is, a directive element
# included (it would decode as an empty, nameless container status), so they are sent plain.
MERGE_LISTS = frozenset({"conditions", "podIPs", "hostIPs"})

Json = dict[str, Any]


@dataclass(frozen=True)
class BoundPod:
    """An API pod as the status sync sees it (pods.manager.PodManager.bound_pods)."""

    namespace: str
    name: str
    uid: str
    status: PodStatus | None  # what the node reports (None: not synced yet)
    reported: PodStatus | None  # what the API server holds (None: unknown)
    deleting: bool = False  # the API server has a deletionTimestamp for it
    finished: bool = False  # nothing of it runs any more: `status` is final


class BoundPods(Protocol):
    def bound_pods(self) -> list[BoundPod]: ...


class StatusSyncObserver(Protocol):
    def status_synced(self, duration_s: float) -> None:
        """A changed status reached the API server `duration_s` after the change was found."""


class StartupStates(Protocol):
    """The pod startup SLI tracker (pods.startupsli.PodStartupTracker)."""

    def status_updated(self, pod: Mapping[str, Any]) -> None: ...

    def delete(self, pod_uid: str) -> None: ...


class StatusApi(Protocol):
    """Pod status writes and deletes (apiclient.ApiClient)."""

    async def patch(self, path: str, body: Json) -> Json: ...

    async def delete(self, path: str, options: Json | None = None) -> Json: ...


def foreign_conditions(status: Mapping[str, Any]) -> list[Json]:
    """The conditions in a wire status that the kubelet does not own (kept as they are)."""
    return [c for c in status.get("conditions") or [] if c.get("type") not in KUBELET_CONDITIONS]


def status_patch(current: Mapping[str, Any], desired: Mapping[str, Any], foreign: list[Json]) -> Json:
    """The strategic-merge patch that turns the status `current` into the node's `desired`
    (both wire form), keeping the `foreign` conditions; {} when they already agree."""
    patch: Json = {}
    for key, wanted in desired.items():
        value = [*foreign, *wanted] if key == "conditions" else wanted
        if current.get(key) == value:
            continue
        if key in MERGE_LISTS:
            patch[key] = [*value, {"$patch": "replace"}]
        elif isinstance(value, dict):
            patch[key] = {**value, "$patch": "replace"}
        else:
            patch[key] = value
    for key in current:
        if key not in desired and key not in FOREIGN_FIELDS:
            patch[key] = None
    return patch


class StatusSync:
    def __init__(self, api: StatusApi, pods: BoundPods, clock: Clock, resync_s: float = RESYNC_S,
                 observer: StatusSyncObserver | None = None, startup: StartupStates | None = None) -> None:
        self._api = api
        self._startup = startup
        self._live: set[str] = set()  # the uids of the last pass's pods
        self._observer = observer
        self._changed_at: dict[str, float] = {}  # uid -> when a pass first found its status changed
        self._pods = pods
        self._clock = clock
        self._resync_s = resync_s
        self._sent: dict[str, Json] = {}  # uid -> the status last written (wire form)
        self._deleted: set[str] = set()  # uids whose DELETE the API server accepted
        self._wake = asyncio.Event()
        self._failing = ""
        self.patches = 0  # writes sent (tests and the benchmark count them)

    def notify(self) -> None:
        """A status changed: write soon (coalesced)."""
        self._wake.set()

    async def run(self) -> None:
        resync_at = self._clock.monotonic() + self._resync_s
        while True:
            wait = max(resync_at - self._clock.monotonic(), 0.0)
            await wait_event(self._wake, wait)
            self._wake.clear()
            resync = self._clock.monotonic() >= resync_at
            if resync:
                resync_at = self._clock.monotonic() + self._resync_s
            if not await self.sync(resync):
                await self._clock.sleep(RETRY_S)
                self._wake.set()

    async def sync(self, resync: bool = False) -> bool:
        """One pass over the bound pods; False when the API server could not be reached (the
        rest waits for the next pass)."""
        pods = self._pods.bound_pods()
        live = {p.uid for p in pods}
        if self._startup is not None:
            for uid in self._live - live:
                self._startup.delete(uid)
        self._live = live
        self._sent = {uid: s for uid, s in self._sent.items() if uid in live}
        self._changed_at = {uid: t for uid, t in self._changed_at.items() if uid in live}
        self._deleted &= live
        for pod in pods:
            try:
                await self._sync_pod(pod, resync)
            except (NotFound, Conflict) as exc:
                log.info("pod %s/%s (%s) is gone from the API server: %s", pod.namespace, pod.name, pod.uid, exc)
                self._sent.pop(pod.uid, None)
                self._deleted.add(pod.uid)
            except Forbidden as exc:
                log.warning("pod %s/%s: the API server forbids the node's write: %s", pod.namespace, pod.name, exc)
            except KubeletError as exc:
                if str(exc) != self._failing:
                    log.warning("pod statuses: %s; retrying", exc)
                self._failing = str(exc)
                return False
        if self._failing:
            log.info("pod statuses: the API server answers again")
            self._failing = ""
        return True

    async def _sync_pod(self, pod: BoundPod, resync: bool) -> None:
        if pod.uid in self._deleted:
            return
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        if pod.status is not None:
            desired = pod.status.to_wire()
            if self._sent.get(pod.uid) != desired:
                self._changed_at.setdefault(pod.uid, self._clock.monotonic())
            if resync or self._sent.get(pod.uid) != desired:
                reported = pod.reported.to_wire() if pod.reported is not None else {}
                # Against the API's copy on a resync (it may have been changed or lost), else
                # against what was last written (the watch may not have shown it yet).
                sent = self._sent.get(pod.uid)
                current = reported if resync or sent is None else {**sent, "conditions": [
                    *foreign_conditions(reported), *sent.get("conditions", [])]}
                patch = status_patch(current, desired, foreign_conditions(reported))
                if patch:
                    written = await self._api.patch(f"{path}/status", {"metadata": {"uid": pod.uid}, "status": patch})
                    self.patches += 1
                    if self._startup is not None:
                        self._startup.status_updated(written)
                self._sent[pod.uid] = desired
                self._synced(pod.uid)
        if pod.deleting and pod.finished and (pod.status is None or pod.uid in self._sent):
            await self._api.delete(path, {"gracePeriodSeconds": 0, "preconditions": {"uid": pod.uid}})
            self._deleted.add(pod.uid)
            log.info("pod %s/%s (%s) terminated: deleted from the API server", pod.namespace, pod.name, pod.uid)

    def _synced(self, uid: str) -> None:
        changed_at = self._changed_at.pop(uid, None)
        if changed_at is not None and self._observer is not None:
            self._observer.status_synced(math.floor((self._clock.monotonic() - changed_at) * 1000) / 1000)
