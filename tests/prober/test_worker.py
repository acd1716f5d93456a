"""Probe workers and the manager on a FakeClock: thresholds, timing, jitter, gating, results.

The statuses the workers read are set by the test (as the pod syncer would publish them); the
runner is a hand-written fake that returns scripted outcomes and can take (fake) time.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeletapi.api.core_v1 import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStatus,
    ExecAction,
    ObjectMeta,
    Pod,
    PodSpec,
    PodStatus,
    Probe,
)
from kubeletapi.clock import FakeClock
from kubeletapi.prober.manager import ProbeManager
from kubeletapi.prober.results import Outcome, ProbeKey, ProbeRecord, ProbeType, Result
from kubeletapi.prober.worker import next_tick

UID = "uid-1"
OK = Outcome(Result.SUCCESS, "ok")
BAD = Outcome(Result.FAILURE, "bad")
STEP = 0.1


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


@dataclass
class FakeRunner:
    """Outcome per (container, probe command); `delay` is fake seconds a run takes."""

    clock: FakeClock
    script: dict[str, Callable[[int], Outcome]] = field(default_factory=dict)
    delay: dict[str, float] = field(default_factory=dict)
    runs: list[tuple[str, float]] = field(default_factory=list)

    async def run(self, probe: Probe, container: Container, container_id: str, pod_ip: str) -> Outcome:
        assert probe.exec is not None
        name = probe.exec.command[0]
        self.runs.append((name, self.clock.monotonic()))
        if name in self.delay:
            await self.clock.sleep(self.delay[name])
        count = sum(1 for n, _ in self.runs if n == name)
        return self.script.get(name, lambda _: OK)(count)

    def count(self, name: str) -> int:
        return sum(1 for n, _ in self.runs if n == name)


@dataclass
class Recorder:
    records: list[ProbeRecord] = field(default_factory=list)
    stopped: list[ProbeKey] = field(default_factory=list)

    def probe_finished(self, record: ProbeRecord) -> None:
        self.records.append(record)

    def worker_stopped(self, key: ProbeKey) -> None:
        self.stopped.append(key)


def probe(name: str, period: int = 1, **kw: int) -> Probe:
    return Probe(exec=ExecAction(command=[name]), period_seconds=period, timeout_seconds=1,
                 success_threshold=kw.pop("success", 1), failure_threshold=kw.pop("failure", 3), **kw)


def pod(policy: str = "Always", uid: str = UID, **probes: Probe) -> Pod:
    container = Container(name="c", image="i", command=["sleep"], **probes)
    return Pod(metadata=ObjectMeta(name="p", namespace="ns", uid=uid),
               spec=PodSpec(containers=[container], restart_policy=policy))


@dataclass
class World:
    clock: FakeClock
    runner: FakeRunner
    manager: ProbeManager
    recorder: Recorder
    statuses: dict[str, PodStatus] = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)

    def running(self, cid: str, started: bool = True, age: float = 100.0, uid: str = UID) -> None:
        started_at = dt.datetime.fromtimestamp(self.clock.now() - age, dt.UTC)
        state = ContainerState(running=ContainerStateRunning(started_at=started_at))
        self._set(uid, ContainerStatus(name="c", container_id=f"process://{cid}", state=state, started=started))

    def terminated(self, cid: str, uid: str = UID) -> None:
        state = ContainerState(terminated=ContainerStateTerminated(exit_code=1))
        self._set(uid, ContainerStatus(name="c", container_id=f"process://{cid}", state=state, started=False))

    def _set(self, uid: str, status: ContainerStatus) -> None:
        self.statuses[uid] = PodStatus(phase="Running", pod_ip="127.0.0.1", container_statuses=[status])

    async def advance(self, seconds: float) -> None:
        """Move the fake clock in small steps, letting the workers (polling sleepers) run."""
        moved = 0.0
        while moved < seconds - 1e-9:
            step = min(STEP, seconds - moved)
            self.clock.advance(step)
            moved += step
            await asyncio.sleep(0.012)


def world_run(test: Callable[[World], Awaitable[None]], rng: random.Random | None = None) -> None:
    async def main() -> None:
        clock = FakeClock()
        runner = FakeRunner(clock)
        recorder = Recorder()
        statuses: dict[str, PodStatus] = {}
        changes: list[str] = []
        manager = ProbeManager(None, clock, statuses.get, changes.append,  # type: ignore[arg-type]
                               user_agent="kube-probe/0.1", runner=runner, rng=rng or FixedRandom(0.0))
        manager.add_observer(recorder)
        world = World(clock, runner, manager, recorder, statuses, changes)
        try:
            await test(world)
        finally:
            await manager.stop()

    asyncio.run(main())


def scenario(rng: random.Random | None = None) -> Callable[[Callable[[World], Coroutine[Any, Any, None]]],
                                                          Callable[[], None]]:
    def wrap(fn: Callable[[World], Coroutine[Any, Any, None]]) -> Callable[[], None]:
        def test() -> None:
            world_run(fn, rng)

        test.__name__ = fn.__name__
        test.__doc__ = fn.__doc__
        return test

    return wrap


# --- results and thresholds ---------------------------------------------------------------------
@scenario()
async def test_initial_values_per_probe_type(w: World) -> None:
    w.runner.script = {"s": lambda _: BAD}
    w.running("c1", started=False)
    w.manager.add_pod(pod(startup_probe=probe("s", failure=5), readiness_probe=probe("r"), liveness_probe=probe("l")))
    await w.advance(0.2)
    assert not w.manager.started(UID, "c", "c1")  # startup: Unknown until it succeeds
    assert not w.manager.ready(UID, "c", "c1")  # readiness: Failure until it succeeds
    assert w.manager.failure(UID, "c", "c1") is None  # liveness: Success until it fails
    assert w.runner.count("s") == 1 and w.runner.count("r") == w.runner.count("l") == 0


@scenario()
async def test_liveness_fails_after_failure_threshold_then_holds(w: World) -> None:
    w.runner.script = {"l": lambda n: OK if n == 1 else BAD}
    w.running("c1")
    w.manager.add_pod(pod(liveness_probe=probe("l", failure=3)))
    await w.advance(2.5)  # runs at 0 (ok), 1, 2 (bad, bad)
    assert w.manager.failure(UID, "c", "c1") is None
    await w.advance(1)  # third failure in a row
    assert w.manager.failure(UID, "c", "c1") == ("liveness", "bad")
    runs = w.runner.count("l")
    await w.advance(5)
    assert w.runner.count("l") == runs  # on hold until a new container
    w.runner.script = {"l": lambda _: OK}
    w.running("c2")
    await w.advance(1.5)
    assert w.runner.count("l") > runs
    assert w.manager.failure(UID, "c", "c2") is None


@scenario()
async def test_readiness_needs_success_threshold_in_a_row(w: World) -> None:
    w.runner.script = {"r": lambda n: BAD if n == 2 else OK}
    w.running("c1")
    w.manager.add_pod(pod(readiness_probe=probe("r", success=2, failure=1)))
    await w.advance(1.5)  # ok, bad (streak broken)
    assert not w.manager.ready(UID, "c", "c1")
    await w.advance(1)  # ok (1)
    assert not w.manager.ready(UID, "c", "c1")
    await w.advance(1)  # ok (2)
    assert w.manager.ready(UID, "c", "c1")


@scenario()
async def test_errored_runs_are_thrown_away(w: World) -> None:
    w.runner.script = {"l": lambda _: Outcome(Result.UNKNOWN, error="container gone")}
    w.running("c1")
    w.manager.add_pod(pod(liveness_probe=probe("l", failure=1)))
    await w.advance(3.5)
    assert w.runner.count("l") >= 3
    assert w.recorder.records == []
    assert w.manager.failure(UID, "c", "c1") is None


@scenario()
async def test_result_changes_report_the_pod(w: World) -> None:
    w.runner.script = {"r": lambda n: OK if n < 3 else BAD}
    w.running("c1")
    w.manager.add_pod(pod(readiness_probe=probe("r", failure=1)))
    await w.advance(3.5)  # initial Failure (new), Success, Success (no change), Failure
    assert w.changes == [UID, UID, UID]


# --- timing ---------------------------------------------------------------------------------------
def test_next_tick_keeps_the_grid_and_skips_missed_ticks() -> None:
    assert next_tick(10.0, 2.0, 10.5) == 12.0
    assert next_tick(10.0, 2.0, 12.0) == 12.0  # due now
    assert next_tick(10.0, 2.0, 17.3) == 16.0  # ticks at 12 and 14 were missed: run now, for 16


@scenario(FixedRandom(0.5))
async def test_runs_follow_the_jittered_grid(w: World) -> None:
    w.running("c1")
    start = w.clock.monotonic()
    w.manager.add_pod(pod(liveness_probe=probe("l", period=2)))
    await w.advance(6.5)
    assert [round(r.scheduled - start, 6) for r in w.recorder.records] == [1.0, 3.0, 5.0]
    assert all(0 <= r.started - r.scheduled < STEP + 1e-6 for r in w.recorder.records)


@scenario()
async def test_initial_delay_counts_from_the_container_start(w: World) -> None:
    w.running("c1", age=0.05)
    w.manager.add_pod(pod(liveness_probe=probe("l", initial_delay_seconds=3)))
    await w.advance(2.9)
    assert w.runner.count("l") == 0
    await w.advance(0.6)  # the tick at 3 s
    assert w.runner.count("l") == 1


@scenario()
async def test_a_slow_probe_delays_only_its_own_worker(w: World) -> None:
    w.runner.delay = {"slow": 4.5}
    w.running("c1")
    w.manager.add_pod(pod(liveness_probe=probe("slow"), readiness_probe=probe("fast")))
    await w.advance(4)
    assert w.runner.count("slow") == 1
    assert w.runner.count("fast") >= 4
    await w.advance(1)  # the slow run ended at 4.5: missed ticks skipped, the next one at once
    slow_runs = [t for n, t in w.runner.runs if n == "slow"]
    assert len(slow_runs) == 2 and slow_runs[1] - slow_runs[0] < 4.5 + 2 * STEP


def test_first_runs_are_spread_over_the_period() -> None:
    async def check(w: World) -> None:
        start = w.clock.monotonic()
        for i in range(40):
            w.running("c", uid=f"u{i}")
            w.manager.add_pod(pod(uid=f"u{i}", liveness_probe=probe("l", period=10)))
        await w.advance(10)
        offsets = sorted(r.scheduled - start for r in w.recorder.records)
        assert len(offsets) == 40
        assert offsets[0] >= 0 and offsets[-1] < 10
        assert offsets[-1] - offsets[0] > 5  # not in lockstep
        assert len({round(o, 3) for o in offsets}) > 30

    world_run(check, random.Random(7))


@scenario(FixedRandom(0.99))
async def test_an_unready_started_container_triggers_its_readiness_probe(w: World) -> None:
    w.running("c1")
    w.manager.add_pod(pod(readiness_probe=probe("r", period=10)))
    await w.advance(1)
    assert w.runner.count("r") == 0  # its first tick is at 9.9 s
    assert not w.manager.ready(UID, "c", "c1")  # the status asks: run now
    await w.advance(0.2)
    assert w.runner.count("r") == 1 and w.recorder.records[0].triggered
    assert w.manager.ready(UID, "c", "c1")
    await w.advance(9.5)
    assert w.runner.count("r") == 1  # the grid restarted from the triggered run
    await w.advance(0.6)
    assert w.runner.count("r") == 2


# --- gating and lifecycle -------------------------------------------------------------------------
@scenario()
async def test_startup_gates_liveness_and_readiness(w: World) -> None:
    w.runner.script = {"s": lambda n: OK if n >= 3 else BAD}
    w.running("c1", started=False)
    w.manager.add_pod(pod(startup_probe=probe("s", failure=10), liveness_probe=probe("l"), readiness_probe=probe("r")))
    await w.advance(2.5)
    assert (w.runner.count("s"), w.runner.count("l"), w.runner.count("r")) == (3, 0, 0)
    assert w.manager.started(UID, "c", "c1")
    w.running("c1", started=True)  # the syncer publishes started=true
    await w.advance(3)
    assert w.runner.count("s") == 3  # the startup probe stopped once it succeeded
    assert w.runner.count("l") >= 2 and w.runner.count("r") >= 2


@scenario()
async def test_startup_failure_is_a_failure_to_act_on(w: World) -> None:
    w.runner.script = {"s": lambda _: BAD}
    w.running("c1", started=False)
    w.manager.add_pod(pod(startup_probe=probe("s", failure=2)))
    await w.advance(1.5)
    assert w.manager.failure(UID, "c", "c1") == ("startup", "bad")
    assert not w.manager.started(UID, "c", "c1")


@scenario()
async def test_a_terminated_container_fails_and_ends_the_worker_under_never(w: World) -> None:
    w.running("c1")
    w.manager.add_pod(pod(policy="Never", readiness_probe=probe("r")))
    await w.advance(1.5)
    assert w.manager.ready(UID, "c", "c1")
    w.terminated("c1")
    await w.advance(1.5)
    assert w.manager.keys() == []
    assert [k.probe_type for k in w.recorder.stopped] == [ProbeType.READINESS]


@scenario()
async def test_a_finished_pod_ends_its_workers(w: World) -> None:
    w.running("c1")
    w.manager.add_pod(pod(liveness_probe=probe("l"), readiness_probe=probe("r")))
    await w.advance(1.5)
    w.statuses[UID] = w.statuses[UID].model_copy(update={"phase": "Succeeded"})
    await w.advance(1.5)
    assert w.manager.keys() == []
    assert len(w.recorder.stopped) == 2


@scenario()
async def test_remove_pod_stops_its_workers_and_forgets_results(w: World) -> None:
    w.running("c1")
    w.manager.add_pod(pod(readiness_probe=probe("r")))
    w.manager.add_pod(pod(readiness_probe=probe("r")))  # again: no second worker
    assert len(w.manager.keys()) == 1
    await w.advance(1.5)
    assert w.manager.ready(UID, "c", "c1")
    w.manager.remove_pod(UID)
    await w.advance(0.2)
    assert w.manager.keys() == []
    assert w.manager.ready(UID, "c", "c1")  # no worker, no result: the default again
    assert len(w.recorder.stopped) == 1
    runs = w.runner.count("r")
    await w.advance(3)
    assert w.runner.count("r") == runs


@pytest.mark.parametrize("kind", ["liveness_probe", "readiness_probe", "startup_probe"])
def test_no_probe_means_started_and_ready(kind: str) -> None:
    async def check(w: World) -> None:
        w.running("c1")
        w.manager.add_pod(pod())
        assert w.manager.started(UID, "c", "c1") and w.manager.ready(UID, "c", "c1")
        assert w.manager.failure(UID, "c", "c1") is None

    world_run(check)
