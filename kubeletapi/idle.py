"""The idle timeout of a stream connection (streamingConnectionIdleTimeout).

As the kubelet's wsstream and spdystream push a connection's deadline on every message or frame
read or written, the connection calls touch() on each; expired() returns once nothing moved for
the timeout (never without one).
"""

from __future__ import annotations

import logging

from kubeletapi.clock import Clock

log = logging.getLogger(__name__)


class IdleTimer:
    """The last activity of one connection, against its idle timeout (None or <= 0: none)."""

    def __init__(self, timeout_s: float | None, clock: Clock) -> None:
        self.timeout_s = timeout_s if timeout_s and timeout_s > 0 else None
        self._clock = clock
        self._last = clock.monotonic()

    def touch(self) -> None:
        self._last = self._clock.monotonic()

    async def expired(self) -> None:
        """Return once no activity was seen for the timeout."""
        while True:
            if self.timeout_s is None:
                await self._clock.sleep(3600)
                continue
            remaining = self._last + self.timeout_s - self._clock.monotonic()
            if remaining <= 0:
                log.info("closing a stream connection idle for %ss", self.timeout_s)
                return
            await self._clock.sleep(remaining)
