"""Admission: which of the sources' manifests become the node's pods (the manager starts them).

A second manifest defining the same namespace/name, or the same UID, is rejected with the first
one named. Who is first survives restarts: a pod already admitted, then a pod the runtime already
runs (re-adopted after a restart), then the others in source and file order; so a duplicate never
displaces a running pod. Beyond maxPods a pod is rejected like the kubelet (phase Failed, reason
OutOfpods). An evicted pod stays Failed and keeps its name taken. Every rejection is kept (with its
reason) as a ManifestRecord for GET /manifests, logged once with the rejected manifest named, and
counted.

Pod admission handlers, as the kubelet's lifecycle.PodAdmitHandler: each new pod is offered to
every handler in turn; the first refusal fails it (phase Failed, the handler's reason and message,
a Warning event), like the OutOfpods check. A pod is asked about once: an admitted pod is never
re-judged (pressure that starts later evicts, it does not un-admit), and a refused pod stays
refused while its source keeps it. Handlers are the eviction manager (no BestEffort pods under
memory pressure, none under disk pressure) and the memory manager (a Guaranteed pod that cannot
fit); the composition root passes them in.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import Clock
from kubeletapi.cm.qos import qos_class
from kubeletapi.pods.podcache import PodRecord
from kubeletapi.pods.sources import ManifestResult, PodUpdate
from kubeletapi.pods.status import rejected_status

log = logging.getLogger(__name__)
API_SOURCE = "api"


@dataclass(frozen=True)
class Refusal:
    reason: str  # the Failed pod's status.reason, e.g. "Evicted", "UnexpectedAdmissionError"
    message: str  # its status.message (after the "Pod was rejected: " prefix) and the event's


class PodAdmitHandler(Protocol):
    def admit(self, pod: Pod, admitted: Sequence[Pod]) -> Refusal | None:
        """None admits `pod`; `admitted`: the pods admitted so far (the node's other pods)."""


@dataclass(frozen=True)
class ManifestRecord:
    """One manifest as an operator sees it (GET /manifests)."""

    source: str
    origin: str
    state: str  # "accepted" | "rejected"
    namespace: str = ""
    name: str = ""
    uid: str = ""
    reason: str = ""

    def to_wire(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}


class RuntimePods(Protocol):
    """What the runtime runs, by pod UID (the PLEG's pod cache)."""

    def get(self, uid: str) -> PodRecord | None: ...


class AdmissionObserver(Protocol):
    def manifest_rejected(self, source: str) -> None: ...


@dataclass
class Admitted:
    """One admission pass: the pods admitted, refused (with their Failed status) and kept evicted,
    by UID, and a record per manifest."""

    pods: dict[str, Pod] = field(default_factory=dict)
    rejected: dict[str, Pod] = field(default_factory=dict)
    evicted: dict[str, Pod] = field(default_factory=dict)
    records: list[ManifestRecord] = field(default_factory=list)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)  # (namespace, name) -> origin
    uids: dict[str, str] = field(default_factory=dict)  # uid -> "namespace/name (origin)" admitted with it

    def take(self, pod: Pod, origin: str) -> None:
        """`pod`'s name and UID are taken (by `origin`)."""
        meta = pod.metadata
        self.owners[(meta.namespace, meta.name)] = origin
        self.uids[meta.uid] = f"{meta.namespace}/{meta.name} ({origin})"


