"""CrashLoopBackOff: per container, 10 s doubling to 300 s, forgotten after 10 minutes.

Mirrors the kubelet's flowcontrol.Backoff use in kuberuntime: the first restart is immediate;
each later restart must wait the current back-off since the container last finished, then the
back-off doubles. An entry not touched for 10 minutes (a container that ran that long) starts
over at 10 s.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubeletapi.clock import Clock

INITIAL_S = 10.0
MAX_S = 300.0
RESET_AFTER_S = 600.0


@dataclass
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    def __init__(self, clock: Clock, initial_s: float = INITIAL_S, max_s: float = MAX_S,
                 reset_after_s: float = RESET_AFTER_S) -> None:
        self._clock = clock
        self._initial = initial_s
        self._max = max_s
        self._reset_after = reset_after_s
        self._entries: dict[str, _Entry] = {}

    def remaining(self, key: str, finished_at: float) -> float:
        """Seconds left before `key` may restart, given when it last finished (0: now)."""
        entry = self._entries.get(key)
        if entry is None or self._stale(entry):
            return 0.0
        return max(0.0, finished_at + entry.backoff - self._clock.now())

    def current(self, key: str) -> float:
        entry = self._entries.get(key)
        return 0.0 if entry is None or self._stale(entry) else entry.backoff

    def next(self, key: str) -> None:
        """Record a restart: the next one waits twice as long (up to the maximum)."""
        entry = self._entries.get(key)
        now = self._clock.now()
        if entry is None or self._stale(entry):
            self._entries[key] = _Entry(self._initial, now)
        else:
            entry.backoff = min(entry.backoff * 2, self._max)
            entry.last_update = now

    def forget(self, prefix: str) -> None:
        """Drop every entry of a pod (keys start with its uid)."""
        for key in [k for k in self._entries if k.startswith(prefix)]:
            del self._entries[key]

    def _stale(self, entry: _Entry) -> bool:
        return self._clock.now() - entry.last_update > self._reset_after
