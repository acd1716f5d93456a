"""The kubelet's atomic writer (pkg/volume/util/atomic_writer.go): a volume's files projected so
that a reader never sees half an update.

The data lives in a hidden timestamped directory (`..2006_01_02_15_04_05.<random>`), `..data` is
a symlink to it, and every user-visible top-level name is a symlink into `..data`
(`key -> ..data/key`, `dir -> ..data/dir`). An update writes a new timestamped directory, points
`..data_tmp` at it and renames that over `..data` (rename(2) is atomic), adds the new visible
names, removes the visible names the payload no longer has, then removes the old timestamped
directory. A payload whose contents equal what is on disk writes nothing (as the kubelet, a mode
change alone is not an update), but the visible links are still made.

Paths are checked as the kubelet checks them: relative, no `..` element, not starting with `..`,
names of at most 255 and paths of at most 4096 characters. Not safe for concurrent writers to
one directory (the caller serializes); blocking file work, so callers run it off the event loop.
"""

from __future__ import annotations

import datetime as dt
import os
import posixpath
import random
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.errors import InvalidInput

DATA_DIR = "..data"
NEW_DATA_DIR = "..data_tmp"
MAX_FILE_NAME = 255
MAX_PATH = 4096


@dataclass(frozen=True)
class FileProjection:
    data: bytes
    mode: int


def validate_path(path: str) -> None:
    """validatePath: InvalidInput with the kubelet's words for a path it refuses."""
    if not path:
        raise InvalidInput(f'invalid path: must not be empty: "{path}"')
    if path.startswith("/"):
        raise InvalidInput(f"invalid path: must be relative path: {path}")
    if len(path) > MAX_PATH:
        raise InvalidInput(f"invalid path: must be less than or equal to {MAX_PATH} characters")
    items = path.split("/")
    for item in items:
        if item == "..":
            raise InvalidInput(f"invalid path: must not contain '..': {path}")
        if len(item) > MAX_FILE_NAME:
            raise InvalidInput(f"invalid path: filenames must be less than or equal to {MAX_FILE_NAME} characters")
    if items[0].startswith("..") and len(items[0]) > 2:
        raise InvalidInput(f"invalid path: must not start with '..': {path}")


def clean_payload(payload: Mapping[str, FileProjection]) -> dict[str, FileProjection]:
    """validatePayload: every path checked, then cleaned (filepath.Clean)."""
    out = {}
    for path, projection in payload.items():
        validate_path(path)
        out[posixpath.normpath(path)] = projection
    return out


class AtomicWriter:
    def __init__(self, target: Path, now: Callable[[], float]) -> None:
        """`target` must exist (the volume's directory); `now` is the wall clock naming new data
        directories."""
        self._target = target
        self._now = now

    def write(self, payload: Mapping[str, FileProjection]) -> bool:
        """Project `payload` (relative path -> contents and mode); True when new data was written."""
        files = clean_payload(payload)
        data_link = self._target / DATA_DIR
        try:
            old = os.readlink(data_link)
        except FileNotFoundError:
            old = ""
        remove: set[str] = set()
        write = True
        if old:
            remove = _paths_to_remove(files, self._target / old)
            if not remove and not _differs(files, self._target / old):
                write, old = False, ""  # up to date: only make sure the visible links exist
        if write:
            self._swap_in(files)
        self._link_visible(files)
        for path in remove:
            if "/" not in path:  # only the volume root's links: deeper paths went with the old data
                (self._target / path).unlink(missing_ok=True)
        if old:
            shutil.rmtree(self._target / old)
        return write

    def _swap_in(self, files: Mapping[str, FileProjection]) -> None:
        ts_dir = self._new_timestamp_dir()
        try:
            for path, projection in files.items():
                full = ts_dir / path
                full.parent.mkdir(parents=True, exist_ok=True)
                full.write_bytes(projection.data)
                os.chmod(full, projection.mode)  # whatever the umask
            tmp_link = self._target / NEW_DATA_DIR
            tmp_link.unlink(missing_ok=True)
            os.symlink(ts_dir.name, tmp_link)
            os.rename(tmp_link, self._target / DATA_DIR)
        except OSError:
            (self._target / NEW_DATA_DIR).unlink(missing_ok=True)
            shutil.rmtree(ts_dir, ignore_errors=True)
            raise

    def _new_timestamp_dir(self) -> Path:
        stamp = dt.datetime.fromtimestamp(self._now(), dt.UTC).strftime("..%Y_%m_%d_%H_%M_%S.")
        while True:
            path = self._target / f"{stamp}{random.getrandbits(32)}"
            try:
                path.mkdir()
            except FileExistsError:
                continue
            os.chmod(path, 0o755)  # noqa: S103 - group and other must traverse it, whatever the umask
            return path

    def _link_visible(self, files: Mapping[str, FileProjection]) -> None:
        for path in files:
            name = path.split("/", 1)[0]
            link = self._target / name
            try:
                os.readlink(link)
            except FileNotFoundError:
                os.symlink(f"{DATA_DIR}/{name}", link)
            except OSError:
                pass  # something that is not a link holds the name: left alone, as the kubelet does


def _differs(files: Mapping[str, FileProjection], old_dir: Path) -> bool:
    """shouldWritePayload: some file is missing from the current data or has other contents (a
    file where a directory was, or the reverse, is a change too: the kubelet fails there)."""
    for path, projection in files.items():
        try:
            if (old_dir / path).read_bytes() != projection.data:
                return True
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return True
    return False


def _paths_to_remove(files: Mapping[str, FileProjection], old_dir: Path) -> set[str]:
    """Every path of the current data (files and directories) that is neither a payload path
    nor a parent directory of one."""
    current: set[str] = set()
    for root, dirs, names in os.walk(old_dir):
        rel = os.path.relpath(root, old_dir)
        for name in (*dirs, *names):
            current.add(name if rel == "." else f"{rel}/{name}")
    wanted: set[str] = set()
    for path in files:
        while path:
            wanted.add(path)
            path = posixpath.dirname(path)  # noqa: PLW2901 - up through its parents
    return current - wanted
