"""The kubelet's event recorder: record now, post later, never block the caller.

As client-go's legacy broadcaster with StartRecordingToSink (tools/record/event.go):
- recording builds the Event at once (its time, its name) and queues it; the queue holds 1000
  (maxQueuedEvents), an event that finds it full is dropped and counted;
- one sender takes the events in order: correlates them (correlator.py), then creates the event
  (POST namespaces/<ns>/events) or, for a repeat, patches its count (a strategic merge patch;
  NotFound: created afresh), and remembers what the API server stored;
- a send that cannot reach the API server is tried again 10 s later (the first wait drawn at
  random within it), 12 tries in all, then dropped; an answer that refuses the event (invalid,
  AlreadyExists, namespace terminating, forbidden) is final. The sink is the API client of
  eventRecordQPS and eventBurst, whose rate limit paces the sends.
Without an API server (a standalone node) NullRecorder takes the events and does nothing.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.clock import Clock
from kubeletapi.errors import Conflict, KubeletError, NotFound, Unavailable
from kubeletapi.events.correlator import Correlated, EventCorrelator
from kubeletapi.events.model import DEFAULT_NAMESPACE, Event, ObjectRef, container_ref, event_name, node_ref, pod_ref
from kubeletapi.events.reasons import TYPES

log = logging.getLogger(__name__)

COMPONENT = "kubelet"  # server.ComponentKubelet
QUEUE_SIZE = 1000  # maxQueuedEvents
MAX_TRIES = 12  # maxTriesPerEvent
RETRY_S = 10.0  # defaultSleepDuration

Json = dict[str, Any]


class EventSink(Protocol):
    """Where events go (apiclient.ApiClient)."""

    async def create(self, path: str, body: Json) -> Json: ...

    async def patch(self, path: str, body: Json) -> Json: ...


@dataclass
class EventCounts:
    """What became of the events recorded (the kubeletapi_events_* metrics read these)."""

    sent: int = 0  # created or patched
    filtered: int = 0  # dropped by the spam filter
    dropped_queue_full: int = 0
    dropped_retries: int = 0  # the API server could not be reached in 12 tries
    dropped_rejected: int = 0  # the API server refused them
    queued: int = 0


class EventRecorder:
    def __init__(self, sink: EventSink, clock: Clock, host: str, *, component: str = COMPONENT,
                 correlator: EventCorrelator | None = None, rng: random.Random | None = None,
                 queue_size: int = QUEUE_SIZE, max_tries: int = MAX_TRIES, retry_s: float = RETRY_S) -> None:
        self._sink = sink
        self._clock = clock
        self._host = host
        self._component = component
        self._correlator = correlator or EventCorrelator(clock)
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not security
        self._queue: asyncio.Queue[Event] = asyncio.Queue(queue_size)
        self._max_tries = max_tries
        self._retry_s = retry_s
        self._last_ns = 0
        self._counts = EventCounts()
        self._overflowing = False

    # --- recording (any caller, never blocks) --------------------------------------------------
    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.record(pod_ref(pod), event_type, reason, message)

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None:
        self.record(container_ref(pod, container), event_type, reason, message)

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        self.record(node_ref(self._host), event_type, reason, message)

    def record(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None:
        if event_type not in TYPES:
            log.error("Unsupported event type %r (reason %s): not recorded", event_type, reason)
            return
        now = self._clock.now()
        self._last_ns = max(int(now * 1e9), self._last_ns + 1)  # a name of its own, even within a nanosecond
        event = Event(namespace=ref.namespace or DEFAULT_NAMESPACE, name=event_name(ref.name, self._last_ns),
                      involved=ref, type=event_type, reason=reason, message=message, component=self._component,
                      host=self._host, first_timestamp=now, last_timestamp=now,
                      reporting_component=self._component, reporting_instance=self._host)
        log.debug("Event occurred: object=%s/%s fieldPath=%s kind=%s type=%s reason=%s message=%s", ref.namespace,
                  ref.name, ref.field_path, ref.kind, event_type, reason, message)
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self._counts.dropped_queue_full += 1
            if not self._overflowing:  # once per overflow, not once per event
                log.error("Unable to record event: too many queued events, dropped event (%s %s on %s/%s)",
                          event_type, reason, ref.namespace, ref.name)
            self._overflowing = True
            return
        self._overflowing = False

    @property
    def counts(self) -> EventCounts:
        return replace(self._counts, queued=self._queue.qsize())

    # --- sending -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Send the queued events, one at a time, until cancelled."""
        while True:
            await self._send_one(await self._queue.get())

    async def drain(self) -> None:
        """Send every event queued now, then return."""
        while not self._queue.empty():
            await self._send_one(self._queue.get_nowait())

    async def _send_one(self, event: Event) -> None:
        try:
            await self._send(event)
        except Exception:  # one bad event never ends the sender
            log.exception("sending event %s failed", event.name)

    async def _send(self, event: Event) -> None:
        correlated = self._correlator.correlate(event)
        if correlated is None:
            self._counts.filtered += 1
            return
        tries = 0
        while not await self._post(correlated):
            tries += 1
            if tries >= self._max_tries:
                log.error("Unable to write event %s (%s %s on %s/%s): retry limit exceeded", event.name, event.type,
                          event.reason, event.namespace, event.involved.name)
                self._counts.dropped_retries += 1
                return
            # The first wait is drawn at random, so that nodes do not all retry at once.
            delay = self._retry_s * (self._rng.random() if tries == 1 else 1.0)
            await self._clock.sleep(delay)

    async def _post(self, correlated: Correlated) -> bool:
        """One attempt: True when the event is stored or given up, False to try again."""
        event = correlated.event
        base = f"/api/v1/namespaces/{event.namespace}/events"
        try:
            stored = None
            if event.count > 1 and correlated.patch is not None:
                try:
                    stored = await self._sink.patch(f"{base}/{event.name}", correlated.patch)
                except NotFound:
                    stored = None  # the event expired meanwhile: create it again
            if stored is None:
                stored = await self._sink.create(base, replace(event, resource_version="").to_wire())
        except Unavailable as exc:
            log.warning("Unable to write event %s (may retry after sleeping): %s", event.name, exc)
            return False
        except KubeletError as exc:
            self._rejected(event, exc)
            return True
        self._correlator.update_state(_as_stored(event, stored))
        self._counts.sent += 1
        return True

    def _rejected(self, event: Event, exc: KubeletError) -> None:
        self._counts.dropped_rejected += 1
        quiet = isinstance(exc, Conflict) or "being terminated" in str(exc)  # AlreadyExists, NamespaceTerminating
        log.log(logging.DEBUG if quiet else logging.WARNING, "Server rejected event %s (%s %s on %s/%s), will not "
                "retry: %s", event.name, event.type, event.reason, event.namespace, event.involved.name, exc)


def _as_stored(event: Event, stored: Json) -> Event:
    meta = stored.get("metadata") or {}
    count = stored.get("count")
    return replace(event, name=str(meta.get("name") or event.name),
                   resource_version=str(meta.get("resourceVersion") or ""),
                   count=count if isinstance(count, int) else event.count)


class NullRecorder:
    """The recorder of a node without an API server: events are not posted (the log lines
    beside each emitter stay the record)."""

    def pod_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        pass

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None:
        pass

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        pass
