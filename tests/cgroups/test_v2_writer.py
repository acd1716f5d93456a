"""V2Writer on a copy of the v2 fixture tree (root offers cpuset cpu io memory hugetlb pids rdma misc)."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubeletapi.cgroups import (
    CpuThrottling,
    ResourceConfig,
    V1Writer,
    V2Writer,
    cpu_shares_to_weight_runc,
    detect,
    new_writer,
)
from kubeletapi.errors import Conflict, InvalidInput, NotFound, Unavailable
from tests.cgroups import CGROUP_MOUNTS, KernelFs, copy_tree

POD = "/kubepods/burstable/pod1234"
C1 = f"{POD}/c1"
Mi = 1024 * 1024
ALL = "cpuset cpu io memory hugetlb pids"


@dataclass
class Tree:
    root: Path
    fs: KernelFs
    writer: V2Writer

    def file(self, path: str, name: str) -> Path:
        return self.root / CGROUP_MOUNTS / path.lstrip("/") / name


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    root = copy_tree(2, tmp_path)
    fs = KernelFs(root, 2)
    return Tree(root, fs, V2Writer(detect(root), fs))


def test_new_writer_picks_v2(tree: Tree) -> None:
    assert isinstance(new_writer(tree.writer.layout, tree.fs), V2Writer)
    with pytest.raises(InvalidInput):
        V1Writer(tree.writer.layout)


def test_create_enables_controllers_in_every_parent(tree: Tree) -> None:
    tree.writer.create(C1)
    # The fixture root already has memory and pids enabled (as systemd leaves it): only the rest is added.
    assert tree.fs.log == [
        ("write", "cgroup.subtree_control", "+cpuset +cpu +io +hugetlb"),
        ("mkdir", "kubepods", ""),
        ("write", "kubepods/cgroup.subtree_control", "+cpuset +cpu +io +memory +hugetlb +pids"),
        ("mkdir", "kubepods/burstable", ""),
        ("write", "kubepods/burstable/cgroup.subtree_control", "+cpuset +cpu +io +memory +hugetlb +pids"),
        ("mkdir", "kubepods/burstable/pod1234", ""),
        ("write", "kubepods/burstable/pod1234/cgroup.subtree_control", "+cpuset +cpu +io +memory +hugetlb +pids"),
        ("mkdir", "kubepods/burstable/pod1234/c1", ""),
    ]
    assert tree.file("/", "cgroup.subtree_control").read_text() == f"{ALL}\n"
    assert tree.file(C1, "cgroup.controllers").read_text() == f"{ALL}\n"
    assert tree.file(C1, "cgroup.subtree_control").read_text() == "\n", "the leaf enables nothing"


def test_create_is_idempotent(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.fs.log.clear()
    tree.writer.create(C1)
    assert tree.fs.log == []


def test_refused_batch_falls_back_to_one_by_one(tree: Tree) -> None:
    tree.fs.failures["cgroup.subtree_control"] = [errno.EBUSY, errno.EBUSY]
    enabled = tree.writer.enable_controllers(tree.root / CGROUP_MOUNTS)
    assert tree.fs.writes() == [
        ("cgroup.subtree_control", "+cpuset +cpu +io +hugetlb"),
        ("cgroup.subtree_control", "+cpuset"),
        ("cgroup.subtree_control", "+cpu"),
        ("cgroup.subtree_control", "+io"),
        ("cgroup.subtree_control", "+hugetlb"),
    ]
    assert enabled == ["cpu", "io", "memory", "hugetlb", "pids"], "cpuset was refused and is skipped"


def test_set_resources_writes_exact_files(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.fs.log.clear()
    tree.writer.set_resources(C1, ResourceConfig(512, 50000, 100000, 128 * Mi, 64))
    leaf = "kubepods/burstable/pod1234/c1"
    assert tree.fs.writes() == [
        (f"{leaf}/cpu.weight", "20"),
        (f"{leaf}/cpu.max", "50000 100000"),
        (f"{leaf}/memory.max", str(128 * Mi)),
        (f"{leaf}/pids.max", "64"),
    ]
    assert tree.file(C1, "cpu.max").read_text() == "50000 100000"
    assert tree.file(C1, "memory.swap.max").read_text() == "max\n", "swap is left alone"


@pytest.mark.parametrize(
    ("config", "writes"),
    [
        pytest.param(ResourceConfig(cpu_shares=2), [("cpu.weight", "1")], id="besteffort-weight-1"),
        pytest.param(ResourceConfig(cpu_shares=1024), [("cpu.weight", "39")], id="kubelet-linear-weight"),
        pytest.param(ResourceConfig(cpu_quota=-1, cpu_period=100000), [("cpu.max", "max 100000")],
                     id="cfs-quota-disabled"),
        pytest.param(ResourceConfig(cpu_period=100000), [("cpu.max", "max 100000")], id="container-without-limit"),
        pytest.param(ResourceConfig(cpuset_mems="0-1"), [("cpuset.mems", "0-1")], id="memory-manager-numa-nodes"),
        pytest.param(ResourceConfig(memory_limit=-1), [("memory.swap.max", "max"), ("memory.max", "max")],
                     id="unlimited-memory"),
        pytest.param(ResourceConfig(pids_limit=-1), [("pids.max", "max")], id="unlimited-pids"),
        pytest.param(ResourceConfig(), [], id="nothing-set"),
    ],
)
def test_set_resources_only_set_fields(tree: Tree, config: ResourceConfig, writes: list[tuple[str, str]]) -> None:
    tree.writer.create(C1)
    tree.fs.log.clear()
    tree.writer.set_resources(C1, config)
    assert tree.fs.writes() == [(f"kubepods/burstable/pod1234/c1/{name}", value) for name, value in writes]


def test_runc_weight_formula_can_be_chosen(tree: Tree) -> None:
    writer = V2Writer(tree.writer.layout, tree.fs, shares_to_weight=cpu_shares_to_weight_runc)
    writer.create(C1)
    writer.set_resources(C1, ResourceConfig(cpu_shares=1024))
    assert tree.file(C1, "cpu.weight").read_text() == "100"


def test_controller_not_offered_fails_on_write(tree: Tree) -> None:
    tree.file("/", "cgroup.controllers").write_text("memory pids\n")
    tree.writer.create(C1)
    assert tree.file(C1, "cgroup.controllers").read_text() == "memory pids\n"
    with pytest.raises(Unavailable, match=r"pod1234/c1/cpu.weight.*controller not enabled"):
        tree.writer.set_resources(C1, ResourceConfig(cpu_shares=512))
    tree.writer.set_resources(C1, ResourceConfig(memory_limit=Mi, pids_limit=5))


def test_invalid_value_is_invalid_input(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.fs.failures["memory.max"] = [errno.EINVAL]
    with pytest.raises(InvalidInput, match=r"memory.max.*Invalid argument"):
        tree.writer.set_resources(C1, ResourceConfig(memory_limit=Mi))


def test_procs_pids_delete(tree: Tree) -> None:
    tree.writer.create(C1)
    tree.writer.create(f"{POD}/c2")
    assert tree.writer.procs_files(C1) == [tree.file(C1, "cgroup.procs")]
    tree.file(C1, "cgroup.procs").write_text("77\n")
    assert tree.writer.pids(POD) == [77]
    with pytest.raises(Conflict):
        tree.writer.delete(POD)
    tree.file(C1, "cgroup.procs").write_text("")
    tree.fs.log.clear()
    tree.writer.delete(POD)
    pod = "kubepods/burstable/pod1234"
    assert tree.fs.ops("rmdir") == [f"{pod}/c2", f"{pod}/c1", pod]
    assert not tree.writer.exists(POD)
    assert tree.writer.exists("/kubepods/burstable")
    tree.writer.delete(POD)  # already gone: fine


def test_oom_kill_count_and_throttling(tree: Tree) -> None:
    with pytest.raises(NotFound):
        tree.writer.oom_kill_count(C1)
    with pytest.raises(NotFound):
        tree.writer.throttled(C1)
    tree.writer.create(C1)
    assert tree.writer.oom_kill_count(C1) == 0
    tree.file(C1, "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\noom_group_kill 1\n")
    assert tree.writer.oom_kill_count(C1) == 2
    tree.file(C1, "cpu.stat").write_text(
        "usage_usec 900\nuser_usec 800\nsystem_usec 100\nnr_periods 30\nnr_throttled 7\nthrottled_usec 4100\n")
    assert tree.writer.throttled(C1) == CpuThrottling(periods=30, throttled_periods=7, throttled_usec=4100)


def test_throttling_without_cpu_controller_is_zero(tree: Tree) -> None:
    tree.file("/", "cgroup.controllers").write_text("memory pids\n")
    tree.writer.create(C1)
    assert tree.writer.throttled(C1) == CpuThrottling(0, 0, 0)
