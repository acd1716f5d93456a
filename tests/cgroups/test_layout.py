"""Layout detection from mountinfo text: v1 (separate and co-mounted controllers), hybrid, v2."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletapi.cgroups import CgroupLayout, cgroup_dir, cgroup_parts, detect
from kubeletapi.errors import InvalidInput, NotSupported
from tests.cgroups import TESTDATA

# This machine: every controller on its own mount plus an empty cgroup2 at /sys/fs/cgroup/unified.
SEPARATE = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
COMBINED = """\
30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:10 - cgroup cgroup rw,cpu,cpuacct
31 25 0:29 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid shared:11 - cgroup cgroup rw,net_cls,net_prio
32 25 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:12 - cgroup cgroup rw,memory,clone_children
"""
UNIFIED = "35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
# A named hierarchy alone does not make a node v1: the controllers live in the unified mount.
NAMED_ONLY = (
    "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
)
# Bind mounts of one hierarchy: the kubelet keeps the shortest mount point.
BIND = (
    "50 1 0:29 / /var/lib/x/sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "51 1 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
)
ESCAPED = "60 1 0:29 / /mnt/cg\\040v1/cpu rw - cgroup cgroup rw,cpu\n"


@pytest.mark.parametrize(
    ("text", "version", "mounts", "unified"),
    [
        pytest.param(
            SEPARATE,
            1,
            {"cpu": "/sys/fs/cgroup/cpu", "cpuacct": "/sys/fs/cgroup/cpuacct", "pids": "/sys/fs/cgroup/pids",
             "name=systemd": "/sys/fs/cgroup/systemd", "blkio": None},
            "/sys/fs/cgroup/unified",
            id="hybrid-separate-mounts",
        ),
        pytest.param(
            COMBINED,
            1,
            {"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
             "net_prio": "/sys/fs/cgroup/net_cls,net_prio", "memory": "/sys/fs/cgroup/memory"},
            None,
            id="legacy-combined-mounts",
        ),
        pytest.param(UNIFIED, 2, {"cpu": "/sys/fs/cgroup", "memory": "/sys/fs/cgroup"}, "/sys/fs/cgroup", id="v2"),
        pytest.param(NAMED_ONLY, 2, {"cpu": "/sys/fs/cgroup/unified"}, "/sys/fs/cgroup/unified", id="named-only-is-v2"),
        pytest.param(BIND, 1, {"memory": "/sys/fs/cgroup/memory"}, None, id="bind-mount-shortest"),
        pytest.param(ESCAPED, 1, {"cpu": "/mnt/cg v1/cpu"}, None, id="octal-escaped-mount-point"),
    ],
)
def test_from_mountinfo(text: str, version: int, mounts: dict[str, str | None], unified: str | None) -> None:
    layout = CgroupLayout.from_mountinfo(text)
    assert layout.version == version
    for controller, where in mounts.items():
        assert layout.mount_point(controller) == (Path(where) if where else None), controller
    assert layout.unified == (Path(unified) if unified else None)


def test_combined_mount_is_one_hierarchy() -> None:
    layout = CgroupLayout.from_mountinfo(COMBINED)
    assert [h.key for h in layout.hierarchies] == ["cpu,cpuacct", "memory", "net_cls,net_prio"]
    assert layout.controllers == {"cpu", "cpuacct", "memory", "net_cls", "net_prio"}


def test_root_prefix_is_applied(tmp_path: Path) -> None:
    layout = CgroupLayout.from_mountinfo(SEPARATE, root=tmp_path)
    assert layout.mount_point("memory") == tmp_path / "sys/fs/cgroup/memory"
    assert layout.root == tmp_path


@pytest.mark.parametrize(
    ("text", "error"),
    [
        pytest.param("22 27 0:21 / /proc rw - proc proc rw\n", NotSupported, id="no-cgroup-mounts"),
        pytest.param("", NotSupported, id="empty"),
        pytest.param("35 24 0:30 / /sys/fs/cgroup rw cgroup2\n", InvalidInput, id="no-separator"),
    ],
)
def test_from_mountinfo_errors(text: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        CgroupLayout.from_mountinfo(text)


@pytest.mark.parametrize(
    ("version", "controllers"),
    [
        pytest.param(1, {"cpu", "cpuacct", "memory", "pids", "cpuset", "blkio", "hugetlb", "devices", "name=systemd"},
                     id="v1"),
        pytest.param(2, {"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"}, id="v2"),
    ],
)
def test_detect_fixture_trees(version: int, controllers: set[str]) -> None:
    root = TESTDATA / f"v{version}"
    layout = detect(root)
    assert layout.version == version
    assert layout.controllers == controllers
    assert layout.mount_point("memory") == root / ("sys/fs/cgroup/memory" if version == 1 else "sys/fs/cgroup")


def test_detect_with_injected_text(tmp_path: Path) -> None:
    assert detect(tmp_path, mountinfo=UNIFIED).mount_point("cpu") == tmp_path / "sys/fs/cgroup"


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        pytest.param("/kubepods/burstable/podabc/c1", ("kubepods", "burstable", "podabc", "c1"), id="absolute"),
        pytest.param("kubepods//x/", ("kubepods", "x"), id="relative-extra-slashes"),
        pytest.param("/", (), id="root"),
    ],
)
def test_cgroup_parts(path: str, parts: tuple[str, ...]) -> None:
    assert cgroup_parts(path) == parts
    assert cgroup_dir(Path("/m"), path) == Path("/m", *parts)


@pytest.mark.parametrize("path", [pytest.param("/a/../b", id="dotdot"), pytest.param("/a/./b", id="dot"),
                                  pytest.param("/a\0b", id="nul")])
def test_cgroup_parts_rejects(path: str) -> None:
    with pytest.raises(InvalidInput):
        cgroup_parts(path)
