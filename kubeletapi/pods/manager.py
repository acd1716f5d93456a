"""The pod manager: desired pods from the sources, admission, workers, PLEG and cleanup.

- Sources send SET snapshots; the manager reconciles: a new pod gets a worker, a pod no longer
  defined is killed, a manifest that changed is a new pod (its UID is a hash of its content).
- Admission (admission.py: duplicates, maxPods, the admit handlers, who comes first) judges every
  manifest on each update; its records are GET /manifests. A pod refused (OutOfpods; an API pod
  this node cannot decode) gets a Warning event saying why, once.
- API pods (source "api") change in place (same UID, a new resourceVersion): the worker syncs
  the new version. A deleted one (deletionTimestamp) is killed with its deletionGracePeriodSeconds
  and then kept, with its final status, until the API server forgets it (bound_pods() tells the
  status sync which pods are finished and may be deleted from the API).
- Housekeeping (each sync-loop iteration): PLEG relist, pod events to workers, and, once every
  source has spoken, runtime pods that no source defines are killed (orphans).
- Probes: an admitted pod's probe workers start with its pod worker and stop when it is killed;
  a changed probe result pokes the pod's worker (poke), which syncs it (status, liveness kills).
- Statuses are the syncer's, in the status store; pods() joins them to the admitted specs.
- Eviction (evict(), the eviction manager's killPodFunc): the pod is killed with the eviction's
  grace period and then kept, Failed with reason Evicted, while its source defines it: it is
  not started again (the kubelet's evicted pods stay terminal until deleted).
- Mirror pods (apiserver mode, pods.mirror) read the static pods, the API's mirror pods and the
  static pods still stopping from here, and hear of every change through subscribe().
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from kubeletapi.api.core_v1 import TERMINAL_PHASES, Container, ObjectMeta, Pod, PodSpec, PodStatus
from kubeletapi.clock import Clock
from kubeletapi.cm.qos import qos_class
from kubeletapi.pods.admission import API_SOURCE, AdmissionObserver, ManifestRecord, PodAdmission, PodAdmitHandler
from kubeletapi.pods.apistatus import BoundPod
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.podevents import PodEvents
from kubeletapi.pods.sources import MirrorPod, PodUpdate
from kubeletapi.pods.static import is_static
from kubeletapi.pods.status import REJECTED_PREFIX, evicted_status, rejected_status
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.workers import PodWorkers
from kubeletapi.pods.workingpods import WorkingKey, count_pods, count_working
from kubeletapi.runtime import types as rt

log = logging.getLogger(__name__)
REFUSED = "PodNotSupported"  # the reason an API pod this node cannot decode is Failed with


class ProbeWorkers(Protocol):
    """Starts and stops a pod's probe workers (kubeletapi.prober.ProbeManager)."""

    def add_pod(self, pod: Pod) -> None: ...

    def remove_pod(self, uid: str) -> None: ...


class ManagerObserver(AdmissionObserver, Protocol):
    def pods_counted(self, static: bool, desired: int, active: int) -> None: ...

    def pod_restarted(self, static: bool) -> None: ...

    def pods_cleaned_up(self, working: Mapping[WorkingKey, int], orphans: int, mirror_pods: int) -> None:
        """Housekeeping's count (kubelet_working_pods, kubelet_orphaned_runtime_pods_total, kubelet_mirror_pods)."""


