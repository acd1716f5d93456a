"""A small ext4 filesystem on a loop device, made and mounted by the test (as root): the disk that
disk-pressure tests fill. Unmounting lazily frees the loop device (mount -o loop sets autoclear)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def loop_filesystem(image: Path, mount_point: Path, size: int) -> Iterator[Path]:
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 (e2fsprogs) is not installed")
    with image.open("wb") as f:
        f.truncate(size)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    mount_point.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mount_point)], check=True, capture_output=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, capture_output=True)
        image.unlink()
