"""The EventCorrelator of client-go's record package (events_cache.go), with its defaults.

Every event goes through three steps before it is sent:
1. aggregation: events alike but for their message (same source, object, type, reason and
   reporting fields) are counted by distinct message over a rolling 10 minutes; from the 10th
   distinct message on, the event becomes one aggregate event "(combined from similar events):
   <message>", named afresh, whose later occurrences count up instead.
2. counting: an event seen before (same source, object with fieldPath, type, reason, message) is
   the same event again: it keeps the first one's name and firstTimestamp, its count goes up by
   one, and it is sent as a strategic merge patch of count, lastTimestamp and message.
3. the spam filter: a token bucket per source, object and type (not per reason) lets 25 events
   through at once and then one per 5 minutes; the rest are dropped (after being counted, so
   the next one that passes carries the whole count).
Each cache keeps its 4096 most recently used keys.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from kubeletapi.clock import Clock
from kubeletapi.events.model import Event, wire_time

LRU_SIZE = 4096
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_S = 600.0
COMBINED_PREFIX = "(combined from similar events): "

Json = dict[str, Any]
V = TypeVar("V")


class _Lru(Generic[V]):
    """k8s.io/utils/lru: the least recently used key goes when the cache is full."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: str, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class _Bucket:
    """A token bucket that starts full (golang.org/x/time/rate behind flowcontrol's passive limiter)."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self._qps = qps
        self._burst = float(burst)
        self._tokens = float(burst)
        self._at = now

    def try_accept(self, now: float) -> bool:
        self._tokens = min(self._burst, self._tokens + max(now - self._at, 0.0) * self._qps)
        self._at = max(now, self._at)
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


def spam_key(event: Event) -> str:
    """getSpamKey: source, object (without fieldPath) and type."""
    ref = event.involved
    return "".join((event.component, event.host, ref.kind, ref.namespace, ref.name, ref.uid, ref.api_version,
                    event.type))


def aggregate_key(event: Event) -> str:
    """EventAggregatorByReasonFunc's group: everything but the message (and fieldPath)."""
    ref = event.involved
    return "".join((event.component, event.host, ref.kind, ref.namespace, ref.name, ref.uid, ref.api_version,
                    event.type, event.reason, event.reporting_component, event.reporting_instance))


@dataclass
class _Group:
    messages: dict[str, None] = field(default_factory=dict)  # distinct messages, oldest first
    last: float = float("-inf")


@dataclass
class _Seen:
    count: int
    first_timestamp: float
    name: str
    resource_version: str


@dataclass(frozen=True)
class Correlated:
    """What to send: the event, and the patch when it updates one already posted."""

    event: Event
    patch: Json | None = None


class EventCorrelator:
    def __init__(self, clock: Clock, *, burst: int = SPAM_BURST, qps: float = SPAM_QPS,
                 max_events: int = AGGREGATE_MAX_EVENTS, interval_s: float = AGGREGATE_INTERVAL_S,
                 lru_size: int = LRU_SIZE) -> None:
        self._clock = clock
        self._burst = burst
        self._qps = qps
        self._max_events = max_events
        self._interval = interval_s
        self._buckets: _Lru[_Bucket] = _Lru(lru_size)
        self._groups: _Lru[_Group] = _Lru(lru_size)
        self._seen: _Lru[_Seen] = _Lru(lru_size)

    def correlate(self, event: Event) -> Correlated | None:
        """The event to send (with a patch for a repeat), or None when the spam filter drops it."""
        aggregated, key = self._aggregate(event)
        observed, patch = self._observe(aggregated, key)
        if self._spam(observed):
            return None
        return Correlated(observed, patch)

    def update_state(self, sent: Event) -> None:
        """Remember the event as the API server stored it (its name, count, resourceVersion)."""
        self._seen.add(sent.key(), _Seen(sent.count, sent.first_timestamp, sent.name, sent.resource_version))

    def _aggregate(self, event: Event) -> tuple[Event, str]:
        now = self._clock.now()
        group_key = aggregate_key(event)
        group = self._groups.get(group_key)
        if group is None or now - group.last > self._interval:
            group = _Group()
        group.messages[event.message] = None
        group.last = now
        self._groups.add(group_key, group)
        if len(group.messages) < self._max_events:
            return event, event.key()
        # Go pops any one message to keep the set at its size; the oldest here.
        del group.messages[next(iter(group.messages))]
        unix_ns = int(now * 1e9)
        combined = Event(
            namespace=event.namespace, name=f"{event.involved.name}.{unix_ns:x}", involved=event.involved,
            type=event.type, reason=event.reason, message=COMBINED_PREFIX + event.message,
            component=event.component, host=event.host, first_timestamp=now, last_timestamp=now,
        )
        return combined, group_key

    def _observe(self, event: Event, key: str) -> tuple[Event, Json | None]:
        seen = self._seen.get(key)
        patch: Json | None = None
        if seen is not None and seen.count > 0:
            event = replace(event, name=seen.name, resource_version=seen.resource_version,
                            first_timestamp=seen.first_timestamp, count=seen.count + 1)
            # The two-way merge patch of the event against itself with count 0, message "" and
            # lastTimestamp at the epoch: exactly these fields.
            patch = {"count": event.count, "lastTimestamp": wire_time(event.last_timestamp)}
            if event.message:
                patch["message"] = event.message
        self._seen.add(key, _Seen(event.count, event.first_timestamp, event.name, event.resource_version))
        return event, patch

    def _spam(self, event: Event) -> bool:
        key = spam_key(event)
        now = self._clock.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(self._qps, self._burst, now)
        self._buckets.add(key, bucket)
        return not bucket.try_accept(now)
