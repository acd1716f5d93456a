"""A bounded buffer of gzipped chunks of points, with one batch of chunks in flight.

The sink keeps points as they are sent: each housekeeping cycle's line protocol cut into chunks of
at most a batch's points, each chunk one gzip member (members concatenated are one valid gzip body,
which InfluxDB reads whole). At 110 pods a cycle is ~150 KiB of lines and ~7 KiB as a chunk, so a
buffer of 50,000 points held through an outage costs under 1 MiB instead of ~19.

A batch of chunks is taken out to be sent and either committed (written, or rejected for good) or
given back to the front, oldest first. The bound, in points, counts the batch in flight too, and
the oldest go first: when points arrive beyond it while a batch is in flight, the batch's oldest
chunks are marked to be dropped should the write fail (if it succeeds they were written after all),
and only past the whole batch are waiting chunks dropped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    body: bytes  # one gzip member: `points` lines of line protocol, each ending in a newline
    points: int


class PointBuffer:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._waiting: deque[Chunk] = deque()
        self._waiting_points = 0
        self._inflight: list[Chunk] = []
        self._inflight_points = 0
        self._doomed = 0  # leading in-flight chunks to drop if the batch comes back
        self._doomed_points = 0
        self.dropped = 0  # points dropped for want of room, in all

    def __len__(self) -> int:
        """Points held: waiting and in flight, less those in flight marked to be dropped."""
        return self._waiting_points + self._inflight_points - self._doomed_points

    @property
    def waiting(self) -> int:
        """Points waiting to be taken."""
        return self._waiting_points

    def extend(self, chunks: Iterable[Chunk]) -> None:
        for chunk in chunks:
            self._waiting.append(chunk)
            self._waiting_points += chunk.points
        self._trim()

    def take(self, limit: int) -> list[Chunk]:
        """The oldest waiting chunks, up to `limit` points (one chunk at least), now in flight."""
        if self._inflight:
            raise RuntimeError("a batch is already in flight")
        while self._waiting and (not self._inflight or self._inflight_points + self._waiting[0].points <= limit):
            chunk = self._waiting.popleft()
            self._waiting_points -= chunk.points
            self._inflight.append(chunk)
            self._inflight_points += chunk.points
        return self._inflight

    def commit(self) -> None:
        """The batch in flight is done with (written, or rejected by the server)."""
        self._inflight, self._inflight_points = [], 0
        self._doomed = self._doomed_points = 0

    def give_back(self) -> None:
        """The batch in flight failed: it goes back in front, to be sent again, less its chunks
        marked to be dropped."""
        self.dropped += self._doomed_points
        kept = self._inflight[self._doomed:]
        self._waiting.extendleft(reversed(kept))
        self._waiting_points += self._inflight_points - self._doomed_points
        self._inflight, self._inflight_points = [], 0
        self._doomed = self._doomed_points = 0
        self._trim()

    def _trim(self) -> None:
        while len(self) > self.capacity:
            if self._doomed < len(self._inflight):  # the oldest points are in flight
                self._doomed_points += self._inflight[self._doomed].points
                self._doomed += 1
            elif self._waiting:
                chunk = self._waiting.popleft()
                self._waiting_points -= chunk.points
                self.dropped += chunk.points
            else:
                return
