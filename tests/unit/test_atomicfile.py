"""kubeletapi.atomicfile: a replaced file is the old content or the new one, never anything else."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kubeletapi.atomicfile import write_atomic


def test_replaces_creates_directories_and_sets_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "state.json"
    write_atomic(target, b"one")
    assert target.read_bytes() == b"one" and stat.S_IMODE(target.stat().st_mode) == 0o644
    write_atomic(target, b"two", mode=0o600, sync=False)
    assert target.read_bytes() == b"two" and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert os.listdir(target.parent) == ["state.json"]  # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_atomic(target, b"old")

    with pytest.raises(TypeError):  # fails half-way: the temporary file exists, the write raises
        write_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["state.json"]
