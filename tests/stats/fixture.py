"""Two housekeeping cycles over fixture trees, with a fake clock: the input of the golden files.

The node is tests/testdata/stats/node (proc, sys, etc: machine, meminfo, net/dev, diskstats, the
agent's and a shim's /proc/<pid>/stat); the cgroups are a copy of tests/testdata/cgroups/<v> with
one burstable pod and its container (systemd-driver names). Between the two cycles the clock
moves 10 s and the container's and pod's CPU counters move 5 s (half a core), so rates are
non-zero and exact. Filesystem figures come from a fixed HostFs; directory ctimes are pinned.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.cgroups import OsReaderFs, detect, new_reader
from kubeletapi.clock import FakeClock
from kubeletapi.stats.collect import Collector, CollectorConfig, NodeRoots
from kubeletapi.stats.fs import FsStats
from kubeletapi.stats.inventory import ContainerRef, PodRef, VolumeRef
from kubeletapi.stats.snapshot import FsUsage, Snapshot

TESTDATA = Path(__file__).resolve().parent.parent / "testdata"
NODE = TESTDATA / "stats" / "node"
START = 1_763_719_200.0  # 2025-11-21T10:00:00Z
CREATED_NS = 1_763_710_000_123_456_789
UID = "6b2f4a1e-3c9d-4f7a-9e2b-1a5c8d7e0f31"
POD = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6b2f4a1e_3c9d_4f7a_9e2b_1a5c8d7e0f31.slice"
CID = "4f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a19"
CTR = f"{POD}/cri-containerd-{CID}.scope"
GiB = 1 << 30


class PinnedCtimes(OsReaderFs):
    """The real fixture files, with every cgroup created at CREATED_NS (checkouts differ)."""

    def ctime_ns(self, path: str) -> int:
        super().ctime_ns(path)  # still fails for a missing directory
        return CREATED_NS


class FixedFs:
    """Filesystem figures that do not depend on the machine running the test."""

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock

    def stats(self, path: Path) -> FsStats:
        if "runtime" in path.parts:
            return FsStats("/dev/sdb1", 8, 17, 100 * GiB, 60 * GiB, 40 * GiB, 6_553_600, 6_000_000, 553_600)
        return FsStats("/dev/vda", 254, 0, 200 * GiB, 150 * GiB, 50 * GiB, 13_107_200, 12_000_000, 1_107_200)

    def usage(self, path: Path) -> FsUsage | None:
        if path.name == "data":
            return None  # a hostPath too large to walk
        sizes = {"cache": (8 << 20, 12), "runtime": (3 << 20, 40), "app": (24576, 3)}
        used, inodes = sizes.get(path.name, (4096, 1))
        return FsUsage(used, inodes, int(self._clock.now() * 1e9))

    def files_usage(self, path: Path) -> FsUsage | None:
        return self.usage(path)  # the log directory's files: the same fixed figures


@dataclass(frozen=True)
class FixtureInventory:
    root: Path

    def pods(self) -> list[PodRef]:
        container = ContainerRef(
            name="app", id=CID, image="registry.example/app:1.2", created_ns=CREATED_NS + 2_000_000_000,
            started_ns=CREATED_NS + 3_000_000_000, running=True, cgroup=CTR, pid=0,
            log_dir=self.root / "logs" / f"default_web_{UID}" / "app",
        )
        return [PodRef(
            uid=UID, name="web", namespace="default", created_ns=CREATED_NS, cgroup=POD,
            log_dir=self.root / "logs" / f"default_web_{UID}", containers=(container,),
            volumes=(VolumeRef("cache", self.root / "volumes" / "cache", "emptyDir"),
                     VolumeRef("data", Path("/srv/data"), "hostPath")),
        )]

    def runtime_pids(self) -> list[int]:
        return [5001]


def _bump(file: Path, delta: int) -> None:
    file.write_text(f"{int(file.read_text().split()[0]) + delta}\n")


# CPU seconds added between the cycles: half a core for the container (and so its pod), 1.2
# cores for the whole node.
CPU_ADDED_NS = {CTR: 5_000_000_000, POD: 5_000_000_000, "/": 12_000_000_000}


def _bump_cpu(cgroups: Path, version: int) -> None:
    for path, delta in CPU_ADDED_NS.items():
        if version == 1:
            _bump(cgroups / "sys/fs/cgroup/cpu,cpuacct" / path.lstrip("/") / "cpuacct.usage", delta)
            continue
        stat = cgroups / "sys/fs/cgroup" / path.lstrip("/") / "cpu.stat"
        lines = []
        for line in stat.read_text().splitlines():
            key, _, value = line.partition(" ")
            lines.append(f"{key} {int(value) + delta // 1000}" if key == "usage_usec" else line)
        stat.write_text("\n".join(lines) + "\n")


def make_collector(tmp: Path, clock: FakeClock) -> Collector:
    """A collector over tmp/cgroups (a fixture copy) and the fixture node."""
    config = CollectorConfig(
        node_name="node-1", root_dir=tmp / "kubelet", runtime_dir=tmp / "kubelet" / "runtime",
        pod_logs_dir=tmp / "logs", pods_cgroup="/kubepods.slice", agent_pid=4242,
        agent_start_ns=int((START - 3600) * 1e9), roots=NodeRoots(NODE / "proc", NODE / "sys", NODE / "etc"),
    )
    reader = new_reader(detect(tmp / "cgroups"), PinnedCtimes())
    return Collector(config, reader, lambda: int(clock.now() * 1e9), FixedFs(clock))


def fixture_snapshots(tmp: Path, version: int) -> tuple[Snapshot, Snapshot]:
    cgroups = tmp / "cgroups"
    shutil.copytree(TESTDATA / "cgroups" / f"v{version}", cgroups, symlinks=True)
    clock = FakeClock(START)
    collector = make_collector(tmp, clock)
    inventory = FixtureInventory(tmp)
    collector.refresh_volumes(inventory.pods())
    first = collector.collect(inventory.pods(), inventory.runtime_pids(), None, 1)
    clock.advance(10)
    _bump_cpu(cgroups, version)
    second = collector.collect(inventory.pods(), inventory.runtime_pids(), first, 2)
    return first, second
