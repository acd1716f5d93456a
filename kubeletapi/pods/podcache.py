"""The pod cache: what the runtime has for each pod, as last listed (the kubelet's kubecontainer.Cache).

The PLEG fills it from its relist every second; a pod's syncer refreshes its own pod's record
after it changed the runtime. Every record carries the sequence number taken when its listing
began, and an older record never replaces a newer one, so a relist that began before a sync's
change cannot bring back a view without it.

Freshness is asked by number, as the kubelet's GetNewerThan asks by time: a sync that changed
the runtime takes `mark()`, a number greater than every listing begun so far, and its next read
wants a record newer than that mark. Sequence numbers, not clock readings: a fake clock that
stands still must not make a stale record look fresh.
"""

from __future__ import annotations

from collections.abc import ItemsView, Mapping
from dataclasses import dataclass

from kubeletapi.runtime.types import ContainerStatus, Sandbox


@dataclass(frozen=True)
class PodRecord:
    """What the runtime has for one pod: its sandboxes and containers (all instances)."""

    sandboxes: tuple[Sandbox, ...] = ()
    containers: tuple[ContainerStatus, ...] = ()
    seq: int = 0  # the cache's sequence number when the listing began


class PodCache:
    def __init__(self) -> None:
        self._seq = 0
        self._listed_seq = 0  # the listing of every pod this cache holds began then
        self._records: dict[str, PodRecord] = {}

    def mark(self) -> int:
        """A sequence number greater than that of every listing begun so far."""
        self._seq += 1
        return self._seq

    def get(self, uid: str) -> PodRecord | None:
        return self._records.get(uid)

    def newer_than(self, uid: str, seq: int) -> PodRecord | None:
        """The pod's record if it was listed after `seq` (an empty one when a full listing begun
        after `seq` found nothing of it); None when only an older view is known."""
        record = self._records.get(uid)
        if record is not None:
            return record if record.seq > seq else None
        return PodRecord(seq=self._listed_seq) if self._listed_seq > seq else None

    def put(self, uid: str, record: PodRecord) -> PodRecord:
        """Keep `record` unless the cache already holds a newer one; the record kept."""
        current = self._records.get(uid)
        if current is not None and current.seq > record.seq:
            return current
        self._records[uid] = record
        return record

    def put_all(self, records: Mapping[str, PodRecord], seq: int) -> None:
        """A listing of every pod begun at `seq`: pods it lacks are gone unless listed since."""
        for uid in [u for u, r in self._records.items() if u not in records and r.seq < seq]:
            del self._records[uid]
        for uid, record in records.items():
            self.put(uid, record)
        self._listed_seq = max(self._listed_seq, seq)

    def items(self) -> ItemsView[str, PodRecord]:
        return self._records.items()
