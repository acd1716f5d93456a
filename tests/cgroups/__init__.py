"""Hand-written fakes for the cgroup tests: a CgroupFs that behaves like cgroupfs on a fixture tree.

`KernelFs` works on a copy of tests/testdata/cgroups/<v> and does what the kernel would: a new
cgroup directory gets its interface files (v1: those of the hierarchy's controllers; v2: those of
the controllers the parent enabled in cgroup.subtree_control), rmdir refuses a cgroup with
children or processes (EBUSY), cgroup.subtree_control takes `+ctrl`/`-ctrl` and cpu.shares is
clamped. Every mkdir, rmdir and write is logged relative to the tree's root.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from kubeletapi.cgroups import OsFs

TESTDATA = Path(__file__).resolve().parent.parent / "testdata" / "cgroups"
CGROUP_MOUNTS = Path("sys/fs/cgroup")
V1_LIMIT = "9223372036854771712\n"

V1_CORE = {"cgroup.procs": "", "tasks": "", "notify_on_release": "0\n", "cgroup.clone_children": "0\n"}
V1_CHILD_FILES: dict[str, dict[str, str]] = {
    "cpu": {
        "cpu.shares": "1024\n",
        "cpu.cfs_period_us": "100000\n",
        "cpu.cfs_quota_us": "-1\n",
        "cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
    },
    "cpuacct": {"cpuacct.usage": "0\n"},
    # clone_children=0: a new cpuset cgroup has no CPUs or memory nodes until someone copies them.
    "cpuset": {"cpuset.cpus": "\n", "cpuset.mems": "\n"},
    "memory": {
        "memory.limit_in_bytes": V1_LIMIT,
        "memory.memsw.limit_in_bytes": V1_LIMIT,
        "memory.usage_in_bytes": "0\n",
        "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
    },
    "pids": {"pids.max": "max\n", "pids.current": "0\n"},
    "hugetlb": {"hugetlb.2MB.limit_in_bytes": V1_LIMIT},
}
V2_CORE = {
    "cgroup.procs": "",
    "cgroup.subtree_control": "\n",
    "cgroup.events": "populated 0\nfrozen 0\n",
    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
}
V2_CHILD_FILES: dict[str, dict[str, str]] = {
    "cpu": {
        "cpu.weight": "100\n",
        "cpu.max": "max 100000\n",
        "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
    },
    "cpuset": {"cpuset.cpus": "\n", "cpuset.mems": "\n"},
    "io": {"io.max": "", "io.stat": ""},
    "memory": {
        "memory.max": "max\n",
        "memory.swap.max": "max\n",
        "memory.current": "0\n",
        "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
    },
    "pids": {"pids.max": "max\n", "pids.current": "0\n"},
    "hugetlb": {"hugetlb.2MB.max": "max\n"},
}


def copy_tree(version: int, tmp_path: Path) -> Path:
    """A writable copy of the v1 or v2 fixture tree."""
    root = tmp_path / f"v{version}"
    shutil.copytree(TESTDATA / f"v{version}", root)
    return root


class KernelFs(OsFs):
    """cgroupfs semantics on a plain directory tree, with a log and injectable write errors."""

    def __init__(self, root: Path, version: int) -> None:
        self.root = root
        self.version = version
        self.log: list[tuple[str, str, str]] = []
        # file name -> errnos the next writes to such a file fail with, one per write.
        self.failures: dict[str, list[int]] = {}

    def rel(self, path: Path) -> str:
        return str(path.relative_to(self.root / CGROUP_MOUNTS))

    def writes(self) -> list[tuple[str, str]]:
        return [(path, data) for op, path, data in self.log if op == "write"]

    def ops(self, op: str) -> list[str]:
        return [path for kind, path, _ in self.log if kind == op]

    def mkdir(self, directory: Path) -> None:
        super().mkdir(directory)
        self.log.append(("mkdir", self.rel(directory), ""))
        files = self._v1_files(directory) if self.version == 1 else self._v2_files(directory.parent)
        for name, content in files.items():
            (directory / name).write_text(content)

    def rmdir(self, directory: Path) -> None:
        if not directory.is_dir():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(directory))
        busy = any(p.is_dir() for p in directory.iterdir()) or (directory / "cgroup.procs").read_text().strip()
        if busy:
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(directory))
        for file in directory.iterdir():
            file.unlink()
        os.rmdir(directory)
        self.log.append(("rmdir", self.rel(directory), ""))

    def write(self, file: Path, data: str) -> None:
        self.log.append(("write", self.rel(file), data))
        pending = self.failures.get(file.name)
        if pending:
            code = pending.pop(0)
            raise OSError(code, os.strerror(code), str(file))
        if file.name == "cgroup.subtree_control":
            data = self._subtree_control(file, data)
        elif file.name == "cpu.shares":
            data = str(max(2, min(262144, int(data))))
        super().write(file, data)

    def _v1_files(self, directory: Path) -> dict[str, str]:
        mount_dir = directory.relative_to(self.root / CGROUP_MOUNTS).parts[0]
        files = dict(V1_CORE)
        for controller in mount_dir.split(","):
            files.update(V1_CHILD_FILES.get(controller, {}))
        return files

    def _v2_files(self, parent: Path) -> dict[str, str]:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        files = dict(V2_CORE)
        files["cgroup.controllers"] = " ".join(enabled) + "\n"
        for controller in enabled:
            files.update(V2_CHILD_FILES.get(controller, {}))
        return files

    def _subtree_control(self, file: Path, data: str) -> str:
        available = (file.parent / "cgroup.controllers").read_text().split()
        enabled = set(file.read_text().split())
        for token in data.split():
            sign, name = token[0], token[1:]
            if sign not in "+-" or name not in available:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), str(file))
            if sign == "+":
                enabled.add(name)
            else:
                enabled.discard(name)
        return " ".join(c for c in available if c in enabled) + "\n"
