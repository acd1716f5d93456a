"""ContainerLogRotator on real files: a fake CRI runtime that appends to each container's log
file and, on ReopenContainerLog, opens a new file at the log path as containerd does."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kubeletapi.clock import FakeClock, RealClock
from kubeletapi.errors import ConfigError, InvalidInput, NotFound, NotSupported, Unavailable
from kubeletapi.pods.logrotation import ContainerLogRotator
from kubeletapi.runtime.logfiles import rotated_files, rotated_name
from kubeletapi.runtime.logoptions import PodLogOptions
from kubeletapi.runtime.logs import encode_record, read_logs
from kubeletapi.runtime.types import ContainerState, ContainerStatus

T = TypeVar("T")
START = 1_700_000_000.25  # 2023-11-14 22:13:20.25 UTC
STAMP = "20231114-221320"
LOGGER = "kubeletapi.pods.logrotation"


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class FakeContainer:
    def __init__(self, cid: str, path: Path, state: ContainerState) -> None:
        self.id, self.path, self.state = cid, path, state
        self.file = path.open("ab")
        self.lines = 0

    def write(self, count: int = 1, size: int = 0) -> None:
        """`count` records "line <n>", padded with `size` bytes of x."""
        for _ in range(count):
            content = b"line %d %s" % (self.lines, b"x" * size)
            self.file.write(encode_record(time.time_ns(), "stdout", "F", content))
            self.lines += 1
        self.file.flush()

    def reopen(self) -> None:
        self.file.close()
        self.file = self.path.open("ab")

    def status(self) -> ContainerStatus:
        return ContainerStatus(id=self.id, sandbox_id="s", name=self.id, attempt=0, state=self.state, image="i",
                               image_ref="i", created_at=1, log_path=str(self.path))


class FakeRuntime:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.containers: dict[str, FakeContainer] = {}
        self.reopened: list[str] = []
        self.fail: dict[str, Exception] = {}
        self.list_error: Exception | None = None

    def add(self, cid: str, state: ContainerState = ContainerState.RUNNING, *, size: int = 0) -> FakeContainer:
        c = FakeContainer(cid, self.tmp / f"{cid}.log", state)
        if size:
            c.file.write(b"x" * size)
            c.file.flush()
        self.containers[cid] = c
        return c

    async def list_containers(self) -> list[ContainerStatus]:
        if self.list_error is not None:
            raise self.list_error
        return [c.status() for c in self.containers.values()]

    async def reopen_container_log(self, container_id: str) -> None:
        self.reopened.append(container_id)
        if container_id in self.fail:
            raise self.fail[container_id]
        self.containers[container_id].reopen()

    def close(self) -> None:
        for c in self.containers.values():
            c.file.close()


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeRuntime]:
    runtime = FakeRuntime(tmp_path)
    yield runtime
    runtime.close()


def rotator(fake: FakeRuntime, clock: FakeClock, *, max_size: int = 1000, max_files: int = 5) -> ContainerLogRotator:
    return ContainerLogRotator(fake, max_size, max_files, clock)


def names(path: Path) -> list[str]:
    return [Path(p).name for p in rotated_files(str(path))]


def test_a_log_at_or_above_max_size_is_rotated_and_the_runtime_reopens(fake: FakeRuntime) -> None:
    c = fake.add("a", size=1000)
    r = rotator(fake, FakeClock(START))
    assert run(r.rotate_once()) == [f"{c.path}.{STAMP}"]
    assert fake.reopened == ["a"]
    assert Path(f"{c.path}.{STAMP}").read_bytes() == b"x" * 1000
    c.write()  # the runtime writes to the new file
    assert c.path.read_bytes().endswith(b" stdout F line 0 \n")
    assert c.path.stat().st_size < 100


def test_a_log_below_max_size_is_untouched(fake: FakeRuntime) -> None:
    c = fake.add("a", size=999)
    r = rotator(fake, FakeClock(START))
    assert run(r.rotate_once()) == []
    assert fake.reopened == []
    assert c.path.stat().st_size == 999
    assert names(c.path) == []


def test_names_are_the_shims_with_a_suffix_within_one_second(fake: FakeRuntime) -> None:
    c = fake.add("a")
    clock = FakeClock(START)
    r = rotator(fake, clock, max_size=10, max_files=10)
    for _ in range(3):
        c.write()
        run(r.rotate_once())
    clock.advance(0.75)  # the next second (START is .25)
    c.write()
    run(r.rotate_once())
    assert names(c.path) == ["a.log." + s for s in (STAMP, f"{STAMP}.1", f"{STAMP}.2", "20231114-221321")]
    # The shim's naming: UTC seconds, and N above every file of that second (gaps are not filled).
    Path(f"{c.path}.20231114-221321.7").touch()
    c.write()
    assert run(r.rotate_once()) == [f"{c.path}.20231114-221321.8"]
    assert rotated_name("/l/0.log", START, []) == f"/l/0.log.{STAMP}"
    assert rotated_name("/l/0.log", START, ["/l/0.log.20231114-221319", f"/l/0.log.{STAMP}.gz"]) == f"/l/0.log.{STAMP}"
    assert re.fullmatch(r"0\.log\.[0-9]{8}-[0-9]{6}(\.[0-9]+)?", Path(rotated_name("/l/0.log", time.time(), [])).name)


def test_rotated_files_beyond_max_files_are_pruned_oldest_first(fake: FakeRuntime) -> None:
    c = fake.add("a")
    clock = FakeClock(START)
    r = rotator(fake, clock, max_size=10, max_files=3)
    for i in range(5):
        c.write()
        run(r.rotate_once())
        clock.advance(60 if i % 2 else 0)  # also several rotations within one second
    # max_files counts the current file: the two newest rotated files remain, holding lines 3 and 4.
    assert names(c.path) == ["a.log.20231114-221420.1", "a.log.20231114-221520"]
    assert [Path(p).read_bytes().split(b" F ")[1] for p in rotated_files(str(c.path))] == [b"line 3 \n", b"line 4 \n"]
    assert c.path.exists()


def test_suffixes_are_ordered_as_numbers(fake: FakeRuntime) -> None:
    c = fake.add("a")
    r = rotator(fake, FakeClock(START), max_size=10, max_files=3)
    for _ in range(12):
        c.write()
        run(r.rotate_once())
    assert names(c.path) == [f"a.log.{STAMP}.10", f"a.log.{STAMP}.11"]


def test_a_failed_reopen_renames_the_log_back_and_the_pass_goes_on(fake: FakeRuntime,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    bad, good = fake.add("bad", size=2000), fake.add("good", size=2000)
    fake.fail["bad"] = Unavailable("connection refused")
    r = rotator(fake, FakeClock(START))
    with caplog.at_level(logging.WARNING, LOGGER):
        assert run(r.rotate_once()) == [f"{good.path}.{STAMP}"]
    assert bad.path.read_bytes() == b"x" * 2000 and names(bad.path) == []
    assert "connection refused" in caplog.text and str(bad.path) in caplog.text
    # The runtime still writes to the file, which has its name again; the next pass retries.
    bad.write()
    del fake.fail["bad"]
    assert run(r.rotate_once()) == [f"{bad.path}.{STAMP}"]
    assert fake.reopened == ["bad", "good", "bad"]


def test_a_reopen_that_happened_after_all_is_not_undone(fake: FakeRuntime) -> None:
    """A reopen that failed late (a deadline passed after containerd had reopened): the new file
    at the path is not replaced by the rotated one."""
    c = fake.add("a", size=2000)
    original = fake.reopen_container_log

    async def reopen_then_fail(container_id: str) -> None:
        await original(container_id)
        raise Unavailable("deadline exceeded")

    fake.reopen_container_log = reopen_then_fail  # type: ignore[method-assign]
    assert run(rotator(fake, FakeClock(START)).rotate_once()) == []
    c.write()
    assert names(c.path) == [f"a.log.{STAMP}"]
    assert Path(f"{c.path}.{STAMP}").read_bytes() == b"x" * 2000
    assert c.path.read_bytes().endswith(b"line 0 \n")


def test_not_supported_is_logged_once_and_the_rename_undone(fake: FakeRuntime,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    a, b = fake.add("a", size=2000), fake.add("b", size=2000)
    fake.fail = {"a": NotSupported("no ReopenContainerLog"), "b": NotSupported("no ReopenContainerLog")}
    r = rotator(fake, FakeClock(START))
    with caplog.at_level(logging.DEBUG, LOGGER):
        for _ in range(3):
            assert run(r.rotate_once()) == []
    assert [rec.levelno for rec in caplog.records if rec.name == LOGGER] == [logging.WARNING]
    assert "no ReopenContainerLog" in caplog.text
    assert a.path.stat().st_size == b.path.stat().st_size == 2000
    assert names(a.path) == names(b.path) == []
    assert fake.reopened == ["a", "b"] * 3


def test_a_missing_log_or_a_vanished_container_never_stops_the_pass(fake: FakeRuntime) -> None:
    gone = fake.add("gone", size=2000)
    missing = fake.add("missing")
    missing.path.unlink()
    fake.add("z", size=2000)
    fake.fail["gone"] = NotFound('container "gone" not found')
    r = rotator(fake, FakeClock(START))
    assert run(r.rotate_once()) == [f"{fake.tmp}/z.log.{STAMP}"]
    assert gone.path.stat().st_size == 2000 and names(gone.path) == []  # renamed back
    # A running container's missing log: the runtime is asked to reopen it (as the kubelet does).
    assert fake.reopened == ["gone", "missing", "z"]
    assert missing.path.exists() and names(missing.path) == []


def test_a_missing_log_that_cannot_be_reopened_is_only_logged(fake: FakeRuntime) -> None:
    """The pod's log directory removed: the runtime cannot reopen the log either."""
    c = fake.add("a")
    c.path.unlink()
    fake.fail["a"] = Unavailable("open log: no such file or directory")
    assert run(rotator(fake, FakeClock(START)).rotate_once()) == []
    assert not c.path.exists()


