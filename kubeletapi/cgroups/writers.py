"""The cgroup writer protocol, the filesystem seam and what the v1 and v2 writers share.

A cgroup path (`/kubepods/burstable/pod<uid>/<containerID>`) is relative to each hierarchy's root,
like the kubelet's cgroupfs driver. Every file operation goes through a `CgroupFs` so tests can run
the writers on a fixture tree with a fake that behaves like the kernel (interface files appear on
mkdir, rmdir refuses busy cgroups). File errors become `Unavailable` (missing file, permission,
EBUSY) or `InvalidInput` (the kernel rejected the value: EINVAL, ERANGE), naming the file.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kubeletapi.cgroups.layout import CgroupLayout, cgroup_dir, cgroup_parts
from kubeletapi.errors import Conflict, InvalidInput, NotFound, Unavailable

PROCS_FILE = "cgroup.procs"
_REJECTED = {errno.EINVAL, errno.ERANGE, errno.EOVERFLOW}
# rmdir of a cgroup whose last task is still exiting fails with EBUSY for a moment (runc retries too).
RMDIR_RETRIES = 5
RMDIR_FIRST_DELAY = 0.01


@dataclass(frozen=True)
class ResourceConfig:
    """Values to write to a cgroup. None (and, as runc reads them, 0) leaves the current value.

    cpu_quota -1 and memory_limit / pids_limit below 0 mean unlimited (written as -1 or `max`).
    """

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory_limit: int | None = None
    pids_limit: int | None = None
    cpuset_mems: str | None = None  # cpuset.mems, a NUMA node list ("0,1")


@dataclass(frozen=True)
class CpuThrottling:
    """CFS bandwidth statistics of a cgroup (v1 cpu.stat, v2 cpu.stat)."""

    periods: int
    throttled_periods: int
    throttled_usec: int


class CgroupWriter(Protocol):
    """Creates, limits, inspects and removes one cgroup path in every hierarchy it needs."""

    def create(self, path: str) -> None:
        """Create the cgroup (and its missing parents) in every hierarchy; existing ones are kept."""

    def set_resources(self, path: str, config: ResourceConfig) -> None:
        """Write the set fields of `config`; None fields leave the cgroup's current value."""

    def procs_files(self, path: str) -> list[Path]:
        """The cgroup.procs file of every hierarchy the cgroup exists in (where a pid is written)."""
        ...

    def pids(self, path: str) -> list[int]:
        """Processes in the cgroup and its descendants, sorted; [] when it does not exist."""
        ...

    def delete(self, path: str) -> None:
        """Remove the cgroup and its descendants leaf-first, in every hierarchy where it exists (a
        CRI runtime's runc also creates it in hierarchies the writer does not manage, the hybrid
        unified one included); Conflict while processes live in it."""

    def exists(self, path: str) -> bool:
        """Whether the cgroup exists in every hierarchy the kubelet checks."""
        ...

    def oom_kill_count(self, path: str) -> int:
        """How many processes the kernel OOM-killed in this cgroup (memory oom_kill counter)."""
        ...

    def throttled(self, path: str) -> CpuThrottling:
        """CFS throttling counters of the cgroup."""
        ...


class CgroupFs(Protocol):
    """The file operations the writers use; they raise OSError like the os module."""

    def read(self, file: Path) -> str: ...

    def write(self, file: Path, data: str) -> None: ...

    def mkdir(self, directory: Path) -> None: ...

    def rmdir(self, directory: Path) -> None: ...


