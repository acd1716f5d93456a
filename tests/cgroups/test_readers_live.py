"""Stat readers on this machine's live cgroups: the root, the test's own cgroup, and a cgroup with a
real process in it (root on cgroup v1 only; skipped with the reason elsewhere).

The tests also report what a sample costs (CPU µs per sample over 300 samples, printed with -s and
recorded as junit properties); the cost is measured, not asserted. The process test creates
/sys/fs/cgroup/<controller>/kubeletapi-readtest-<random> and its finalizer kills the process by
pid and removes every directory it made, whatever happens.
"""

from __future__ import annotations

import errno
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubeletapi.cgroups import CgroupReader, detect, new_reader
from kubeletapi.errors import KubeletError

Mi = 1024 * 1024

def _own_cgroup(version: int) -> str:
    """This process's cgroup: the unified one (v2) or the memory controller's (v1)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (version == 2 and controllers == "") or (version == 1 and "memory" in controllers.split(",")):
            return path
    pytest.skip("no cgroup line for this process in /proc/self/cgroup")


def _cost_us(reader: CgroupReader, path: str, times: int = 300) -> float:
    start = time.process_time()
    for _ in range(times):
        assert reader.sample(path, 0) is not None
    return (time.process_time() - start) / times * 1e6


def test_live_root_and_own_cgroup(record_property: Callable[[str, object], None]) -> None:
    try:
        layout = detect()
    except KubeletError as err:
        pytest.skip(f"no usable cgroup mounts here: {err}")
    reader = new_reader(layout)
    root = reader.sample("/", time.time_ns())
    assert root is not None
    assert root.cpu is not None and root.cpu.usage_ns > 0
    own = reader.sample(_own_cgroup(layout.version), time.time_ns())
    assert own is not None
    assert own.memory is not None and own.memory.usage > 0
    assert isinstance(reader.children("/"), list)
    # Micro-benchmark, reported rather than asserted: CPU µs per sample of a live cgroup.
    for name, path in (("root", "/"), ("own", own.path)):
        cost = _cost_us(reader, path)
        record_property(f"sample_cpu_us_{name}", round(cost, 1))
        print(f"live cgroup v{layout.version} {name} {path}: {cost:.1f} µs CPU per sample")


LIVE_CONTROLLERS = ("cpu", "cpuacct", "memory", "pids", "blkio")
TOUCHED = 64 * Mi
CHILD = f"""
import sys, time
sys.stdin.readline()  # wait until placed in the cgroup, so the pages are charged to it
data = b"\\x01" * {TOUCHED}  # allocated and touched (memset) inside the cgroup
end = time.monotonic() + 0.3
while time.monotonic() < end: pass
print("ready", flush=True)
end = time.monotonic() + 10  # keep burning so usage grows between samples
while time.monotonic() < end: pass
time.sleep(60)
"""


@pytest.fixture
def live_v1_cgroup() -> Iterator[tuple[CgroupReader, str, list[Path]]]:
    if os.geteuid() != 0:
        pytest.skip("the live reader test creates cgroups and needs root")
    try:
        layout = detect()
    except KubeletError as err:
        pytest.skip(f"no usable cgroup mounts here: {err}")
    if layout.version != 1:
        pytest.skip(f"this machine uses cgroup v{layout.version}; the live reader test covers cgroup v1")
    mounts = [layout.mount_point(c) for c in LIVE_CONTROLLERS]
    if None in mounts:
        pytest.skip(f"cgroup v1 controllers not all mounted: {LIVE_CONTROLLERS}")
    name = f"kubeletapi-readtest-{secrets.token_hex(4)}"
    dirs = [m / name for m in dict.fromkeys(m for m in mounts if m is not None)]
    created: list[Path] = []
    try:
        for directory in dirs:
            directory.mkdir()
            created.append(directory)
        yield new_reader(layout), f"/{name}", created
    finally:
        for directory in reversed(created):
            _rmdir(directory)
        assert not [d for d in created if d.exists()]


def _rmdir(directory: Path) -> None:
    # A cgroup whose last task just died is busy (EBUSY) for a moment.
    for _ in range(100):
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as err:
            if err.errno != errno.EBUSY:
                raise
            time.sleep(0.05)
    directory.rmdir()


def test_live_v1_process_is_sampled(live_v1_cgroup: tuple[CgroupReader, str, list[Path]]) -> None:
    reader, path, dirs = live_v1_cgroup
    memory_dir = next(d for d in dirs if (d / "memory.limit_in_bytes").exists())
    (memory_dir / "memory.limit_in_bytes").write_text(str(256 * Mi))
    next(d for d in dirs if (d / "pids.max").exists()).joinpath("pids.max").write_text("64")
    with subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        try:
            for directory in dirs:
                (directory / "cgroup.procs").write_text(str(proc.pid))
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
            assert proc.stdout.readline() == b"ready\n"
            first = reader.sample(path, time.time_ns())
            time.sleep(0.2)
            second = reader.sample(path, time.time_ns())
            cost = _cost_us(reader, path)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert first is not None and second is not None
    assert first.cpu is not None and second.cpu is not None and first.memory is not None
    assert 0 < first.cpu.usage_ns < second.cpu.usage_ns
    assert abs(first.memory.working_set - TOUCHED) <= 0.15 * TOUCHED, first.memory
    assert first.spec.memory_limit == 256 * Mi
    assert first.spec.pids_limit == 64
    assert first.pids is not None and first.pids >= 1
    assert first.processes == 1
    assert abs(first.created_ns - time.time_ns()) < 120 * 10**9
    print(f"live cgroup v1 {path} with a process: {cost:.1f} µs CPU per sample; working set "
          f"{first.memory.working_set / Mi:.1f} MiB for {TOUCHED // Mi} MiB touched, cpu "
          f"{first.cpu.usage_ns / 1e6:.0f} → {second.cpu.usage_ns / 1e6:.0f} ms")
