"""What the cgroup v1 and v2 stat readers share: the reader protocol, the filesystem seam, the parsers.

Housekeeping samples a few hundred cgroups every interval, so a file is read with one
os.open/os.read loop into bytes and parsed with split(), never a regex or a decode.

A cgroup can be removed at any moment (a container exits between listing and reading). A file
that is missing (ENOENT), or that was removed under an open descriptor (ENODEV), reads as absent
and leaves its fields None; if any file was absent, the sample re-checks that the cgroup's
directory still exists and is dropped (None) when it does not. Other OS errors (EACCES, EIO)
become Unavailable naming the file. A value that does not parse reads as absent too.
"""

from __future__ import annotations

import errno
import os
from typing import Protocol

from kubeletapi.cgroups.layout import cgroup_parts
from kubeletapi.cgroups.stats import CgroupSample
from kubeletapi.errors import Unavailable
from kubeletapi.procread import read_bytes, to_int

# A file this cgroup does not have (controller off, older kernel, the root) or that vanished with
# it: ENODEV is what a read gets when the cgroup is removed after the open.
ABSENT_ERRNOS = frozenset({errno.ENOENT, errno.ENODEV, errno.EOPNOTSUPP})
# The kernel spells "no limit" as PAGE_COUNTER_MAX pages in bytes (2^63 - 4096 with 4 KiB pages)
# in v1, as -1 or "max" elsewhere; cAdvisor treats anything above 2^62 as unlimited.
UNLIMITED_FROM = 1 << 62

Stat = dict[bytes, bytes]


class CgroupReader(Protocol):
    """Reads one cgroup's counters, gauges and limits; cgroup paths are like /kubepods/burstable/pod<uid>."""

    def sample(self, path: str, now_ns: int) -> CgroupSample | None:
        """One read of the cgroup stamped `now_ns`; None when the cgroup does not (or no longer) exist."""
        ...

    def children(self, path: str) -> list[str]:
        """The child cgroup paths, sorted; [] when the cgroup does not exist."""
        ...


class ReaderFs(Protocol):
    """The file operations the readers use; they raise OSError like the os module."""

    def read(self, file: str) -> bytes: ...

    def ctime_ns(self, path: str) -> int: ...

    def subdirs(self, directory: str) -> list[str]: ...


class OsReaderFs:
    """The real cgroupfs."""

    def read(self, file: str) -> bytes:
        # Multi-record seq files (cgroup.procs) come a page at a time: read until EOF.
        return read_bytes(file)

    def ctime_ns(self, path: str) -> int:
        return os.stat(path).st_ctime_ns

    def subdirs(self, directory: str) -> list[str]:
        with os.scandir(directory) as entries:
            return [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]


class Probe:
    """Reads the files of one sample and remembers whether any of them was absent."""

    __slots__ = ("fs", "missing")

    def __init__(self, fs: ReaderFs) -> None:
        self.fs = fs
        self.missing = False

    def read(self, file: str) -> bytes | None:
        try:
            return self.fs.read(file)
        except OSError as err:
            if err.errno in ABSENT_ERRNOS:
                self.missing = True
                return None
            raise Unavailable(f"read {file}: [Errno {err.errno}] {err.strerror}") from err

    def integer(self, file: str) -> int | None:
        return to_int(self.read(file))

    def keyed(self, file: str) -> Stat:
        return keyed(self.read(file))


class BaseReader:
    """Existence, creation time and listing over the directories a subclass names for a path."""

    def __init__(self, fs: ReaderFs | None) -> None:
        self.fs: ReaderFs = fs if fs is not None else OsReaderFs()

    def _anchor_dirs(self, rel: str) -> list[str]:
        """The cgroup's directories to date and list it by, most preferred first."""
        raise NotImplementedError

    def _anchor(self, rel: str) -> tuple[str, int] | None:
        """The first existing anchor directory and its ctime; None when the cgroup exists nowhere."""
        for directory in self._anchor_dirs(rel):
            created = self._ctime(directory)
            if created is not None:
                return directory, created
        return None

    def _ctime(self, directory: str) -> int | None:
        try:
            return self.fs.ctime_ns(directory)
        except OSError as err:
            if err.errno in ABSENT_ERRNOS or err.errno == errno.ENOTDIR:
                return None
            raise Unavailable(f"stat {directory}: [Errno {err.errno}] {err.strerror}") from err

    def _vanished(self, probe: Probe, anchor: str) -> bool:
        # Only a sample that met an absent file pays for the second stat.
        return probe.missing and self._ctime(anchor) is None

    def children(self, path: str) -> list[str]:
        rel = relative(path)
        base = f"/{rel}" if rel else ""
        for directory in self._anchor_dirs(rel):
            try:
                names = self.fs.subdirs(directory)
            except OSError as err:
                if err.errno in ABSENT_ERRNOS or err.errno == errno.ENOTDIR:
                    continue
                raise Unavailable(f"list {directory}: [Errno {err.errno}] {err.strerror}") from err
            return sorted(f"{base}/{name}" for name in names)
        return []


def relative(path: str) -> str:
    """The validated cgroup path without its leading slash ("" for the root)."""
    return "/".join(cgroup_parts(path))


def join(mount: str, rel: str) -> str:
    return f"{mount}/{rel}" if rel else mount


def limit(data: bytes | None) -> int | None:
    """A limit file: None for `max`, -1 and values from 2^62 (unlimited), else the value."""
    value = to_int(data)
    if value is None or value < 0 or value >= UNLIMITED_FROM:
        return None
    return value


def keyed(data: bytes | None) -> Stat:
    """A flat-keyed file (`key value` lines: memory.stat, cpu.stat, memory.events) as bytes → bytes."""
    if not data:
        return {}
    tokens = data.split()
    if len(tokens) % 2 == 0:
        return dict(zip(tokens[::2], tokens[1::2], strict=True))
    # An odd line (a key without a value, a newer kernel's extra column) would misalign the pairs.
    out: Stat = {}
    for line in data.splitlines():
        fields = line.split()
        if len(fields) == 2:
            out[fields[0]] = fields[1]
    return out


def value(stat: Stat, key: bytes) -> int | None:
    raw = stat.get(key)
    return None if raw is None else to_int(raw)


def scaled(stat: Stat, key: bytes, factor: int) -> int | None:
    raw = value(stat, key)
    return None if raw is None else raw * factor


def count_lines(data: bytes | None) -> int | None:
    if data is None:
        return None
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def working_set(usage: int, inactive_file: int | None) -> int:
    """cAdvisor's working set: usage minus inactive file pages, floored at 0 (usage when unknown)."""
    if inactive_file is None:
        return usage
    return max(0, usage - inactive_file)
