"""V1Writer on a copy of the v1 fixture tree (cpu,cpuacct co-mounted, hybrid unified mount unused)."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubeletapi.cgroups import CgroupLayout, CpuThrottling, ResourceConfig, V1Writer, V2Writer, detect, new_writer
from kubeletapi.errors import Conflict, InvalidInput, NotFound, NotSupported, Unavailable
from tests.cgroups import CGROUP_MOUNTS, TESTDATA, KernelFs, copy_tree

POD = "/kubepods/burstable/pod1234"
C1 = f"{POD}/c1"
Mi = 1024 * 1024
# Sorted by mount point, the order the writer walks them; "unified" (the hybrid cgroup2) is never used.
HIERARCHIES = ["blkio", "cpu,cpuacct", "cpuset", "devices", "hugetlb", "memory", "pids", "systemd"]


@dataclass
class Tree:
    root: Path
    fs: KernelFs
    writer: V1Writer

    def file(self, hierarchy: str, path: str, name: str) -> Path:
        return self.root / CGROUP_MOUNTS / hierarchy / path.lstrip("/") / name


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root = copy_tree(1, tmp_path)
    fs = KernelFs(root, 1)
    return Tree(root, fs, V1Writer(detect(root), fs))


def test_new_writer_picks_v1(tree: Tree) -> None:
    assert isinstance(new_writer(tree.writer.layout, tree.fs), V1Writer)
    with pytest.raises(InvalidInput):
        V2Writer(tree.writer.layout)


def test_create_makes_each_level_in_every_hierarchy(tree: Tree) -> None:
    tree.writer.create(C1)
    levels = ["kubepods", "kubepods/burstable", "kubepods/burstable/pod1234", "kubepods/burstable/pod1234/c1"]
    assert tree.fs.ops("mkdir") == [f"{h}/{level}" for h in HIERARCHIES for level in levels]
    # Only cpuset needs initialising: each new level copies cpus and mems from its parent.
    assert tree.fs.writes() == [
        write for level in levels for write in (
            (f"cpuset/{level}/cpuset.cpus", "0-3"), (f"cpuset/{level}/cpuset.mems", "0"))
    ]
    assert tree.file("cpuset", C1, "cpuset.cpus").read_text() == "0-3"
    assert not (tree.root / CGROUP_MOUNTS / "unified" / "kubepods").exists()


def test_create_is_idempotent(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.fs.log.clear()
    tree.writer.create(C1)
    assert tree.fs.log == []


def test_create_rejects_root_and_dotdot(tree: Tree) -> None:
    for bad in ("/", "/kubepods/../etc"):
        with pytest.raises(InvalidInput):
            tree.writer.create(bad)


def test_set_resources_writes_exact_files(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.fs.log.clear()
    tree.writer.set_resources(C1, ResourceConfig(512, 50000, 100000, 128 * Mi, 64))
    cpu = "cpu,cpuacct/kubepods/burstable/pod1234/c1"
    assert tree.fs.writes() == [
        (f"{cpu}/cpu.shares", "512"),
        (f"{cpu}/cpu.cfs_period_us", "100000"),
        (f"{cpu}/cpu.cfs_quota_us", "50000"),
        ("memory/kubepods/burstable/pod1234/c1/memory.limit_in_bytes", str(128 * Mi)),
        ("pids/kubepods/burstable/pod1234/c1/pids.max", "64"),
    ]
    assert tree.file("cpu,cpuacct", C1, "cpu.cfs_quota_us").read_text() == "50000"
    assert tree.file("memory", C1, "memory.memsw.limit_in_bytes").read_text() == "9223372036854771712\n"


@pytest.mark.parametrize(
    ("config", "writes"),
    [
        pytest.param(ResourceConfig(cpu_shares=2), [("cpu,cpuacct", "cpu.shares", "2")], id="besteffort-shares-only"),
        pytest.param(ResourceConfig(cpu_quota=-1, cpu_period=100000),
                     [("cpu,cpuacct", "cpu.cfs_period_us", "100000"), ("cpu,cpuacct", "cpu.cfs_quota_us", "-1")],
                     id="cfs-quota-disabled"),
        pytest.param(ResourceConfig(cpu_quota=0, cpu_period=100000),
                     [("cpu,cpuacct", "cpu.cfs_period_us", "100000")], id="quota-zero-is-unset"),
        pytest.param(ResourceConfig(memory_limit=-1),
                     [("memory", "memory.memsw.limit_in_bytes", "-1"), ("memory", "memory.limit_in_bytes", "-1")],
                     id="unlimited-memory-lifts-memsw-first"),
        pytest.param(ResourceConfig(pids_limit=-1), [("pids", "pids.max", "max")], id="unlimited-pids"),
        pytest.param(ResourceConfig(cpuset_mems="0,1"), [("cpuset", "cpuset.mems", "0,1")],
                     id="memory-manager-numa-nodes"),
        pytest.param(ResourceConfig(), [], id="nothing-set"),
    ],
)
def test_set_resources_only_set_fields(tree: Tree, config: ResourceConfig, writes: list[tuple[str, str, str]]) -> None:
    tree.writer.create(C1)
    tree.fs.log.clear()
    tree.writer.set_resources(C1, config)
    assert tree.fs.writes() == [(f"{h}/kubepods/burstable/pod1234/c1/{name}", v) for h, name, v in writes]


def test_period_refused_until_quota_is_set(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.fs.log.clear()
    tree.fs.failures["cpu.cfs_period_us"] = [errno.EINVAL]
    tree.writer.set_resources(C1, ResourceConfig(cpu_quota=5000, cpu_period=10000))
    assert [name.rsplit("/", 1)[1] for name, _ in tree.fs.writes()] == [
        "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.cfs_period_us"]
    assert tree.file("cpu,cpuacct", C1, "cpu.cfs_period_us").read_text() == "10000"


def test_period_refused_without_quota_is_invalid(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.fs.failures["cpu.cfs_period_us"] = [errno.EINVAL]
    with pytest.raises(InvalidInput, match=r"cpu\.cfs_period_us"):
        tree.writer.set_resources(C1, ResourceConfig(cpu_period=10000))


def test_clamped_shares_are_an_error(tree: Tree) -> None:
    tree.writer.create(C1)
    with pytest.raises(InvalidInput, match=r"set cpu\.shares to 262144, not 300000"):
        tree.writer.set_resources(C1, ResourceConfig(cpu_shares=300000))


def test_memory_limit_below_usage(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.file("memory", C1, "memory.usage_in_bytes").write_text("99999999\n")
    tree.fs.failures["memory.limit_in_bytes"] = [errno.EBUSY]
    with pytest.raises(Unavailable, match=r"memory.limit_in_bytes.*current usage 99999999"):
        tree.writer.set_resources(C1, ResourceConfig(memory_limit=Mi))


def test_missing_cgroup_names_the_file(tree: Tree) -> None:
    with pytest.raises(Unavailable, match=r"pids/kubepods/burstable/pod1234/c1/pids.max"):
        tree.writer.set_resources(C1, ResourceConfig(pids_limit=10))


def test_unmounted_controller_is_not_supported(tmp_path: Path) -> None:
    root = copy_tree(1, tmp_path)
    text = "".join(line for line in (TESTDATA / "v1/proc/self/mountinfo").read_text().splitlines(keepends=True)
                   if "/pids " not in line)
    writer = V1Writer(CgroupLayout.from_mountinfo(text, root), KernelFs(root, 1))
    writer.create(C1)
    with pytest.raises(NotSupported, match="pids"):
        writer.set_resources(C1, ResourceConfig(pids_limit=10))


def test_procs_files_and_pids(tree: Tree) -> None:
    assert tree.writer.procs_files(C1) == []
    assert tree.writer.pids(C1) == []
    tree.writer.create(C1)
    assert tree.writer.procs_files(C1) == [tree.file(h, C1, "cgroup.procs") for h in HIERARCHIES]
    tree.file("memory", C1, "cgroup.procs").write_text("123\n124\n")
    tree.file("cpu,cpuacct", C1, "cgroup.procs").write_text("123\n")
    assert tree.writer.pids(C1) == [123, 124]
    assert tree.writer.pids(POD) == [123, 124], "a pod's pids include its containers'"


def test_delete_removes_leaf_first(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.writer.create(f"{POD}/c2")
    tree.writer.delete(POD)
    pod = "kubepods/burstable/pod1234"
    assert tree.fs.ops("rmdir") == [f"{h}/{d}" for h in HIERARCHIES for d in (f"{pod}/c2", f"{pod}/c1", pod)]
    assert not tree.writer.exists(POD)
    assert tree.writer.exists("/kubepods/burstable")


def test_delete_refuses_live_processes(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.file("pids", C1, "cgroup.procs").write_text("4242\n")
    with pytest.raises(Conflict, match=r"\[4242\]"):
        tree.writer.delete(POD)
    assert tree.fs.ops("rmdir") == []
    assert tree.writer.exists(C1)


def test_delete_missing_and_root(tree: Tree) -> None:
    tree.writer.delete(C1)
    with pytest.raises(InvalidInput):
        tree.writer.delete("/")


def test_delete_retries_busy_then_reports(tree: Tree) -> None:
    tree.writer.create(C1)

    calls: list[Path] = []
    real_rmdir = tree.fs.rmdir

    def always_busy(directory: Path) -> None:
        calls.append(directory)
        raise OSError(errno.EBUSY, "Device or resource busy", str(directory))

    tree.fs.rmdir = always_busy  # type: ignore[method-assign]
    with pytest.raises(Unavailable, match="Device or resource busy"):
        tree.writer.delete(C1)
    assert len(calls) == 5
    tree.fs.rmdir = real_rmdir  # type: ignore[method-assign]
    tree.writer.delete(C1)
    assert not tree.writer.exists(C1)


def test_exists_checks_the_kubelet_controllers_only(tree: Tree) -> None:
    assert not tree.writer.exists(C1)
    tree.writer.create(C1)
    assert tree.writer.exists(C1)
    for hierarchy in ("blkio", "devices"):  # not in the kubelet's allowlist
        tree.fs.rmdir(tree.file(hierarchy, C1, ""))
    assert tree.writer.exists(C1)
    tree.fs.rmdir(tree.file("pids", C1, ""))
    assert not tree.writer.exists(C1)


def test_oom_kill_count_and_throttling(tree: Tree) -> None:
    with pytest.raises(NotFound):
        tree.writer.oom_kill_count(C1)
    with pytest.raises(NotFound):
        tree.writer.throttled(C1)
    tree.writer.create(C1)
    assert tree.writer.oom_kill_count(C1) == 0
    tree.file("memory", C1, "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    assert tree.writer.oom_kill_count(C1) == 3
    tree.file("cpu,cpuacct", C1, "cpu.stat").write_text(
        "nr_periods 40\nnr_throttled 12\nthrottled_time 5000000\nnr_bursts 0\nburst_time 0\n")
    assert tree.writer.throttled(C1) == CpuThrottling(periods=40, throttled_periods=12, throttled_usec=5000)
