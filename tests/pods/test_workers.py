"""Pod workers: one task per pod, no overlapping syncs, coalesced updates, sticky kills, retries, requeues.

The retry delays (5 s after a failed sync or kill) and requeue delays are sleeps on the workers'
clock, here the real one (asyncio's sleep), so the tests run on a loop whose clock they can jump
forward: the delays are checked to the tenth of a second without waiting for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeletapi.clock import RealClock
from kubeletapi.pods.workers import PodWorkers

P = pytest.param


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock a test jumps forward: timers due after the jump fire at once."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped = 0.0

    def time(self) -> float:
        return super().time() + self.skipped


def run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """asyncio.run on a VirtualTimeLoop."""
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        runner.run(main())


async def settle(rounds: int = 30) -> None:
    """Let every ready task run until nothing is left to do (no real time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def advance(seconds: float) -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, VirtualTimeLoop)
    loop.skipped += seconds
    await settle()


async def until(check: Callable[[], bool], what: str) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never happened: {what}")


@dataclass(frozen=True)
class Pod:
    uid: str
    version: int = 1


@dataclass
class FakePodLifecycle:
    """sync/kill/on_done recording every call; syncs can be held at a gate, fail, or ask to requeue."""

    log: list[tuple[str, str, int]] = field(default_factory=list)
    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    results: dict[str, list[float | Exception | None]] = field(default_factory=dict)
    kill_failures: Counter[str] = field(default_factory=Counter)
    active: Counter[str] = field(default_factory=Counter)
    overlapped: bool = False
    cancelled: list[str] = field(default_factory=list)

    async def sync(self, pod: Pod) -> float | None:
        self.log.append(("sync", pod.uid, pod.version))
        self.active[pod.uid] += 1
        self.overlapped |= self.active[pod.uid] > 1
        try:
            gate = self.gates.get(pod.uid)
            if gate is not None:
                await gate.wait()
            queued = self.results.get(pod.uid)
            result = queued.pop(0) if queued else None
            if isinstance(result, Exception):
                raise result
            return result
        except asyncio.CancelledError:
            self.cancelled.append(pod.uid)
            raise
        finally:
            self.active[pod.uid] -= 1

    async def kill(self, pod: Pod) -> None:
        self.log.append(("kill", pod.uid, pod.version))
        if self.kill_failures[pod.uid] > 0:
            self.kill_failures[pod.uid] -= 1
            raise RuntimeError("runtime unavailable")

    def on_done(self, uid: str) -> None:
        self.log.append(("done", uid, 0))

    def syncs(self, uid: str) -> list[int]:
        return [v for kind, u, v in self.log if kind == "sync" and u == uid]

    def of(self, uid: str) -> list[tuple[str, int]]:
        return [(kind, v) for kind, u, v in self.log if u == uid]

    def workers(self) -> PodWorkers[Pod]:
        return PodWorkers(self.sync, self.kill, RealClock(), self.on_done)


def worker_tasks() -> set[str]:
    return {t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("pod-worker-") and not t.done()}


def scenario(body: Callable[[FakePodLifecycle, PodWorkers[Pod]], Awaitable[None]]) -> FakePodLifecycle:
    """Run `body` with a fresh fake and workers; the workers are always stopped afterwards."""
    fake = FakePodLifecycle()

    async def main() -> None:
        workers = fake.workers()
        try:
            await body(fake, workers)
        finally:
            await workers.stop()
        assert not worker_tasks()

    run(main)
    return fake


# --- one worker per pod ---------------------------------------------------------------------------


def test_one_task_per_pod() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        workers.update("a", Pod("a", 1))
        workers.update("b", Pod("b", 1))
        workers.update("a", Pod("a", 2))
        assert worker_tasks() == {"pod-worker-a", "pod-worker-b"}
        assert workers.uids() == ["a", "b"]
        assert workers.known("a") and not workers.known("c")
        await settle()
        # the second update came before the worker ran: one sync, with the latest pod
        assert (fake.syncs("a"), fake.syncs("b")) == ([2], [1])
        workers.update("a", Pod("a", 3))
        await settle()
        assert fake.syncs("a") == [2, 3]
        assert worker_tasks() == {"pod-worker-a", "pod-worker-b"}

    scenario(body)


