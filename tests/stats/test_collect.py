"""The collector without cgroups (what a non-root agent does): pods measured from their process trees."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from kubeletapi.stats.collect import Collector, CollectorConfig, own_start_ns
from kubeletapi.stats.du import DirUsage, dir_usage, files_usage
from kubeletapi.stats.inventory import ContainerRef, PodRef
from kubeletapi.stats.snapshot import SampleSource
from kubeletapi.stats.summary import encode, full_summary

BUSY = "import time\nx = b'\\x01' * (32 << 20)\nwhile True: pass\n"


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    yield proc
    proc.kill()
    proc.wait()


def test_process_tree_stats_without_cgroups(tmp_path: Path, busy: subprocess.Popen[bytes]) -> None:
    config = CollectorConfig(
        node_name="n", root_dir=tmp_path, runtime_dir=tmp_path, pod_logs_dir=tmp_path, pods_cgroup=None,
        agent_pid=os.getpid(), agent_start_ns=own_start_ns(),
    )
    collector = Collector(config, None, time.time_ns)
    container = ContainerRef("spin", "c1", "python", time.time_ns(), time.time_ns(), True, pid=busy.pid)
    pods = [PodRef("u1", "p", "ns", time.time_ns(), containers=(container,))]
    proc = psutil.Process(busy.pid)
    first = collector.collect(pods, [], None, 1)
    cpu0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
    time.sleep(1.0)
    cpu1, t1 = sum(proc.cpu_times()[:2]), time.monotonic()
    snap = collector.collect(pods, [], first, 2)
    assert snap.errors == ()
    observed = snap.pods[0].containers[0].stats
    assert observed is not None and (observed.source, observed.cur.path) == (SampleSource.PROCESS_TREE, "c1")
    rate = observed.cpu_nanocores()
    # What the busy loop got of a core depends on the machine's load: compare with the kernel's
    # own figure for the same second, read independently (psutil), within the sampling windows'
    # difference and the clock ticks' granularity.
    measured = (cpu1 - cpu0) / (t1 - t0) * 1e9
    assert rate is not None and measured > 50_000_000  # a busy loop, however starved
    assert 0.75 * measured <= rate <= 1.25 * measured, (rate, measured)
    assert observed.cur.memory is not None and observed.cur.memory.working_set > 32 << 20
    pod = snap.pods[0].stats
    assert pod is not None and pod.cur.cpu == observed.cur.cpu  # the pod is the sum of its one container
    names = [s.name for s in snap.system]
    assert names == ["kubelet", "runtime", "pods"]
    assert snap.node.root is not None and snap.node.root.cur.cpu is not None  # from /proc/stat
    doc = full_summary(snap)
    assert doc.pods[0].process_count == 1
    assert b'"usageNanoCores"' in encode(doc)


def test_dir_usage_counts_blocks_and_inodes_and_stops_on_huge_trees(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 10000)
    os.link(tmp_path / "a" / "f", tmp_path / "g")  # a hard link counts once
    (tmp_path / "s").symlink_to("/")  # not followed
    usage = dir_usage(tmp_path)
    assert usage is not None
    assert usage.inodes == 4  # root, a, a/f, s
    assert usage.used >= 10000
    assert dir_usage(tmp_path, max_entries=2) is None
    assert dir_usage(tmp_path / "missing") is None


def test_files_usage_counts_the_files_of_a_log_directory_only(tmp_path: Path) -> None:
    """As the kubelet's container log stats: an empty log is 0 bytes and 1 inode; the directory
    itself and subdirectories are not counted."""
    (tmp_path / "0.log").write_bytes(b"")
    assert files_usage(tmp_path) == DirUsage(0, 1)
    (tmp_path / "1.log").write_bytes(b"x" * 10000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_bytes(b"y" * 10000)
    usage = files_usage(tmp_path)
    assert usage is not None and usage.inodes == 2 and 10000 <= usage.used < 20000
    assert files_usage(tmp_path / "missing") is None
