"""Filesystem capacity of the device holding a path (node rootfs, imagefs), like cAdvisor.

cAdvisor's getVfsStats: capacity = f_blocks x f_frsize, available = f_bavail x f_frsize (what an
unprivileged writer may still use), and the root container's usage = capacity - free with free =
f_bfree x f_frsize (raw handler / fsToFsStats: `Usage: fs.Capacity - fs.Free`). So used + available
is less than capacity by the root-reserved blocks. Inodes: f_files and f_ffree.

The device is named like cAdvisor's partitions: the mount source in /proc/self/mountinfo of the
mount with the path's st_dev (major:minor), e.g. /dev/vda, tmpfs, overlay.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kubeletapi.errors import NotFound, Unavailable
from kubeletapi.procread import read_optional


@dataclass(frozen=True)
class FsStats:
    device: str  # mount source ("" when no mount carries the path's major:minor)
    major: int
    minor: int
    capacity: int  # bytes
    available: int  # bytes usable by non-root
    used: int  # capacity - free (free includes the root reserve)
    inodes: int
    inodes_free: int
    inodes_used: int


@dataclass(frozen=True)
class Mount:
    major: int
    minor: int
    mount_point: str
    fs_type: str
    source: str


def parse_mountinfo(data: bytes) -> list[Mount]:
    """Parse /proc/<pid>/mountinfo (proc(5)); lines that do not parse are skipped."""
    mounts: list[Mount] = []
    for line in data.decode(errors="replace").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        major, _, minor = fields[2].partition(":")
        if not (major.isdigit() and minor.isdigit()):
            continue
        mounts.append(Mount(int(major), int(minor), _unescape(fields[4]), tail[0], _unescape(tail[1])))
    return mounts


def device_for(major: int, minor: int, path: str, mounts: list[Mount]) -> str:
    """The source of the mount with this major:minor whose mount point is the longest prefix of
    `path` (bind mounts of one device share major:minor); any mount of the device otherwise."""
    candidates = [m for m in mounts if (m.major, m.minor) == (major, minor)]
    best: Mount | None = None
    for mount in candidates:
        point = mount.mount_point.rstrip("/") + "/"
        if (path + "/").startswith(point) and (best is None or len(mount.mount_point) > len(best.mount_point)):
            best = mount
    if best is None and candidates:
        best = candidates[0]
    return "" if best is None else best.source


@dataclass
class MountTable:
    """Caches device names by major:minor; /proc/self/mountinfo is re-read only on a miss.

    Housekeeping keeps one for its lifetime, so a cycle costs two statvfs calls and no mountinfo
    read (mountinfo grows with every pod volume mount).
    """

    proc_root: Path = Path("/proc")
    _names: dict[tuple[int, int], str] = field(default_factory=dict)

    def device(self, major: int, minor: int, path: str) -> str:
        key = (major, minor)
        if key not in self._names:
            data = read_optional(self.proc_root / "self/mountinfo") or b""
            real = os.path.realpath(path)  # mount points are canonical paths
            self._names[key] = device_for(major, minor, real, parse_mountinfo(data))
        return self._names[key]


def fs_stats(path: Path | str, proc_root: Path = Path("/proc"), mounts: MountTable | None = None) -> FsStats:
    """Capacity, availability, usage and inodes of the filesystem holding `path`.

    NotFound when the path does not exist; Unavailable for other OS errors.
    """
    try:
        st = os.stat(path)
        vfs = os.statvfs(path)
    except FileNotFoundError as exc:
        raise NotFound(f"filesystem stats: {path} does not exist") from exc
    except OSError as exc:
        raise Unavailable(f"filesystem stats of {path}: {exc}") from exc
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    table = mounts if mounts is not None else MountTable(proc_root)
    return FsStats(
        device=table.device(major, minor, os.fspath(path)),
        major=major,
        minor=minor,
        capacity=vfs.f_blocks * vfs.f_frsize,
        available=vfs.f_bavail * vfs.f_frsize,
        used=(vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize,
        inodes=vfs.f_files,
        inodes_free=vfs.f_ffree,
        inodes_used=vfs.f_files - vfs.f_ffree,
    )


def _unescape(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (\\040)."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1 : i + 4].isdigit():
            out.append(chr(int(text[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