def test_syncs_never_overlap_and_updates_during_a_sync_coalesce() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        gate = fake.gates["a"] = asyncio.Event()
        workers.update("a", Pod("a", 1))
        await until(lambda: fake.syncs("a") == [1], "first sync started")
        for version in (2, 3, 4):
            workers.update("a", Pod("a", version))
            await settle()
        workers.poke("a")
        await settle()
        assert fake.syncs("a") == [1]  # still inside the first sync
        gate.set()
        await settle()
        assert fake.syncs("a") == [1, 4]  # exactly one more, with the latest pod
        assert not fake.overlapped

    scenario(body)


def test_poke_syncs_again_with_the_current_pod() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        workers.update("a", Pod("a", 7))
        await settle()
        workers.poke("a")
        workers.poke("a")
        await settle()
        assert fake.syncs("a") == [7, 7]

    scenario(body)


def test_a_blocked_pod_does_not_block_others() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        fake.gates["a"] = asyncio.Event()  # never released
        workers.update("a", Pod("a"))
        workers.update("b", Pod("b"))
        await settle()
        workers.update("b", Pod("b", 2))
        await settle()
        assert (fake.syncs("a"), fake.syncs("b")) == ([1], [1, 2])

    fake = scenario(body)
    assert fake.cancelled == ["a"]  # stop() cancelled the blocked sync


# --- kills ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "outcome",
    [
        P(None, id="sync-returns"),
        P(30.0, id="sync-asks-to-requeue"),
        P(RuntimeError("sync failed"), id="sync-raises"),
    ],
)
def test_kill_requested_during_a_sync_is_not_dropped(outcome: float | Exception | None) -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        gate = fake.gates["a"] = asyncio.Event()
        fake.results["a"] = [outcome]
        workers.update("a", Pod("a", 1))
        await until(lambda: fake.syncs("a") == [1], "sync started")
        workers.kill("a")
        workers.update("a", Pod("a", 2))  # a terminating pod is not revived
        workers.poke("a")
        gate.set()
        await workers.wait_idle("a")
        assert fake.of("a") == [("sync", 1), ("kill", 1), ("done", 0)]
        assert not workers.known("a") and workers.uids() == []
        await advance(60)  # no requeue timer survives the kill
        assert fake.of("a") == [("sync", 1), ("kill", 1), ("done", 0)]

    scenario(body)


def test_kill_before_the_first_sync() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        workers.update("a", Pod("a"))
        workers.kill("a")
        await workers.wait_idle("a")
        assert fake.of("a") == [("kill", 1), ("done", 0)]

    scenario(body)


def test_kill_is_retried_every_5s_until_it_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="kubeletapi.pods.workers")

    def kills(fake: FakePodLifecycle) -> int:
        return sum(1 for kind, _ in fake.of("a") if kind == "kill")

    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        fake.kill_failures["a"] = 2
        workers.update("a", Pod("a"))
        await settle()
        workers.kill("a")
        await settle()
        assert kills(fake) == 1
        await advance(4.9)
        assert kills(fake) == 1
        await advance(0.2)
        assert kills(fake) == 2
        assert workers.known("a")  # still terminating
        await advance(5.1)
        assert fake.of("a") == [("sync", 1), ("kill", 1), ("kill", 1), ("kill", 1), ("done", 0)]
        assert not workers.known("a")

    scenario(body)
    failures = [r for r in caplog.records if "killing the pod failed" in r.getMessage()]
    assert len(failures) == 2
    assert all(r.exc_info is not None for r in failures)


def test_kill_of_an_unknown_pod_is_a_no_op() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        workers.kill("x")
        workers.poke("x")
        await workers.wait_idle("x")
        await settle()
        assert fake.log == [] and not workers.known("x")

    scenario(body)


def test_a_uid_can_start_again_after_its_kill_finished() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        workers.update("a", Pod("a", 1))
        await settle()
        workers.kill("a")
        await workers.wait_idle("a")
        workers.update("a", Pod("a", 2))
        await settle()
        assert fake.of("a") == [("sync", 1), ("kill", 1), ("done", 0), ("sync", 2)]
        assert workers.known("a")

    scenario(body)


