"""The kubelet's main loop: once a second it records its entry time (read by the syncloop health
check, kubeletapi.health.SyncLoopCheck) and runs the sync handlers in turn (the pod manager's
housekeeping). A handler that fails is logged and the loop goes on; one that hangs holds the
loop, so /healthz fails.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError

log = logging.getLogger(__name__)
SYNC_LOOP_PERIOD_S = 1.0


class SyncLoop:
    """The sync handlers and the loop that runs them; `entry` is the last iteration's start
    (monotonic seconds, 0 before the first)."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.entry = 0.0
        self._handlers: list[Callable[[], Awaitable[None]]] = []
        self._errors: dict[str, str] = {}  # handler -> its last KubeletError (logged once)

    def add_handler(self, handler: Callable[[], Awaitable[None]]) -> None:
        """Run `handler` on every iteration."""
        self._handlers.append(handler)

    async def run(self) -> None:
        """Every iteration records its entry time and runs the handlers, until cancelled."""
        while True:
            self.entry = self._clock.monotonic()
            for handler in self._handlers:
                await self._run_one(handler)
            await self._clock.sleep(SYNC_LOOP_PERIOD_S)

    async def _run_one(self, handler: Callable[[], Awaitable[None]]) -> None:
        name = getattr(handler, "__qualname__", str(handler))
        try:
            await handler()
        except KubeletError as exc:  # the runtime is down, say: once per new error, no traceback
            if self._errors.get(name) != str(exc):
                log.warning("sync handler %s failed: %s", name, exc)
            self._errors[name] = str(exc)
            return
        except Exception:
            log.exception("sync handler %s failed", name)
        if self._errors.pop(name, None) is not None:
            log.info("sync handler %s recovered", name)
