"""The summary with a CRI runtime's figures (runtime/stats.py, stats/runtimestats.py) over the v1 fixture tree:
pod and container CPU/memory from the runtime, rates from two cycles when the runtime gives none
(and its own when it does), writable layers in rootfs and ephemeral storage, the image filesystem
from ImageFsInfo (kept when the runtime does not answer), the pause container on cAdvisor only."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from kubeletapi.cgroups.stats import MemoryStats
from kubeletapi.clock import FakeClock
from kubeletapi.metrics.cadvisor import render_cadvisor
from kubeletapi.metrics.resource import render_resource
from kubeletapi.runtime.stats import ImageFs, RuntimeStats, RuntimeUsage
from kubeletapi.stats.collect import Collector
from kubeletapi.stats.inventory import ContainerRef, PodRef
from kubeletapi.stats.snapshot import Snapshot
from kubeletapi.stats.summary import SummaryError, cpu_and_memory_summary, full_summary
from tests.stats.fixture import CID, CREATED_NS, CTR, POD, START, TESTDATA, UID, FixtureInventory, make_collector

SANDBOX = "9" * 64
MiB = 1 << 20


def _collector(tmp: Path, clock: FakeClock) -> Collector:
    shutil.copytree(TESTDATA / "cgroups" / "v1", tmp / "cgroups", symlinks=True)
    for hierarchy in (tmp / "cgroups" / "sys" / "fs" / "cgroup").iterdir():  # the pause container's cgroup
        container = hierarchy / CTR.lstrip("/")
        if container.is_dir() and not hierarchy.is_symlink():
            shutil.copytree(container, hierarchy / POD.lstrip("/") / SANDBOX)
    collector = make_collector(tmp, clock)
    collector.cfg = dataclasses.replace(collector.cfg, runtime_dir=None)  # a CRI runtime: ImageFsInfo
    return collector


def _pods(tmp: Path) -> list[PodRef]:
    (pod,) = FixtureInventory(tmp).pods()
    pause = ContainerRef(name="", id=SANDBOX, image="localhost/pause:3.9", created_ns=CREATED_NS,
                         started_ns=CREATED_NS, running=True, cgroup=f"{POD}/{SANDBOX}", sandbox=True)
    return [dataclasses.replace(pod, containers=(*pod.containers, pause))]


def _reported(clock: FakeClock, cpu_s: float, nano_cores: int | None = None, image_fs: bool = True) -> RuntimeStats:
    now = int(clock.now() * 1e9)
    memory = MemoryStats(usage=40 * MiB, working_set=30 * MiB, rss=20 * MiB, pgfault=100, pgmajfault=2)
    container = RuntimeUsage(now, cpu_usage_ns=int(cpu_s * 1e9), nano_cores=nano_cores, memory=memory,
                             rootfs_used=12 * MiB, rootfs_inodes=34)
    pod = RuntimeUsage(now, cpu_usage_ns=int(cpu_s * 1e9) + 10**9, nano_cores=nano_cores, memory=memory,
                       process_count=3)
    fs = ImageFs(Path("/var/lib/containerd/runtime"), 700 * MiB, 5000, now) if image_fs else None
    return RuntimeStats({CID: container}, {UID: pod}, fs)


def _two_cycles(tmp: Path, nano_cores: int | None) -> Snapshot:
    clock = FakeClock(START)
    collector = _collector(tmp, clock)
    pods = _pods(tmp)
    first = collector.collect(pods, [], None, 1, _reported(clock, 100.0, nano_cores))
    clock.advance(10)
    return collector.collect(pods, [], first, 2, _reported(clock, 102.5, nano_cores))


def test_runtime_figures_with_rates_from_two_cycles(tmp_path: Path) -> None:
    snap = _two_cycles(tmp_path, nano_cores=0)  # containerd's empty rate
    summary = full_summary(snap)
    (pod,) = summary.pods
    (app,) = pod.containers  # no pause container in the summary
    assert app.name == "app"
    assert app.cpu is not None and app.cpu.usage_core_nano_seconds == 102_500_000_000
    assert app.cpu.usage_nano_cores == 250_000_000  # 2.5 s over 10 s
    assert app.memory is not None and (app.memory.working_set_bytes, app.memory.rss_bytes) == (30 * MiB, 20 * MiB)
    assert (app.memory.page_faults, app.memory.major_page_faults) == (100, 2)
    assert app.rootfs is not None and (app.rootfs.used_bytes, app.rootfs.inodes_used) == (12 * MiB, 34)
    assert pod.cpu is not None and pod.cpu.usage_nano_cores == 250_000_000
    assert pod.process_count == 3
    assert pod.ephemeral_storage is not None and pod.ephemeral_storage.used_bytes is not None
    assert pod.ephemeral_storage.used_bytes >= 12 * MiB  # logs + the writable layer + volumes
    image_fs = summary.node.image_fs
    assert image_fs is not None and (image_fs.used_bytes, image_fs.inodes_used) == (700 * MiB, 5000)
    cpu_mem = cpu_and_memory_summary(snap)
    assert cpu_mem.pods[0].containers[0].memory.working_set_bytes == 30 * MiB  # type: ignore[union-attr]
    assert 'container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 3.145728e+07' \
        in render_resource(cpu_mem).decode()


def test_the_runtimes_own_rate_wins(tmp_path: Path) -> None:
    (pod,) = full_summary(_two_cycles(tmp_path, nano_cores=123_456)).pods
    assert pod.containers[0].cpu.usage_nano_cores == 123_456  # type: ignore[union-attr]


def test_first_cycle_has_no_rate(tmp_path: Path) -> None:
    clock = FakeClock(START)
    snap = _collector(tmp_path, clock).collect(_pods(tmp_path), [], None, 1, _reported(clock, 100.0, 0))
    assert full_summary(snap).pods[0].containers[0].cpu.usage_nano_cores is None  # type: ignore[union-attr]


def test_without_runtime_stats_the_cgroups_serve_and_the_image_fs_stays(tmp_path: Path) -> None:
    clock = FakeClock(START)
    collector = _collector(tmp_path, clock)
    first = collector.collect(_pods(tmp_path), [], None, 1, _reported(clock, 100.0))
    clock.advance(10)
    second = collector.collect(_pods(tmp_path), [], first, 2, None)  # the runtime did not answer
    assert second.node.imagefs_used == first.node.imagefs_used
    (pod,) = full_summary(second).pods
    app = pod.containers[0]
    assert app.memory is not None and app.memory.working_set_bytes != 30 * MiB  # the cgroup's figures
    assert app.rootfs is None


def test_no_image_filesystem_ever_is_an_error(tmp_path: Path) -> None:
    clock = FakeClock(START)
    snap = _collector(tmp_path, clock).collect(_pods(tmp_path), [], None, 1, _reported(clock, 1.0, image_fs=False))
    assert any("imageFs" in e for e in snap.errors)
    with pytest.raises(SummaryError, match="failed to get imageFs stats"):
        full_summary(snap)


def test_the_pause_container_is_on_cadvisor_with_its_image(tmp_path: Path) -> None:
    text = render_cadvisor(_two_cycles(tmp_path, 0), version="test").decode()
    pause = [line for line in text.splitlines() if f'name="{SANDBOX}"' in line]
    assert pause, "the pause container's cgroup is exported"
    assert all('container=""' in line and 'image="localhost/pause:3.9"' in line and 'pod="web"' in line
               for line in pause)
