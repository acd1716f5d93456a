"""kubeletapi_events_*: what became of the events the node recorded, read at scrape time.

The recorder keeps plain counts (events.recorder.EventCounts); this collector reads them through
the narrow protocol below, per scrape, from a table of specs. Only a node with an API server has
a recorder that posts, so only its /metrics has these families.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kubeletapi.metrics.counts import CountsCollector
from kubeletapi.metrics.spec import MetricSpec


class EventCounts(Protocol):
    @property
    def sent(self) -> int: ...
    @property
    def filtered(self) -> int: ...
    @property
    def dropped_queue_full(self) -> int: ...
    @property
    def dropped_retries(self) -> int: ...
    @property
    def dropped_rejected(self) -> int: ...
    @property
    def queued(self) -> int: ...


SENT = MetricSpec("kubeletapi_events_sent_total", "Events the node created or updated in the API server.", "counter")
DROPPED = MetricSpec(
    "kubeletapi_events_dropped_total",
    "Events the node recorded but did not post: spam_filter (too many about one object, as the "
    "kubelet's recorder limits them), queue_full (1000 waiting already), retries (the API server "
    "could not be reached in 12 tries) or rejected (the API server refused them).", "counter", ("reason",),
)
QUEUED = MetricSpec("kubeletapi_events_queued", "Events waiting to be posted.", "gauge")

TABLE: list[tuple[MetricSpec, tuple[str, ...], Callable[[EventCounts], int]]] = [
    (SENT, (), lambda c: c.sent),
    (DROPPED, ("spam_filter",), lambda c: c.filtered),
    (DROPPED, ("queue_full",), lambda c: c.dropped_queue_full),
    (DROPPED, ("retries",), lambda c: c.dropped_retries),
    (DROPPED, ("rejected",), lambda c: c.dropped_rejected),
    (QUEUED, (), lambda c: c.queued),
]


class EventsCollector(CountsCollector[EventCounts]):
    """The kubeletapi_events_* families from `counts()`, read once per scrape; never raises."""

    def __init__(self, counts: Callable[[], EventCounts]) -> None:
        super().__init__("event", TABLE, counts)
