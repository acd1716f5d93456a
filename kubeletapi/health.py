"""Health checks behind /healthz: ping, log and syncloop, as the kubelet installs them.

A check returns None when healthy and an error message otherwise; the HTTP layer renders the
apiserver healthz format around them (server/routes/healthz.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.clock import Clock


class HealthCheck(Protocol):
    """One named check."""

    @property
    def name(self) -> str: ...

    def check(self) -> str | None:
        """None when healthy, else the reason (never shown to clients, only logged)."""
        ...


@dataclass(frozen=True)
class PingCheck:
    """Always healthy: the server answered."""

    name: str = "ping"

    def check(self) -> str | None:
        return None


class SyncLoopCheck:
    """Fails when the sync loop has not started an iteration for max(2 x syncFrequency, 5 min),
    as the kubelet's; and, kubeletapi's additions, while any of `conditions` gives a reason: the
    pod sources have not all been read yet (so /healthz is not ok before /pods is populated),
    the event loop is or was just blocked (loopwatch.LoopWatch.check)."""

    name = "syncloop"

    def __init__(self, clock: Clock, sync_frequency_s: float, last_entry: Callable[[], float],
                 conditions: Sequence[Callable[[], str | None]] = ()) -> None:
        self._clock = clock
        self._threshold = max(2 * sync_frequency_s, 300.0)
        self._last_entry = last_entry
        self._conditions = conditions

    def check(self) -> str | None:
        for condition in self._conditions:
            reason = condition()
            if reason is not None:
                return reason
        entry = self._last_entry()
        if entry == 0:
            return None  # the loop has not started yet
        age = self._clock.monotonic() - entry
        if age > self._threshold:
            return "sync Loop took longer than expected"
        return None


class LogFlushMonitor:
    """The `log` check: fails when flushing the log handlers stalls (e.g. a blocked stderr pipe).

    As the apiserver's LogHealthz: a daemon thread flushes every handler of the root logger
    once a period (1 minute) and records when it finished; the check fails with "logging
    blocked" once two periods have passed without a completed flush. It never blocks the loop.
    """

    name = "log"

    def __init__(self, clock: Clock, period_s: float = 60.0) -> None:
        self._clock = clock
        self._period = period_s
        self._last_flush = clock.monotonic()
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._run, name="log-flush", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def flush_once(self) -> None:
        for handler in logging.getLogger().handlers:
            handler.flush()
        self._last_flush = self._clock.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self.flush_once()

    def check(self) -> str | None:
        if self._clock.monotonic() - self._last_flush >= 2 * self._period:
            return "logging blocked"
        return None
