"""Pod workers: one asyncio task per pod; updates are coalesced, a kill is never dropped.

Like the kubelet's podWorkers: a pod's syncs never run concurrently; while a sync runs, newer
updates replace older pending ones (only the latest spec matters) but a termination request
stays pending until handled. A sync may ask to run again after a delay (crash-loop back-off);
delays are slept on the injected clock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kubeletapi.aio import cancel_and_wait
from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError

log = logging.getLogger(__name__)

P = TypeVar("P")


@dataclass
class _Slot(Generic[P]):
    pod: P
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    sync_pending: bool = True
    kill: bool = False
    task: asyncio.Task[None] | None = None
    timer: asyncio.Task[None] | None = None


# sync(pod) -> seconds until it wants to run again (None: only on the next event)
SyncFn = Callable[[P], Awaitable[float | None]]
KillFn = Callable[[P], Awaitable[None]]


class PodWorkers(Generic[P]):
    def __init__(self, sync: SyncFn[P], kill: KillFn[P], clock: Clock,
                 on_done: Callable[[str], None] | None = None) -> None:
        self._sync = sync
        self._kill = kill
        self._clock = clock
        self._on_done = on_done
        self._slots: dict[str, _Slot[P]] = {}

    def update(self, uid: str, pod: P) -> None:
        """Sync `pod` (the latest version wins if a sync is already pending)."""
        slot = self._slots.get(uid)
        if slot is None:
            slot = self._slots[uid] = _Slot(pod)
            slot.task = asyncio.create_task(self._run(uid, slot), name=f"pod-worker-{uid}")
        elif slot.kill:
            return  # a terminating pod is not revived; a new manifest gives a new uid
        slot.pod = pod
        slot.sync_pending = True
        slot.wake.set()

    def poke(self, uid: str) -> None:
        """Sync again with the current spec (a runtime event for this pod)."""
        slot = self._slots.get(uid)
        if slot is not None:
            slot.sync_pending = True
            slot.wake.set()

    def kill(self, uid: str) -> None:
        """Terminate the pod and end its worker; sticky until done."""
        slot = self._slots.get(uid)
        if slot is not None:
            slot.kill = True
            slot.wake.set()

    def known(self, uid: str) -> bool:
        return uid in self._slots

    def uids(self) -> list[str]:
        return list(self._slots)

    async def stop(self) -> None:
        """Cancel every worker (the agent is shutting down; containers keep running)."""
        await cancel_and_wait(s.task for s in self._slots.values() if s.task is not None)
        self._slots.clear()

    async def wait_idle(self, uid: str) -> None:
        """Wait for the pod's worker to end (after kill)."""
        slot = self._slots.get(uid)
        if slot is not None and slot.task is not None:
            await asyncio.shield(slot.task)

    async def _run(self, uid: str, slot: _Slot[P]) -> None:
        try:
            while True:
                await slot.wake.wait()
                slot.wake.clear()
                if slot.timer is not None:
                    slot.timer.cancel()
                    slot.timer = None
                if slot.kill:
                    await self._kill_until_done(uid, slot.pod)
                    return
                if not slot.sync_pending:
                    continue
                slot.sync_pending = False
                again = await self._guard(uid, "sync", self._sync(slot.pod))
                if again is not None and not slot.kill:
                    slot.timer = asyncio.create_task(self._poke_after(uid, max(again, 0.0)), name=f"pod-requeue-{uid}")
        finally:
            if self._slots.get(uid) is slot:
                del self._slots[uid]
            if slot.timer is not None:
                slot.timer.cancel()
            if self._on_done is not None and slot.kill:
                self._on_done(uid)

    async def _poke_after(self, uid: str, seconds: float) -> None:
        await self._clock.sleep(seconds)
        self.poke(uid)

    async def _kill_until_done(self, uid: str, pod: P) -> None:
        """A kill is never dropped: retry until the runtime confirms it."""
        while True:
            try:
                await self._kill(pod)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pod worker %s: killing the pod failed; retrying in 5s", uid)
                await self._clock.sleep(5)

    async def _guard(self, uid: str, what: str, work: Awaitable[float | None]) -> float | None:
        """One bad pod never stops its worker: log, and retry a failed sync in a few seconds."""
        try:
            result = await work
        except asyncio.CancelledError:
            raise
        except KubeletError as exc:  # a runtime refusal or outage: one line, no traceback
            log.warning("pod worker %s: %s failed: %s", uid, what, exc)
            return 5.0
        except Exception:
            log.exception("pod worker %s: %s failed", uid, what)
            return 5.0
        return result
