"""Disk usage of a directory tree (du): the bytes and inodes behind volume, log and runtime stats;
and of the files directly in a directory (files_usage), what the kubelet counts as a log's usage.

Bytes are allocated blocks (st_blocks x 512, like du and the kubelet's MetricsDu), inodes are the
entries walked, the root included; a hard-linked file counts once. The walk never follows
symlinks or crosses into another filesystem, and is bounded: a hostPath volume of "/" must not
make housekeeping read the whole disk. Past `max_entries` the walk gives up and reports None.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class DirUsage:
    used: int  # bytes allocated
    inodes: int  # entries, the root included


class TooLarge(Exception):
    """The tree has more entries than the walk may visit."""


def dir_usage(path: Path | str, max_entries: int = DEFAULT_MAX_ENTRIES) -> DirUsage | None:
    """Usage of the tree at `path`; None when it does not exist or exceeds `max_entries`.

    Entries that vanish or cannot be read during the walk are skipped (a log rotating, a file
    removed by the container): usage is a measurement, not an inventory.
    """
    try:
        root = os.lstat(path)
    except OSError:
        return None
    seen: set[tuple[int, int]] = set()
    used = root.st_blocks * 512
    count = 1
    if not os.path.isdir(path) or os.path.islink(path):
        return DirUsage(used, count)
    stack = [os.fspath(path)]
    try:
        while stack:
            used_add, count_add = _scan(stack.pop(), root.st_dev, seen, stack)
            used += used_add
            count += count_add
            if count > max_entries:
                raise TooLarge
    except TooLarge:
        return None
    return DirUsage(used, count)


def _scan(directory: str, device: int, seen: set[tuple[int, int]], stack: list[str]) -> tuple[int, int]:
    used = count = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_dev != device:
                    continue  # a mount point inside the tree (another filesystem)
                if st.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                used += st.st_blocks * 512
                count += 1
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    except OSError:
        pass  # removed or unreadable mid-walk
    return used, count


def files_usage(path: Path | str) -> DirUsage | None:
    """The files directly in the directory at `path`, each as du counts it, the directory itself and
    its subdirectories left out: the kubelet's container log usage (hostStatsProvider's
    fileMetricsByDir, a MetricsDu per file), so an empty log is 0 bytes and 1 inode. None when the
    directory cannot be listed."""
    try:
        with os.scandir(path) as listing:
            entries = list(listing)
    except OSError:
        return None
    used = count = 0
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue  # rotated away mid-listing
        used += st.st_blocks * 512
        count += 1
    return DirUsage(used, count)
