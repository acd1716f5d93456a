"""A CRI log file written the way a runtime's shim writes one, for the reader's tests.

Each line of output is an F record, an unterminated end a P record that the next write continues;
rotation renames the file aside under the one naming grammar (runtime.logfiles) and starts a new
one, as the shim does (several rotations within one second get `.N` names); nothing is pruned.
"""

from __future__ import annotations

import os
import time

from kubeletapi.runtime.logfiles import rotated_files, rotated_name
from kubeletapi.runtime.logs import TAG_FULL, TAG_PARTIAL, encode_record


class CRILog:
    """Appends records to `path`; rotates before a record that would take it past max_size (0:
    never)."""

    def __init__(self, path: str | os.PathLike[str], *, max_size: int = 0) -> None:
        self.path = os.fspath(path)
        self.max_size = max_size
        self._file = open(self.path, "ab")  # noqa: SIM115 - owned until close()

    def write(self, stream: str, data: bytes) -> None:
        *lines, rest = data.split(b"\n")
        for line in lines:
            self._record(stream, TAG_FULL, line)
        if rest:
            self._record(stream, TAG_PARTIAL, rest)

    def _record(self, stream: str, tag: str, content: bytes) -> None:
        data = encode_record(time.time_ns(), stream, tag, content)
        size = self._file.tell()
        if 0 < self.max_size < size + len(data) and size > 0:
            self.rotate()
        self._file.write(data)
        self._file.flush()

    def rotate(self) -> str:
        """Rotate now; returns the rotated file's path."""
        self._file.close()
        target = rotated_name(self.path, time.time(), rotated_files(self.path))
        os.rename(self.path, target)
        self._file = open(self.path, "ab")  # noqa: SIM115
        return target

    def close(self) -> None:
        self._file.close()
