"""The recent events of each pod, kept in the agent: what the web UI's pod page shows.

A standalone node posts no events (NullRecorder) and a node with an API server posts them where
the node cannot read them back, so the agent keeps its own short record beside the recorder
(`KeptEvents` hands every event to both). Repeats are counted as `kubectl describe` shows them:
the same object (container fieldPath included), type, reason and message make one entry whose
count grows and whose last time moves (getEventKey, as the correlator counts). Bounded: per pod
the PER_POD entries seen last, for the PODS pods that had an event last; a pod's record goes with
the pod (`forget`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.clock import Clock
from kubeletapi.events.model import ObjectRef, container_ref, pod_ref, wire_time
from kubeletapi.events.reasons import TYPES

PER_POD = 50
PODS = 1000

Json = dict[str, Any]


@dataclass
class RecentEvent:
    type: str
    reason: str
    message: str
    field_path: str
    count: int
    first: float  # Unix seconds
    last: float

    def view(self) -> Json:
        """The pod page's row: firstTimestamp and lastTimestamp as the API writes them."""
        return {"type": self.type, "reason": self.reason, "message": self.message, "object": self.field_path,
                "count": self.count, "firstTimestamp": wire_time(self.first), "lastTimestamp": wire_time(self.last)}


class RecentEvents:
    def __init__(self, clock: Clock, per_pod: int = PER_POD, pods: int = PODS) -> None:
        self._clock = clock
        self._per_pod = per_pod
        self._pods = pods
        # pod UID -> (type, reason, message, fieldPath) -> entry, least recently seen first
        self._by_pod: OrderedDict[str, OrderedDict[tuple[str, str, str, str], RecentEvent]] = OrderedDict()

    def record(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None:
        """One event about a pod or one of its containers (others are not kept)."""
        if ref.kind != "Pod" or not ref.uid or event_type not in TYPES:
            return
        now = self._clock.now()
        entries = self._by_pod.pop(ref.uid, None) or OrderedDict()
        self._by_pod[ref.uid] = entries  # the pod with the newest event last
        key = (event_type, reason, message, ref.field_path)
        known = entries.pop(key, None)
        if known is None:
            known = RecentEvent(event_type, reason, message, ref.field_path, 0, now, now)
        known.count, known.last = known.count + 1, now
        entries[key] = known
        while len(entries) > self._per_pod:
            entries.popitem(last=False)
        while len(self._by_pod) > self._pods:
            self._by_pod.popitem(last=False)

    def for_pod(self, uid: str) -> list[RecentEvent]:
        """The pod's events, the one seen last first."""
        return list(reversed((self._by_pod.get(uid) or {}).values()))

    def forget(self, known: Callable[[str], bool]) -> None:
        """Drop the record of every pod the node no longer has (`known(uid)` false)."""
        for uid in [u for u in self._by_pod if not known(u)]:
            del self._by_pod[uid]


class EventRecorderLike(Protocol):
    """The recorder KeptEvents passes events on to (events.recorder.EventRecorder)."""

    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None: ...

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None: ...

    def node_event(self, event_type: str, reason: str, message: str) -> None: ...


class KeptEvents:
    """A recorder that keeps each pod event in `recent`, then passes it on to `recorder` (none on a
    standalone node)."""

    def __init__(self, recent: RecentEvents, recorder: EventRecorderLike | None) -> None:
        self.recent = recent
        self._recorder = recorder

    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.recent.record(pod_ref(pod), event_type, reason, message)
        if self._recorder is not None:
            self._recorder.pod_event(pod, event_type, reason, message)

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None:
        self.recent.record(container_ref(pod, container), event_type, reason, message)
        if self._recorder is not None:
            self._recorder.container_event(pod, container, event_type, reason, message)

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        if self._recorder is not None:
            self._recorder.node_event(event_type, reason, message)
