"""Live cgroup v1 checks on this machine: real cgroup directories, a real process, real limits.

Runs only as root on a cgroup v1 (or hybrid) node; elsewhere it is skipped with the reason. Each
test works under /kubeletapi-test-<random> in every hierarchy and the fixture removes it (and kills
the processes the test started) whatever happens.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubeletapi.cgroups import CgroupLayout, ResourceConfig, V1Writer, detect
from kubeletapi.errors import Conflict, KubeletError

Mi = 1024 * 1024
NEEDED = ("cpu", "cpuacct", "cpuset", "memory", "pids")


@dataclass
class Live:
    layout: CgroupLayout
    writer: V1Writer
    top: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, *argv: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def place(self, path: str, pid: int) -> None:
        """What the shim does: write the pid to the cgroup.procs of every hierarchy."""
        for procs_file in self.writer.procs_files(path):
            procs_file.write_text(str(pid))

    def file(self, controller: str, path: str, name: str) -> str:
        mount = self.layout.mount_point(controller)
        assert mount is not None
        return (mount / path.lstrip("/") / name).read_text().strip()

    def leftovers(self) -> list[Path]:
        return [h.mount_point / self.top.lstrip("/") for h in self.layout.hierarchies
                if (h.mount_point / self.top.lstrip("/")).exists()]


@pytest.fixture
def live() -> Iterator[Live]:
    if os.geteuid() != 0:
        pytest.skip("live cgroup test needs root to create cgroups")
    try:
        layout = detect()
    except KubeletError as err:
        pytest.skip(f"no usable cgroup mounts here: {err}")
    if layout.version != 1:
        pytest.skip(f"this machine uses cgroup v{layout.version}; the live test covers cgroup v1")
    missing = [c for c in NEEDED if layout.mount_point(c) is None]
    if missing:
        pytest.skip(f"cgroup v1 controllers not mounted: {', '.join(missing)}")
    state = Live(layout, V1Writer(layout), f"/kubeletapi-test-{secrets.token_hex(4)}")
    try:
        yield state
    finally:
        for proc in state.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        _wait_empty(state.writer, state.top)
        state.writer.delete(state.top)
        assert state.leftovers() == []


def _wait_empty(writer: V1Writer, path: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while writer.pids(path) and time.monotonic() < deadline:
        time.sleep(0.02)


def _cgroup_of(pid: int) -> dict[str, str]:
    """controller → cgroup path from /proc/<pid>/cgroup."""
    out: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            out[controller or "unified"] = path
    return out


def test_live_container_cgroup_limits_and_cleanup(live: Live) -> None:
    pod = f"{live.top}/pod{uuid.uuid4()}"
    c1 = f"{pod}/c1"
    live.writer.create(pod)
    live.writer.set_resources(pod, ResourceConfig(1024, 100000, 100000, 256 * Mi, 64))
    live.writer.create(c1)
    live.writer.set_resources(c1, ResourceConfig(512, 20000, 100000, 64 * Mi, 16))
    assert live.writer.exists(c1)

    sleeper = live.start("sleep", "60")
    live.place(c1, sleeper.pid)
    membership = _cgroup_of(sleeper.pid)
    for controller in NEEDED:
        assert membership[controller] == c1, controller
    assert live.writer.pids(c1) == [sleeper.pid]
    assert live.writer.pids(live.top) == [sleeper.pid]

    assert live.file("cpu", c1, "cpu.shares") == "512"
    assert live.file("cpu", c1, "cpu.cfs_quota_us") == "20000"
    assert live.file("cpu", c1, "cpu.cfs_period_us") == "100000"
    assert live.file("memory", c1, "memory.limit_in_bytes") == str(64 * Mi)
    assert live.file("pids", c1, "pids.max") == "16"
    assert live.file("pids", pod, "pids.max") == "64"
    assert live.file("cpuset", c1, "cpuset.cpus") == live.file("cpuset", "/", "cpuset.cpus")
    assert live.writer.oom_kill_count(c1) == 0

    with pytest.raises(Conflict):
        live.writer.delete(live.top)
    sleeper.kill()
    sleeper.wait(timeout=10)
    _wait_empty(live.writer, live.top)
    live.writer.delete(live.top)
    assert not live.writer.exists(c1)
    assert live.leftovers() == []


def test_live_cpu_throttling_is_visible(live: Live) -> None:
    busy = f"{live.top}/pod{uuid.uuid4()}/busy"
    live.writer.create(busy)
    live.writer.set_resources(busy, ResourceConfig(cpu_quota=5000, cpu_period=100000))  # 5% of a CPU
    spinner = live.start("sh", "-c", "while :; do :; done")
    live.place(busy, spinner.pid)
    deadline = time.monotonic() + 5
    while live.writer.throttled(busy).throttled_periods < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    stats = live.writer.throttled(busy)
    spinner.kill()
    assert stats.throttled_periods >= 3
    assert stats.throttled_usec > 0
    assert stats.periods >= stats.throttled_periods