class PodManager:
    def __init__(
        self,
        syncer: PodSyncer,
        pleg: PLEG,
        statuses: StatusStore,
        clock: Clock,
        max_pods: int,
        sources: Sequence[str],
        observer: ManagerObserver | None = None,
        probes: ProbeWorkers | None = None,
        events: PodEvents | None = None,
    ) -> None:
        self._syncer = syncer
        self._pleg = pleg
        self._clock = clock
        self._admission = PodAdmission(max_pods, clock, pleg.cache, observer)
        self._pending_sources = set(sources)
        self._observer = observer
        self._workers: PodWorkers[Pod] = PodWorkers(syncer.sync, syncer.kill, clock, on_done=self._worker_done)
        self._snapshots: dict[str, PodUpdate] = {}
        self._desired: dict[str, Pod] = {}  # uid -> admitted pod
        self._rejected: dict[str, Pod] = {}  # uid -> pod refused at admission (shown as Failed)
        self._statuses = statuses
        self._manifests: list[ManifestRecord] = []
        self._killing: dict[str, Pod] = {}
        self._terminating: set[str] = set()  # deleted API pods being killed
        self._terminated: set[str] = set()  # deleted API pods killed: their final status awaits the API
        self._refusals: dict[str, PodStatus] = {}  # uid -> the Failed status of an API pod not decoded
        self._orphans_killing: set[str] = set()
        self._probes = probes
        self._events = events or PodEvents()
        self._refused: set[str] = set()  # uids of API pods refused (their event is posted)
        self._evicting: dict[str, str] = {}  # uid -> the eviction message, while its kill runs
        self._evicted: dict[str, Pod] = {}  # uid -> an evicted pod with its final status, kept while defined
        self._listeners: list[Callable[[], None]] = []

    def add_admitter(self, handler: PodAdmitHandler) -> None:
        """Offer every new pod to `handler` from now on (pods.admission)."""
        self._admission.add_handler(handler)

    # --- sources -------------------------------------------------------------------------------
    def apply(self, update: PodUpdate) -> None:
        self._snapshots[update.source] = update
        if update.source == API_SOURCE:
            refused = {r.api.uid for r in update.results if r.api is not None}
            self._refusals = {uid: s for uid, s in self._refusals.items() if uid in refused}
            for r in update.results:
                if r.api is not None and r.api.uid not in self._refused:
                    meta = ObjectMeta(name=r.api.name, namespace=r.api.namespace, uid=r.api.uid)
                    self._events.rejected(Pod(metadata=meta), REFUSED, r.error)
            self._refused = refused
        self._pending_sources.discard(update.source)
        self._reconcile()
        self._changed()

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call `listener` after every source update and every pod worker that finished."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    def _reconcile(self) -> None:
        admission = self._admission.admit(self._snapshots, self._desired, self._evicted, self._manifests)
        admitted, rejected, records = admission.pods, admission.rejected, admission.records
        self._evicted = admission.evicted
        for uid in list(self._desired):
            if uid in admitted:
                continue
            if uid in self._terminated:
                self._release(uid)
            elif uid not in self._terminating:
                self._kill(uid)
        for uid, pod in admitted.items():
            if pod.metadata.deletion_timestamp is not None:
                self._terminate(uid, pod)
            elif uid not in self._desired:
                self._start(uid, pod)
            elif pod is not self._desired[uid] and uid not in self._killing:
                self._workers.update(uid, pod)  # an API pod's new version
        for uid, pod in rejected.items():
            if uid not in self._rejected:  # the event has the message without the status's prefix
                self._events.rejected(pod, pod.status.reason, pod.status.message.removeprefix(REJECTED_PREFIX))
        self._desired = admitted
        self._rejected = rejected
        self._manifests = records

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self._clock.now(), dt.UTC)

    # --- workers -------------------------------------------------------------------------------
    def _start(self, uid: str, pod: Pod) -> None:
        if uid in self._killing:
            # Re-added with the same content while the old instance still terminates: it
            # starts again once the kill completes (kubelet_restarted_pods_total).
            if self._observer is not None:
                self._observer.pod_restarted(is_static(pod))
            return
        self._run(uid, pod)

    def _run(self, uid: str, pod: Pod) -> None:
        self._workers.update(uid, pod)
        if self._probes is not None:
            self._probes.add_pod(pod)

    def _kill(self, uid: str) -> None:
        pod = self._desired.get(uid)
        if pod is not None:
            self._killing[uid] = pod
        self._workers.kill(uid)
        if self._probes is not None:
            self._probes.remove_pod(uid)

    def _terminate(self, uid: str, pod: Pod) -> None:
        """Kill a deleted API pod (with the deletion's grace period) and keep it as terminated."""
        if uid in self._terminating or uid in self._terminated:
            return
        self._terminating.add(uid)
        if uid in self._killing:
            return  # already stopping
        self._killing[uid] = pod
        self._workers.update(uid, pod)  # the deleted version (its grace period), or a worker to kill it
        self._workers.kill(uid)
        if self._probes is not None:
            self._probes.remove_pod(uid)

    def _release(self, uid: str) -> None:
        self._terminated.discard(uid)
        self._statuses.remove(uid)

    def _worker_done(self, uid: str) -> None:
        self._worker_finished(uid)
        self._changed()

    def _worker_finished(self, uid: str) -> None:
        self._killing.pop(uid, None)
        self._orphans_killing.discard(uid)
        pod = self._desired.get(uid)
        if uid in self._evicting:
            self._evicted_now(uid, pod, self._evicting.pop(uid))
        elif uid in self._terminating:
            self._terminating.discard(uid)
            if pod is not None:
                self._terminated.add(uid)  # its final status stays until the API server forgets it
                return
        elif pod is not None:  # defined again meanwhile
            self._statuses.remove(uid)
            self._run(uid, pod)
            return
        self._statuses.remove(uid)

    def _evicted_now(self, uid: str, pod: Pod | None, message: str) -> None:
        """The evicted pod's kill is done: it leaves the admitted pods, Failed (Evicted)."""
        final = self._statuses.get(uid)  # the syncer wrote it evicted (set_final_status)
        self._statuses.remove(uid)
        if pod is None or uid not in self._desired:
            return  # its source dropped it meanwhile
        del self._desired[uid]
        status = final if final is not None else evicted_status(None, message, self._now(),
                                                                  pod.metadata.generation or 0)
        if not status.qos_class:
            status.qos_class = qos_class(pod)
        self._evicted[uid] = pod.model_copy(update={"status": status})

    # --- eviction ------------------------------------------------------------------------------
    def active_pods(self) -> list[Pod]:
        """What eviction ranks: the kubelet's GetActivePods (filterOutInactivePods: no pod that ran
        to completion) less the pods being killed, which an eviction could not stop any sooner
        (their specs, as admitted)."""
        gone = set(self._killing) | self._terminating
        return [pod for uid, pod in self._desired.items() if uid not in gone and self._active(uid, pod)]

    async def evict(self, pod: Pod, grace_s: int, message: str) -> bool:
        """Kill an admitted pod with `grace_s` (the eviction's grace period, as the kubelet's
        gracePeriodOverride) and keep it as Failed, reason Evicted, `message`; returns once its
        containers are stopped and removed (False: not an admitted pod, or already stopping)."""
        uid = pod.metadata.uid
        admitted = self._desired.get(uid)
        if admitted is None or uid in self._killing:
            return False
        self._evicting[uid] = message
        self._killing[uid] = admitted
        generation = admitted.metadata.generation or 0
        self._syncer.set_final_status(uid, lambda final: evicted_status(final, message, self._now(), generation))
        # The grace period rides on the pod the worker kills, as a deletion's would.
        meta = admitted.metadata.model_copy(update={"deletion_grace_period_seconds": grace_s})
        self._workers.update(uid, admitted.model_copy(update={"metadata": meta}))
        self._workers.kill(uid)
        if self._probes is not None:
            self._probes.remove_pod(uid)
        await self._workers.wait_idle(uid)
        return True

    def sources_not_ready(self) -> str | None:
        """None once every source has delivered a snapshot (the kubelet's SourcesReady), else
        which have not: until then /pods may lack pods that are defined."""
        if not self._pending_sources:
            return None
        return f"pod sources not read yet: {', '.join(sorted(self._pending_sources))}"

    def known(self, uid: str) -> bool:
        """The pod is admitted, being killed, or kept for its final status (container GC leaves
        its runtime to the pod workers)."""
        return uid in self._desired or uid in self._killing or uid in self._terminated or self._workers.known(uid)

    def poke(self, uid: str) -> None:
        """Sync an admitted pod now (a probe result changed)."""
        if uid in self._desired and uid not in self._killing:
            self._workers.poke(uid)

    # --- housekeeping --------------------------------------------------------------------------
    async def housekeeping(self) -> None:
        events = await self._pleg.relist()
        for uid in {e.pod_uid for e in events}:
            if uid in self._desired:
                self._workers.poke(uid)
        if not self._pending_sources:
            orphans = self._kill_orphans()
            if self._observer is not None:
                working = count_working(self._desired, self._killing, self._terminated, self._evicted,
                                        self._orphans_killing)
                self._observer.pods_cleaned_up(working, orphans, len(self.mirror_pods() or ()))
                defined = [*self._desired.values(), *self._rejected.values(), *self._evicted.values()]
                active = [pod for uid, pod in self._desired.items() if self._active(uid, pod)]
                for static, (desired_n, active_n) in count_pods(defined, active).items():
                    self._observer.pods_counted(static, desired_n, active_n)

    def _active(self, uid: str, pod: Pod) -> bool:
        """filterOutInactivePods: not killed and kept (known terminated), and not in a terminal
        phase (a pod that ran to completion) unless its termination runs."""
        if uid in self._terminated:
            return False
        if uid in self._killing or uid in self._terminating:
            return True
        status = self._statuses.get(uid)
        return pod.status.phase not in TERMINAL_PHASES and (status is None or status.phase not in TERMINAL_PHASES)

    def _kill_orphans(self) -> int:
        """Kill the runtime's pods no source defines; returns how many no pod worker knew."""
        orphans = 0
        for uid, record in list(self._pleg.cache.items()):
            if uid in self._desired or uid in self._killing or uid in self._orphans_killing or not uid:
                continue
            if not record.sandboxes and not record.containers:
                continue
            pod = self._orphan_pod(uid, record.sandboxes, record.containers)
            log.info("killing runtime pod %s/%s (%s): no source defines it", pod.metadata.namespace,
                     pod.metadata.name, uid)
            self._orphans_killing.add(uid)
            self._killing[uid] = pod
            if not self._workers.known(uid):
                self._workers.update(uid, pod)  # a worker to carry the kill
                orphans += 1
            self._workers.kill(uid)
        return orphans

    def _orphan_pod(self, uid: str, sandboxes: Sequence[rt.Sandbox], containers: Sequence[rt.ContainerStatus]) -> Pod:
        meta = sandboxes[0].meta if sandboxes else rt.PodMeta("", "", uid)
        grace = min((int(c.annotations.get(rt.GRACE_PERIOD, "30")) for c in containers), default=30)
        return Pod(
            metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=uid),
            spec=PodSpec(containers=[Container(name=c.name, image=c.image) for c in containers],
                         termination_grace_period_seconds=grace),
        )

    async def stop(self) -> None:
        await self._workers.stop()

    # --- queries -------------------------------------------------------------------------------
    def pods(self) -> list[Pod]:
        """Admitted pods with their latest status, then pods refused at admission."""
        out = []
        for uid, pod in self._desired.items():
            status = self._statuses.get(uid)
            out.append(pod.model_copy(update={"status": status}) if status is not None else pod)
        return out + list(self._evicted.values()) + list(self._rejected.values())

    def bound_pods(self) -> list[BoundPod]:
        """The API server's pods with this node's status for them (the status sync's view): an
        admitted pod's latest status, a refused pod's Failed status."""
        update = self._snapshots.get(API_SOURCE)
        out: list[BoundPod] = []
        for result in update.results if update is not None else ():
            pod = result.pod
            if pod is None:
                if result.api is not None:
                    ref = result.api
                    failed = self._refusals.setdefault(ref.uid, rejected_status(REFUSED, result.error, self._now()))
                    out.append(BoundPod(ref.namespace, ref.name, ref.uid, failed, None, ref.deleting, True))
                continue
            meta = pod.metadata
            uid = meta.uid
            refused = self._rejected.get(uid) or self._evicted.get(uid)
            if refused is not None:
                status: PodStatus | None = refused.status
                finished = True
            elif uid in self._desired and self._desired[uid] is pod:
                status, finished = self._statuses.get(uid), uid in self._terminated
            else:
                continue  # a duplicate of another pod's name or UID: not this node's to report
            out.append(BoundPod(meta.namespace, meta.name, uid, status, pod.status,
                                meta.deletion_timestamp is not None, finished))
        return out

    def holding_resources(self) -> dict[str, Pod]:
        """Pods admitted or still being stopped, by UID: whose resources (memory pinned by the
        memory manager) stay held."""
        return {**self._killing, **self._desired}

    def static_pods(self) -> list[Pod]:
        """The admitted static pods (file and URL sources), without their status."""
        return [pod for pod in self._desired.values() if is_static(pod)]

    def static_stopping(self) -> set[tuple[str, str]]:
        """(namespace, name) of static pods no longer defined whose containers are still being killed."""
        return {(p.metadata.namespace, p.metadata.name) for p in self._killing.values() if is_static(p)}

    def mirror_pods(self) -> Sequence[MirrorPod] | None:
        """The API server's mirror pods of this node; None until its pods were listed."""
        update = self._snapshots.get(API_SOURCE)
        return update.mirrors if update is not None else None

    def manifests(self) -> list[ManifestRecord]:
        return list(self._manifests)

    def spec(self, uid: str) -> Pod | None:
        """The admitted pod with that UID (its spec; no status)."""
        return self._desired.get(uid)

    def find(self, namespace: str, name: str) -> Pod | None:
        """The admitted (or refused) pod of that name, without its status."""
        for pod in (*self._desired.values(), *self._evicted.values(), *self._rejected.values()):
            if pod.metadata.namespace == namespace and pod.metadata.name == name:
                return pod
        return None