class OsFs:
    """The real cgroupfs: writes never create files (a missing interface file is an error)."""

    def read(self, file: Path) -> str:
        with open(file, encoding="ascii") as handle:
            return handle.read()

    def write(self, file: Path, data: str) -> None:
        fd = os.open(file, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
        try:
            os.write(fd, data.encode("ascii"))
        finally:
            os.close(fd)

    def mkdir(self, directory: Path) -> None:
        os.mkdir(directory, 0o755)

    def rmdir(self, directory: Path) -> None:
        os.rmdir(directory)


def read_file(fs: CgroupFs, file: Path) -> str:
    """Read an interface file; NotFound when it (or its cgroup) is missing."""
    try:
        return fs.read(file)
    except FileNotFoundError as err:
        raise NotFound(f"read {file}: {err.strerror}") from err
    except (OSError, UnicodeDecodeError) as err:
        raise Unavailable(f"read {file}: {_reason(err)}") from err


def write_file(fs: CgroupFs, file: Path, value: str) -> None:
    """Write one value to an interface file, mapping the OS error to the error vocabulary."""
    try:
        fs.write(file, value)
    except FileNotFoundError as err:
        raise Unavailable(
            f"write {value!r} to {file}: {err.strerror} (cgroup missing or controller not enabled)"
        ) from err
    except OSError as err:
        kind = InvalidInput if err.errno in _REJECTED else Unavailable
        raise kind(f"write {value!r} to {file}: {_reason(err)}") from err


def read_int(fs: CgroupFs, file: Path) -> int:
    text = read_file(fs, file).strip()
    try:
        return int(text)
    except ValueError:
        raise Unavailable(f"{file}: expected an integer, got {text!r}") from None


def read_keyed(fs: CgroupFs, file: Path) -> dict[str, int]:
    """Parse a flat-keyed file (`key value` lines: cpu.stat, memory.events, memory.oom_control)."""
    out: dict[str, int] = {}
    for line in read_file(fs, file).splitlines():
        key, _, value = line.partition(" ")
        try:
            out[key] = int(value)
        except ValueError:
            continue  # e.g. a v1 file of a newer kernel with a non-integer line
    return out


def limit_text(value: int) -> str:
    """Negative means unlimited: v2 files and pids.max spell it `max`."""
    return "max" if value < 0 else str(value)


class BaseWriter:
    """Process listing, existence and leaf-first deletion over the directories a subclass names."""

    def __init__(self, layout: CgroupLayout, fs: CgroupFs | None = None) -> None:
        self.layout = layout
        self.fs: CgroupFs = fs if fs is not None else OsFs()

    def _dirs(self, path: str) -> list[Path]:
        """The cgroup's directory in every hierarchy this writer manages (existing or not)."""
        raise NotImplementedError

    def _existence_dirs(self, path: str) -> list[Path]:
        return self._dirs(path)

    def exists(self, path: str) -> bool:
        dirs = self._existence_dirs(path)
        return bool(dirs) and all(d.is_dir() for d in dirs)

    def procs_files(self, path: str) -> list[Path]:
        return [d / PROCS_FILE for d in self._dirs(path) if d.is_dir()]

    def pids(self, path: str) -> list[int]:
        found: set[int] = set()
        for top in self._dirs(path):
            for directory in _subtree(top):
                found.update(self._procs_in(directory))
        return sorted(found)

    def delete(self, path: str) -> None:
        if not cgroup_parts(path):
            raise InvalidInput("refusing to delete the root cgroup")
        existing = [d for d in (cgroup_dir(m, path) for m in self.layout.mount_points) if d.is_dir()]
        live = self.pids(path)
        if live:
            raise Conflict(f"cgroup {path} still has processes {live}; stop them before deleting it")
        for top in existing:
            for directory in reversed(list(_subtree(top))):
                self._rmdir(directory)

    def _procs_in(self, directory: Path) -> list[int]:
        try:
            text = self.fs.read(directory / PROCS_FILE)
        except FileNotFoundError:
            return []  # vanished meanwhile, like the kubelet's getCgroupProcs
        except OSError as err:
            raise Unavailable(f"read {directory / PROCS_FILE}: {_reason(err)}") from err
        try:
            return [int(line) for line in text.split()]
        except ValueError:
            raise Unavailable(f"{directory / PROCS_FILE}: unexpected content {text[:80]!r}") from None

    def _rmdir(self, directory: Path) -> None:
        delay = RMDIR_FIRST_DELAY
        for attempt in range(RMDIR_RETRIES):
            try:
                self.fs.rmdir(directory)
                return
            except FileNotFoundError:
                return
            except OSError as err:
                if err.errno != errno.EBUSY or attempt == RMDIR_RETRIES - 1:
                    raise Unavailable(f"rmdir {directory}: {_reason(err)}") from err
            time.sleep(delay)
            delay *= 2

    def _mkdir(self, directory: Path) -> None:
        """Create one cgroup directory; an existing one is fine."""
        try:
            self.fs.mkdir(directory)
        except FileExistsError:
            pass
        except OSError as err:
            raise Unavailable(f"mkdir {directory}: {_reason(err)}") from err

    def _mkdirs(self, top: Path, parts: Sequence[str]) -> Iterator[tuple[Path, Path]]:
        """Create each level under `top`, yielding (parent, child) so callers can initialise it."""
        current = top
        for part in parts:
            parent, current = current, current / part
            self._mkdir(current)
            yield parent, current


def _subtree(top: Path) -> list[Path]:
    """`top` and every directory below it, parents before children ([] when `top` is missing)."""
    if not top.is_dir():
        return []
    found = [top]
    for dirpath, dirnames, _ in os.walk(top):
        found.extend(Path(dirpath) / name for name in sorted(dirnames))
    return found


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return f"[Errno {err.errno}] {err.strerror}"
    return str(err)
