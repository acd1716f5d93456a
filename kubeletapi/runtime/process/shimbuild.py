"""Build kubeletapi-shim (shim/shim.c) on first use and cache the binary.

The shim is plain C against libc, so any Linux host with a C compiler can build it in a fraction
of a second; shipping prebuilt binaries per architecture would cost more than it saves. The
binary's name carries a hash of the source, so an edited shim.c is rebuilt and a stale binary is
never used. `python -m kubeletapi.runtime.process.shimbuild` builds it and prints its path.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kubeletapi.errors import StartupError

SHIM_SOURCE = Path(__file__).resolve().parent / "shim" / "shim.c"
CFLAGS = ("-std=gnu11", "-O2", "-Wall", "-Wextra")
COMPILE_TIMEOUT_S = 120


def cache_dirs() -> list[Path]:
    """Where the binary may live, most preferred first: beside the source, then the user cache."""
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [SHIM_SOURCE.parent / "bin", Path(xdg) / "kubeletapi"]


def binary_name(source: Path) -> str:
    """`kubeletapi-shim-<first 12 hex of sha256(source)>`."""
    return f"kubeletapi-shim-{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}"


def shim_path() -> Path:
    """A compiled, up-to-date shim binary (compiled now if no cache holds it)."""
    return ensure_built(SHIM_SOURCE, cache_dirs())


def ensure_built(source: Path, dirs: Sequence[Path]) -> Path:
    """Find `source`'s binary in `dirs` or compile it into the first writable one."""
    try:
        name = binary_name(source)
    except OSError as err:
        raise StartupError(f"cannot read the shim source {source}: {err}") from err
    for d in dirs:
        candidate = d / name
        if os.access(candidate, os.X_OK):
            return candidate
    for d in dirs:
        if _writable_dir(d):
            return _compile(source, d / name)
    raise StartupError(f"no writable directory to build the shim in (tried {', '.join(map(str, dirs))})")


def _writable_dir(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(d, os.W_OK | os.X_OK)


def _compile(source: Path, target: Path) -> Path:
    # $CC may carry words of its own ("ccache gcc", "gcc -m64"), as make's CC does.
    cc = shlex.split(os.environ.get("CC") or "cc")
    # Compile to a unique temporary name, then rename: two agents building at once each install
    # a complete binary, and a reader never finds a half-written one.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        result = subprocess.run(
            [*cc, *CFLAGS, "-o", str(tmp), str(source)],
            capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        tmp.unlink(missing_ok=True)
        raise StartupError(f"cannot run the C compiler {cc[0]!r} to build the shim (set $CC): {err}") from err
    if result.returncode != 0:
        tmp.unlink(missing_ok=True)
        output = (result.stderr + result.stdout).strip()
        raise StartupError(f"compiling {source} failed ({shlex.join(cc)} exited {result.returncode}):\n{output}")
    tmp.chmod(0o755)
    os.replace(tmp, target)
    return target


def main() -> int:
    """Build the shim and print its path (used by the Makefile)."""
    try:
        path = shim_path()
    except StartupError as err:
        print(f"shimbuild: {err}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
