"""The housekeeping loop on a fake clock: a cycle per interval, failures keep the last snapshot."""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.stats.housekeeping import Housekeeper
from kubeletapi.stats.inventory import PodRef, VolumeRef
from tests.stats.fixture import START, TESTDATA, FixtureInventory, make_collector


class FlakyInventory:
    """The fixture's pods, or an exception while `fail` is set."""

    def __init__(self, root: Path) -> None:
        self.inner = FixtureInventory(root)
        self.fail = False

    def pods(self) -> list[PodRef]:
        if self.fail:
            raise RuntimeError("pod manager exploded")
        return self.inner.pods()

    def runtime_pids(self) -> list[int]:
        return self.inner.runtime_pids()


async def _until(check: object, timeout: float = 5.0) -> None:
    assert callable(check)
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_cycles_follow_the_clock_and_survive_failures(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shutil.copytree(TESTDATA / "cgroups" / "v1", tmp_path / "cgroups", symlinks=True)
    clock = FakeClock(START)
    inventory = FlakyInventory(tmp_path)
    keeper = Housekeeper(make_collector(tmp_path, clock), inventory, clock, interval_s=10, volume_period_s=60)

    async def scenario() -> None:
        await keeper.start()
        first = keeper.latest()
        assert first is not None and first.generation == 1  # collected before start() returns
        assert keeper._collector.volumes.get(tmp_path / "volumes" / "cache") is not None
        await asyncio.sleep(0.05)  # let the loops start sleeping before time moves
        clock.advance(10)
        await _until(lambda: (s := keeper.latest()) is not None and s.generation == 2)
        second = keeper.latest()
        assert second is not None and second.time_ns == first.time_ns + 10_000_000_000
        inventory.fail = True
        await asyncio.sleep(0.05)
        clock.advance(10)
        await _until(lambda: "stats housekeeping failed" in caplog.text)
        assert keeper.latest() is second  # the failed cycle left the last good one in place
        inventory.fail = False
        await asyncio.sleep(0.05)
        clock.advance(10)
        await _until(lambda: (s := keeper.latest()) is not None and s.generation == 3)
        await keeper.stop()

    asyncio.run(scenario())


class GrowingInventory(FlakyInventory):
    """The fixture's pods, plus a second pod with an emptyDir once `added` is set."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.added = False

    def pods(self) -> list[PodRef]:
        pods = super().pods()
        if self.added:
            first = pods[0]
            volume = VolumeRef("scratch", self.inner.root / "volumes" / "scratch", "emptyDir")
            pods.append(replace(first, uid="new-uid", name="new", containers=(), volumes=(volume,)))
        return pods


def test_a_new_pods_volumes_are_measured_in_its_first_cycle_and_observers_see_every_cycle(tmp_path: Path) -> None:
    shutil.copytree(TESTDATA / "cgroups" / "v1", tmp_path / "cgroups", symlinks=True)
    clock = FakeClock(START)
    inventory = GrowingInventory(tmp_path)
    keeper = Housekeeper(make_collector(tmp_path, clock), inventory, clock, interval_s=10, volume_period_s=3600)
    seen: list[int] = []
    keeper.add_observer(lambda snap: seen.append(snap.generation))
    keeper.add_observer(lambda snap: 1 / 0)  # a failing observer is logged, the others still run

    async def scenario() -> None:
        await keeper.start()
        cache = keeper._collector.volumes
        periodic = cache.get(tmp_path / "volumes" / "cache")
        assert periodic is not None and cache.get(tmp_path / "volumes" / "scratch") is None
        inventory.added = True
        snap = await keeper.collect()  # long before the next volumeStatsAggPeriod
        assert snap is not None
        (new,) = [p for p in snap.pods if p.ref.name == "new"]
        assert new.volumes[0].usage is not None  # measured at once (FixedFs: 4096 bytes)
        assert new.volumes[0].usage.used == 4096
        assert cache.get(tmp_path / "volumes" / "cache") is periodic  # the others keep their figure
        await keeper.stop()

    asyncio.run(scenario())
    assert seen == [1, 2]
