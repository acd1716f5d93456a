"""A bounded buffer of encoded points with one batch in flight.

A batch is taken out to be sent and either committed (written, or rejected for good) or given back
to the front, oldest first. The bound counts the batch in flight too: when points arrive beyond it
the oldest waiting ones are dropped, and a batch given back is trimmed from its oldest end, so
whatever happens the buffer holds at most `capacity` points and loses the oldest first.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class PointBuffer:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._waiting: deque[bytes] = deque()
        self._inflight: list[bytes] = []
        self.dropped = 0  # points dropped for want of room, in all

    def __len__(self) -> int:
        """Points held: waiting and in flight."""
        return len(self._waiting) + len(self._inflight)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def extend(self, lines: Iterable[bytes]) -> None:
        self._waiting.extend(lines)
        self._trim()

    def take(self, limit: int) -> list[bytes]:
        """Up to `limit` of the oldest waiting points, now in flight (one batch at a time)."""
        if self._inflight:
            raise RuntimeError("a batch is already in flight")
        count = min(limit, len(self._waiting))
        self._inflight = [self._waiting.popleft() for _ in range(count)]
        return self._inflight

    def commit(self) -> None:
        """The batch in flight is done with (written, or rejected by the server)."""
        self._inflight = []

    def give_back(self) -> None:
        """The batch in flight failed: it goes back in front, to be sent again."""
        self._waiting.extendleft(reversed(self._inflight))
        self._inflight = []
        self._trim()

    def _trim(self) -> None:
        excess = len(self) - self.capacity
        if excess > 0:
            excess = min(excess, len(self._waiting))
            for _ in range(excess):
                self._waiting.popleft()
            self.dropped += excess