class PodAdmission:
    def __init__(self, max_pods: int, clock: Clock, running: RuntimePods,
                 observer: AdmissionObserver | None = None) -> None:
        self._max_pods = max_pods
        self._clock = clock
        self._running = running
        self._observer = observer
        self._handlers: list[PodAdmitHandler] = []
        self._held: dict[str, Refusal] = {}  # uid -> a handler's refusal, kept while defined

    def add_handler(self, handler: PodAdmitHandler) -> None:
        self._handlers.append(handler)

    def admit(
        self,
        snapshots: Mapping[str, PodUpdate],
        desired: Mapping[str, Pod],
        evicted: Mapping[str, Pod],
        previous: Sequence[ManifestRecord],
    ) -> Admitted:
        """Every manifest of `snapshots` judged; `desired`: the pods admitted until now,
        `evicted`: the pods kept evicted, `previous`: the last pass's records (a rejection
        already logged is not logged again)."""
        out = Admitted()
        known = {(r.origin, r.reason) for r in previous if r.state == "rejected"}
        for source, result in self._candidates(snapshots, desired):
            pod = result.pod
            if pod is None:
                out.records.append(self._reject_record(known, source, result.origin, result.error))
                continue
            meta = pod.metadata
            base = ManifestRecord(source, result.origin, "accepted", meta.namespace, meta.name, meta.uid)
            if meta.uid in evicted:  # an evicted pod stays Failed; its name stays taken
                out.evicted[meta.uid] = evicted[meta.uid]
                out.take(pod, result.origin)
                out.records.append(base)
            elif (reason := self._rejection(pod, out, desired)) is not None:
                out.records.append(self._reject_record(known, source, result.origin, reason, base))
            else:
                out.take(pod, result.origin)
                out.pods[meta.uid] = pod
                out.records.append(base)
        self._held = {uid: r for uid, r in self._held.items() if uid in out.rejected}
        return out

    def _rejection(self, pod: Pod, out: Admitted, desired: Mapping[str, Pod]) -> str | None:
        """Why `pod` is not admitted (its record's reason), None when it is; a pod refused with a
        Failed status joins out.rejected."""
        meta = pod.metadata
        key = (meta.namespace, meta.name)
        if key in out.owners:
            return f"pod {meta.namespace}/{meta.name} is already defined by {out.owners[key]}"
        if meta.uid in out.uids:
            return f"pod UID {meta.uid} is already used by pod {out.uids[meta.uid]}"
        if len(out.pods) >= self._max_pods:
            message = (f"Node didn't have enough resource: pods, requested: 1, used: {len(out.pods)}, "
                       f"capacity: {self._max_pods}")
            out.rejected[meta.uid] = self._failed(pod, "OutOfpods", message)
            return f"OutOfpods: {message}"
        if (refusal := self._refusal(pod, out.pods, desired)) is not None:
            out.rejected[meta.uid] = self._failed(pod, refusal.reason, refusal.message)
            return f"{refusal.reason}: {refusal.message}"
        return None

    def _refusal(self, pod: Pod, admitted: dict[str, Pod], desired: Mapping[str, Pod]) -> Refusal | None:
        """The admit handlers' verdict on a newcomer; an admitted pod is not asked again and a
        refused one stays refused."""
        uid = pod.metadata.uid
        if uid in desired or not self._handlers:
            return None
        if uid in self._held:
            return self._held[uid]
        others = list(admitted.values())
        for handler in self._handlers:
            refusal = handler.admit(pod, others)
            if refusal is not None:
                self._held[uid] = refusal
                return refusal
        return None

    def _candidates(
        self, snapshots: Mapping[str, PodUpdate], desired: Mapping[str, Pod]
    ) -> list[tuple[str, ManifestResult]]:
        """Every manifest: pods already admitted first, then pods the runtime runs (after a
        restart nothing is admitted yet, but the runtime knows which pod was running), then the
        rest by source and origin. A newcomer never displaces a pod that runs."""
        items = [(s, r) for s, update in sorted(snapshots.items()) for r in update.results]

        def rank(item: tuple[str, ManifestResult]) -> tuple[int, str, str]:
            pod = item[1].pod
            return (self._standing(pod, desired) if pod is not None else 2, item[0], item[1].origin)

        return sorted(items, key=rank)

    def _standing(self, pod: Pod, desired: Mapping[str, Pod]) -> int:
        """0: this pod (its UID, namespace and name) is admitted; 1: the runtime runs it (a
        sandbox of that UID and name); 2: a newcomer. A pod copying another's UID is a newcomer."""
        meta = pod.metadata
        admitted = desired.get(meta.uid)
        if admitted is not None:
            same = (admitted.metadata.namespace, admitted.metadata.name) == (meta.namespace, meta.name)
            return 0 if same else 2
        record = self._running.get(meta.uid)
        if record is not None and any((s.meta.namespace, s.meta.name) == (meta.namespace, meta.name)
                                      for s in record.sandboxes):
            return 1
        return 2

    def _reject_record(
        self, known: set[tuple[str, str]], source: str, origin: str, reason: str, base: ManifestRecord | None = None
    ) -> ManifestRecord:
        if (origin, reason) not in known:
            known.add((origin, reason))
            # The line names the rejected manifest first (a source's own errors already start with it).
            named = reason if reason.startswith(origin) else f"{origin}: {reason}"
            log.warning("%s rejected: %s", "pod" if source == API_SOURCE else "static pod manifest", named)
            if self._observer is not None:
                self._observer.manifest_rejected(source)
        if base is None:
            return ManifestRecord(source, origin, "rejected", reason=reason)
        return ManifestRecord(source, origin, "rejected", base.namespace, base.name, base.uid, reason)

    def _failed(self, pod: Pod, reason: str, message: str) -> Pod:
        now = dt.datetime.fromtimestamp(self._clock.now(), dt.UTC)
        return pod.model_copy(update={"status": rejected_status(reason, message, now, qos_class(pod))})