def test_containers_that_do_not_run_are_skipped(fake: FakeRuntime) -> None:
    for state in (ContainerState.CREATED, ContainerState.EXITED, ContainerState.UNKNOWN):
        fake.add(state.name.lower(), state, size=5000)
    r = rotator(fake, FakeClock(START))
    assert run(r.rotate_once()) == []
    assert fake.reopened == []
    assert all(c.path.stat().st_size == 5000 for c in fake.containers.values())


def test_a_failed_listing_is_logged(fake: FakeRuntime, caplog: pytest.LogCaptureFixture) -> None:
    fake.list_error = Unavailable("containerd is down")
    with caplog.at_level(logging.WARNING, LOGGER):
        assert run(rotator(fake, FakeClock(START)).rotate_once()) == []
    assert "containerd is down" in caplog.text


def test_run_rotates_at_once_then_every_period_and_survives_a_failing_pass(
        fake: FakeRuntime, caplog: pytest.LogCaptureFixture) -> None:
    c = fake.add("a", size=2000)
    clock = FakeClock(START)
    r = rotator(fake, clock)

    async def scenario() -> None:
        task = asyncio.create_task(r.run(10))
        try:
            await wait(lambda: len(fake.reopened) == 1 and clock.sleepers == 1)  # rotated, now sleeping
            fake.list_error = RuntimeError("a bug")  # not a KubeletError: logged, the loop goes on
            clock.advance(10)
            await wait(lambda: "a bug" in caplog.text and clock.sleepers == 1)
            fake.list_error = None
            c.write(size=1000)
            clock.advance(10)
            await wait(lambda: len(fake.reopened) == 2)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    with caplog.at_level(logging.ERROR, LOGGER):
        run(scenario())
    assert names(c.path) == [f"a.log.{STAMP}", "a.log.20231114-221340"]


