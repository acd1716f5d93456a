"""Changes in one directory, from Linux inotify read on the event loop (the file source's watch).

The kubelet's file source reacts to fsnotify's inotify events as they come. This does the same
with no thread and no polling: the inotify descriptor is non-blocking and the loop wakes when it
is readable (loop.add_reader). It reports what a manifest reader needs, not every write: a file
closed after writing, moved in or out, deleted, its attributes changed, a symlink or a directory
created (a file being written reports once it is closed, so a half-written manifest is not read
for it); and the directory itself going away (deleted or moved: the watch must be armed anew).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import struct
from dataclasses import dataclass
from pathlib import Path

IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
_CHANGED = IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_MASK = _CHANGED | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
_READ_SIZE = 64 * 1024


@dataclass(frozen=True)
class Batch:
    """What one read of the queue said: the changed names, whether the directory went away, and
    whether the kernel dropped events (the queue overflowed: anything may have changed)."""

    names: tuple[str, ...]
    gone: bool
    overflowed: bool


class DirWatch:
    """An inotify watch on the directory `path`; OSError if it cannot be set up. Close it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        if libc.inotify_add_watch(fd, os.fsencode(path), _MASK | IN_ONLYDIR) < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise OSError(err, os.strerror(err), str(path))
        self._fd = fd
        self._waiting: asyncio.AbstractEventLoop | None = None  # the loop a next() waits on

    def close(self) -> None:
        """Close the descriptor (a next() waiting on it first stops watching it)."""
        if self._fd >= 0:
            if self._waiting is not None:
                self._waiting.remove_reader(self._fd)
                self._waiting = None
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> DirWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def next(self) -> Batch:
        """Wait for the next batch that reports something (events it does not report, such as a
        regular file created, are read and passed over)."""
        while True:
            await self._readable()
            try:
                data = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                continue
            batch = self.parse(data)
            if batch.names or batch.gone or batch.overflowed:
                return batch

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(self._fd, readable)
        self._waiting = loop
        try:
            await ready
        finally:
            if self._waiting is loop:  # else close() has already stopped watching
                loop.remove_reader(self._fd)
                self._waiting = None

    def parse(self, data: bytes) -> Batch:
        names: list[str] = []
        gone = overflowed = False
        offset = 0
        while offset + _EVENT.size <= len(data):
            _, mask, _, size = _EVENT.unpack_from(data, offset)
            raw = data[offset + _EVENT.size:offset + _EVENT.size + size]
            offset += _EVENT.size + size
            name = os.fsdecode(raw.rstrip(b"\0"))
            gone |= bool(mask & _GONE)
            overflowed |= bool(mask & IN_Q_OVERFLOW)
            created = mask & IN_CREATE and (mask & IN_ISDIR or (self.path / name).is_symlink())
            if name and (mask & _CHANGED or created):
                names.append(name)
        return Batch(tuple(dict.fromkeys(names)), gone, overflowed)
