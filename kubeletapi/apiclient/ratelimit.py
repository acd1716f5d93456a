"""A token bucket: client-go's default rate limiter (flowcontrol.NewTokenBucketRateLimiter) for
kubeAPIQPS and kubeAPIBurst. A request waits until a token is there; tokens refill at `qps` per
second up to `burst`."""

from __future__ import annotations

import asyncio

from kubeletapi.clock import Clock


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a rate limit needs qps > 0 and burst >= 1, got {qps} and {burst}")
        self._qps = qps
        self._burst = float(burst)
        self._tokens = float(burst)
        self._clock = clock
        self._at = clock.monotonic()
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        """Take one token, waiting for it when the bucket is empty (first come, first served)."""
        async with self._lock:
            self._refill()
            if self._tokens < 1:
                await self._clock.sleep((1 - self._tokens) / self._qps)
                self._refill()
            self._tokens -= 1

    def _refill(self) -> None:
        now = self._clock.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._qps)
        self._at = now
