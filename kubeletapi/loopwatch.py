"""Watching the event loop: how late it runs, and what holds it.

One asyncio loop serves every listener and runs every loop of the agent, so a step that holds it
(CPU work, a blocking call) stalls everything at once. LoopWatch measures it from both sides:
- a heartbeat task sleeps `interval` and measures how much later than that it woke: the loop's
  lag, given to `observe` (the kubeletapi_event_loop_lag_seconds histogram);
- a watchdog thread, which runs whatever the loop does, notices a heartbeat older than
  `stack_after` and logs the stack of the loop's thread at that moment: the code holding the
  loop; when the stall ends it logs how long it lasted;
- check() fails (the syncloop health check uses it) while a stall longer than `unhealthy_after`
  goes on and for `unhealthy_for` after it ended: a /healthz request queued behind a stall is
  answered once the loop is free again, and says that it was stalled.
It reads a real clock on purpose: what it measures is real time, whatever clock drives the loops.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import traceback
from collections.abc import Callable

from kubeletapi.clock import Clock

log = logging.getLogger(__name__)


class LoopWatch:
    def __init__(
        self,
        clock: Clock,
        observe: Callable[[float], None] | None = None,
        *,
        interval: float = 0.05,
        stack_after: float = 0.1,
        unhealthy_after: float = 2.0,
        unhealthy_for: float = 10.0,
    ) -> None:
        self._clock = clock
        self._observe = observe
        self._interval = interval
        self._stack_after = stack_after
        self._unhealthy_after = unhealthy_after
        self._unhealthy_for = unhealthy_for
        self._beat = clock.monotonic()
        self._last_bad_stall_end: float | None = None  # when the last stall over unhealthy_after ended
        self._loop_thread: int | None = None
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None

    async def run(self) -> None:
        """The heartbeat (a task on the loop to watch); starts the watchdog thread."""
        self._loop_thread = threading.get_ident()
        self._beat = self._clock.monotonic()
        self._stop.clear()
        self._watchdog = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
        self._watchdog.start()
        try:
            while True:
                before = self._clock.monotonic()
                await asyncio.sleep(self._interval)
                now = self._clock.monotonic()
                lag = max(now - before - self._interval, 0.0)
                if lag >= self._unhealthy_after:
                    self._last_bad_stall_end = now
                self._beat = now
                if self._observe is not None:
                    self._observe(lag)
        finally:
            self._stop.set()

    def stalled_for(self) -> float:
        """How long the loop has gone without a heartbeat beyond its interval (0 when running)."""
        return max(self._clock.monotonic() - self._beat - self._interval, 0.0)

    def check(self) -> str | None:
        """None when the loop runs; else why the sync loop counts as unhealthy."""
        stalled = self.stalled_for()
        if stalled >= self._unhealthy_after:
            return f"the event loop has been blocked for {stalled:.1f}s"
        ended = self._last_bad_stall_end
        if ended is not None and self._clock.monotonic() - ended < self._unhealthy_for:
            return (f"the event loop was blocked for over {self._unhealthy_after:g}s "
                    f"in the last {self._unhealthy_for:g}s")
        return None

    def _watch(self) -> None:
        reported_beat: float | None = None
        while not self._stop.wait(self._interval):
            beat = self._beat
            stalled = self.stalled_for()
            if stalled >= self._stack_after and reported_beat != beat:
                reported_beat = beat
                log.warning("the event loop has been blocked for %.0f ms, by:\n%s", stalled * 1000, self._stack())
            elif reported_beat is not None and reported_beat != beat:
                log.warning("the event loop was blocked for %.0f ms in all",
                            (beat - reported_beat - self._interval) * 1000)
                reported_beat = None

    def _stack(self) -> str:
        frame = sys._current_frames().get(self._loop_thread or -1)
        return "".join(traceback.format_stack(frame)) if frame is not None else "(the loop's thread is gone)"