# --- failures and requeues ------------------------------------------------------------------------


def test_a_failing_sync_does_not_end_the_worker(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="kubeletapi.pods.workers")

    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        fake.results["a"] = [RuntimeError("boom"), None]
        workers.update("a", Pod("a", 1))
        await settle()
        assert workers.known("a") and worker_tasks() == {"pod-worker-a"}
        workers.update("a", Pod("a", 2))  # the next update still syncs, at once
        await settle()
        assert fake.syncs("a") == [1, 2]

    scenario(body)
    assert any("pod worker a: sync failed" in r.getMessage() and r.exc_info for r in caplog.records)


def test_a_failed_sync_is_retried_after_5s() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        fake.results["a"] = [RuntimeError("boom"), RuntimeError("again"), None]
        workers.update("a", Pod("a"))
        await settle()
        await advance(4.9)
        assert fake.syncs("a") == [1]
        await advance(0.2)
        assert fake.syncs("a") == [1, 1]
        await advance(5.1)
        assert fake.syncs("a") == [1, 1, 1]
        await advance(60)  # the third succeeded and asked for nothing
        assert fake.syncs("a") == [1, 1, 1]

    scenario(body)


@pytest.mark.parametrize(
    ("delay", "before", "after"),
    [
        P(30.0, 29.9, 0.2, id="30s"),
        P(2.5, 2.4, 0.2, id="2.5s"),
        P(0.0, 0.0, 0.0, id="zero-at-once"),
        P(-3.0, 0.0, 0.0, id="negative-is-at-once"),
    ],
)
def test_requeue_after_the_delay_the_sync_returns(delay: float, before: float, after: float) -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        fake.results["a"] = [delay, None]
        workers.update("a", Pod("a"))
        await settle()
        if before:
            await advance(before)
            assert fake.syncs("a") == [1]
        await advance(after)
        assert fake.syncs("a") == [1, 1]
        await advance(600)  # None: no further requeue
        assert fake.syncs("a") == [1, 1]

    scenario(body)


def test_an_update_replaces_a_pending_requeue() -> None:
    async def body(fake: FakePodLifecycle, workers: PodWorkers[Pod]) -> None:
        fake.results["a"] = [10.0, None]
        workers.update("a", Pod("a", 1))
        await settle()
        workers.update("a", Pod("a", 2))
        await settle()
        assert fake.syncs("a") == [1, 2]
        await advance(20)  # the 10 s timer of the first sync was cancelled
        assert fake.syncs("a") == [1, 2]

    scenario(body)


# --- stop -----------------------------------------------------------------------------------------


def test_stop_cancels_everything() -> None:
    fake = FakePodLifecycle()

    async def main() -> None:
        workers = fake.workers()
        fake.gates["a"] = asyncio.Event()  # a sync in progress
        fake.results["b"] = [30.0]  # a requeue timer pending
        workers.update("a", Pod("a"))
        workers.update("b", Pod("b"))
        workers.update("c", Pod("c"))
        await settle()
        assert len(worker_tasks()) == 3
        await workers.stop()
        assert worker_tasks() == set()
        assert workers.uids() == [] and not workers.known("a")
        await advance(60)
        assert fake.syncs("b") == [1]  # the timer died with its worker

    run(main)
    assert fake.cancelled == ["a"]
    # shutting down is not killing: containers keep running, nothing is reported done
    assert not any(kind in ("kill", "done") for kind, _, _ in fake.log)


def test_on_done_only_after_the_kill_completes() -> None:
    done_seen_by: list[list[tuple[str, str, int]]] = []

    async def main() -> None:
        fake = FakePodLifecycle()
        workers = PodWorkers(fake.sync, fake.kill, RealClock(), lambda uid: done_seen_by.append(list(fake.log)))
        workers.update("a", Pod("a"))
        await settle()
        workers.kill("a")
        await workers.wait_idle("a")
        await workers.stop()

    run(main)
    assert done_seen_by == [[("sync", "a", 1), ("kill", "a", 1)]]