async def wait(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


@pytest.mark.parametrize(("max_size", "max_files"), [(0, 5), (-1, 5), (1024, 1), (1024, 0)])
def test_bad_limits_are_refused(fake: FakeRuntime, max_size: int, max_files: int) -> None:
    with pytest.raises(ConfigError):
        rotator(fake, FakeClock(START), max_size=max_size, max_files=max_files)
    assert issubclass(ConfigError, InvalidInput)


def test_a_follower_reads_across_rotations_in_order(fake: FakeRuntime) -> None:
    """The shared reader, following from before a dozen rotations within one second (suffixes
    past .9), reads every line once and in order, then the current file."""
    c = fake.add("a")
    r = rotator(fake, FakeClock(START), max_size=10, max_files=20)

    async def scenario() -> list[bytes]:
        stream = read_logs(c.path, PodLogOptions(follow=True), clock=RealClock(), container_running=lambda: False,
                           poll_interval=0.01)
        try:
            for _ in range(12):
                c.write(3)
                assert len(await r.rotate_once()) == 1
            c.write(3)
            return b"".join([chunk async for chunk in stream]).splitlines()
        finally:
            await stream.aclose()

    lines = run(scenario())
    assert lines == [b"line %d " % i for i in range(39)]
    assert names(c.path)[-1] == f"a.log.{STAMP}.11"
