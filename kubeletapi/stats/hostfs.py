"""The host's filesystem figures for the stats: statvfs and tree usage behind one seam (HostFs,
which golden tests replace), and the volume usage cache housekeeping fills.

Volumes are walked every volumeStatsAggPeriod (and a new pod's once, in its first cycle), never
in a request: a cycle reads their last figures from the cache (a container's log files, few, are
measured in every cycle). Each volume's walk is timed for its observer
(kubelet_volume_metric_collection_duration_seconds{metric_source="du"}, as the kubelet's MetricsDu).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubeletapi.stats.du import dir_usage, files_usage
from kubeletapi.stats.fs import FsStats, MountTable, fs_stats
from kubeletapi.stats.snapshot import FsUsage

log = logging.getLogger(__name__)


class HostFs(Protocol):
    """Filesystem figures (the seam golden tests replace)."""

    def stats(self, path: Path) -> FsStats:
        """statvfs of the filesystem holding `path`; NotFound/Unavailable like stats.fs.fs_stats."""
        ...

    def usage(self, path: Path) -> FsUsage | None:
        """Bytes and inodes the tree at `path` takes (None: missing, or too large to walk)."""
        ...

    def files_usage(self, path: Path) -> FsUsage | None:
        """Bytes and inodes of the files directly in the directory `path` (a container's logs)."""
        ...


class OsHostFs:
    def __init__(self, proc_root: Path, now_ns: Callable[[], int]) -> None:
        self._mounts = MountTable(proc_root)
        self._proc_root = proc_root
        self._now_ns = now_ns

    def stats(self, path: Path) -> FsStats:
        return fs_stats(path, self._proc_root, self._mounts)

    def usage(self, path: Path) -> FsUsage | None:
        found = dir_usage(path)
        return None if found is None else FsUsage(found.used, found.inodes, self._now_ns())

    def files_usage(self, path: Path) -> FsUsage | None:
        found = files_usage(path)
        return None if found is None else FsUsage(found.used, found.inodes, self._now_ns())


class VolumeStatObserver(Protocol):
    def volume_measured(self, source: str, seconds: float) -> None:
        """One volume's usage took `seconds` to measure by `source` ("du": a walk of its tree)."""


@dataclass
class VolumeUsageCache:
    """Volume usage measured every volumeStatsAggPeriod (by housekeeping, off the main cycle), and
    a new pod's volumes once when first seen (the kubelet starts a pod's volume calculator at once)."""

    values: dict[Path, FsUsage | None] = field(default_factory=dict)
    monotonic: Callable[[], float] = time.monotonic
    _observer: VolumeStatObserver | None = None

    def observe(self, observer: VolumeStatObserver) -> None:
        """Report each volume's measuring time to `observer` from now on."""
        self._observer = observer

    def refresh(self, paths: Iterable[Path], fs: HostFs) -> None:
        self.values = self._measure(paths, fs)  # one assignment: readers in other threads see old or new, whole

    def add_new(self, paths: Iterable[Path], fs: HostFs) -> None:
        """Measure the paths not measured yet, keeping every other figure."""
        new = [p for p in paths if p not in self.values]
        if new:
            self.values = {**self.values, **self._measure(new, fs)}

    def _measure(self, paths: Iterable[Path], fs: HostFs) -> dict[Path, FsUsage | None]:
        fresh: dict[Path, FsUsage | None] = {}
        for path in paths:
            started = self.monotonic()
            fresh[path] = fs.usage(path)
            if self._observer is not None:
                self._observer.volume_measured("du", self.monotonic() - started)
            if fresh[path] is None and path.exists():
                log.warning("volume stats: %s has more entries than the walk limit; its usage is not reported", path)
        return fresh

    def get(self, path: Path) -> FsUsage | None:
        return self.values.get(path)
