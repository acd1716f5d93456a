"""Replacing a file atomically: a reader (or the agent after a crash) sees the old content or the
new one, never a torn or empty file.

The data goes to a temporary file in the same directory (same filesystem: the rename is atomic),
is flushed to disk unless the caller says it can do without (`sync=False`: state rewritten often,
where a lost last write is redone), and is renamed over the target; on failure the temporary file
is removed and the target is untouched.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, sync: bool = True) -> None:
    """Replace `path` with `data` (creating its directory); `mode`: the file's permissions
    (default: mkstemp's 0600 kept only when asked, else 0644 like a plain write)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o644 if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
