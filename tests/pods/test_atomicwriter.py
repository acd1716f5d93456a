"""The atomic writer: the layout the kubelet leaves in a volume directory, the ..data swap, what an
update removes, and the paths it refuses."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from kubeletapi.errors import InvalidInput
from kubeletapi.pods.atomicwriter import DATA_DIR, AtomicWriter, FileProjection

P = pytest.param
NOW = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


def files(**contents: str) -> dict[str, FileProjection]:
    return {name.replace("__", "/"): FileProjection(text.encode(), 0o644) for name, text in contents.items()}


def ts_dirs(target: Path) -> list[str]:
    return sorted(p.name for p in target.iterdir() if p.name.startswith("..") and p.name != DATA_DIR)


def visible(target: Path) -> dict[str, str]:
    """Every path a reader sees through the volume's links, with its contents."""
    out = {}
    for root, _, names in os.walk(target, followlinks=True):
        rel = os.path.relpath(root, target)
        if rel.startswith(".."):
            continue
        for name in names:
            path = name if rel == "." else f"{rel}/{name}"
            out[path] = (target / path).read_text()
    return out


def test_first_write_makes_the_kubelets_layout(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path, lambda: NOW)
    assert writer.write({**files(token="t", namespace="ns"), "k8s/ca.crt": FileProjection(b"pem", 0o600)})
    (ts,) = ts_dirs(tmp_path)
    assert ts.startswith("..2023_11_14_22_13_20.") and ts.removeprefix("..2023_11_14_22_13_20.").isdigit()
    assert os.readlink(tmp_path / DATA_DIR) == ts
    assert {n: os.readlink(tmp_path / n) for n in ("token", "namespace", "k8s")} == {
        "token": "..data/token", "namespace": "..data/namespace", "k8s": "..data/k8s"}
    assert visible(tmp_path) == {"token": "t", "namespace": "ns", "k8s/ca.crt": "pem"}
    assert (tmp_path / ts / "k8s" / "ca.crt").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / ts).stat().st_mode & 0o777 == 0o755


def test_an_update_swaps_the_data_dir_and_removes_the_old_one(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path, lambda: NOW)
    writer.write(files(a="1", b="2", d__x="3"))
    (first,) = ts_dirs(tmp_path)
    assert writer.write(files(a="1", c="4"))
    (second,) = ts_dirs(tmp_path)
    assert second != first
    assert os.readlink(tmp_path / DATA_DIR) == second
    assert visible(tmp_path) == {"a": "1", "c": "4"}
    assert not (tmp_path / "b").is_symlink() and not (tmp_path / "d").is_symlink()  # stale links gone


def test_an_unchanged_payload_writes_nothing_but_restores_links(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path, lambda: NOW)
    writer.write(files(a="1", b="2"))
    before = ts_dirs(tmp_path)
    (tmp_path / "b").unlink()  # kubernetes#121472: a lost link comes back without a new write
    assert not writer.write(files(a="1", b="2"))
    assert ts_dirs(tmp_path) == before
    assert visible(tmp_path) == {"a": "1", "b": "2"}


def test_a_mode_change_alone_is_not_an_update(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path, lambda: NOW)
    writer.write(files(a="1"))
    assert not writer.write({"a": FileProjection(b"1", 0o400)})


def test_a_file_that_becomes_a_directory(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path, lambda: NOW)
    writer.write(files(a="1"))
    writer.write(files(a__b="2"))
    assert visible(tmp_path) == {"a/b": "2"}
    writer.write(files(a="3"))
    assert visible(tmp_path) == {"a": "3"}


def test_an_empty_payload_empties_the_volume(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path, lambda: NOW)
    writer.write(files(a="1"))
    assert writer.write({})
    assert visible(tmp_path) == {}
    assert len(ts_dirs(tmp_path)) == 1


def test_readers_never_see_a_mix_of_versions(tmp_path: Path) -> None:
    """Two files updated together: a reader going through ..data sees both old or both new."""
    writer = AtomicWriter(tmp_path, lambda: NOW)
    writer.write(files(a="0", b="0"))
    seen: set[tuple[str, str]] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            data = os.readlink(tmp_path / DATA_DIR)  # one resolution of the link, as a reader that opens ..data
            # FileNotFoundError: the old directory went after the swap; the reader starts again
            with contextlib.suppress(FileNotFoundError):
                seen.add(((tmp_path / data / "a").read_text(), (tmp_path / data / "b").read_text()))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(1, 60):
            writer.write(files(a=str(i), b=str(i)))
    finally:
        stop.set()
        reader.join()
    assert seen and all(a == b for a, b in seen)


@pytest.mark.parametrize(("path", "message"), [
    P("", 'invalid path: must not be empty: ""', id="empty"),
    P("/etc/passwd", "invalid path: must be relative path: /etc/passwd", id="absolute"),
    P("a/../../b", "invalid path: must not contain '..': a/../../b", id="dotdot"),
    P("..data/x", "invalid path: must not start with '..': ..data/x", id="reserved"),
    P("x" * 256, "invalid path: filenames must be less than or equal to 255 characters", id="long-name"),
    P("a/" * 2049, "invalid path: must be less than or equal to 4096 characters", id="long-path"),
])
def test_refused_paths(tmp_path: Path, path: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        AtomicWriter(tmp_path, lambda: NOW).write({path: FileProjection(b"", 0o644)})
    assert str(caught.value) == message
    assert list(tmp_path.iterdir()) == []


def test_paths_are_cleaned(tmp_path: Path) -> None:
    writer = AtomicWriter(tmp_path, lambda: NOW)
    writer.write({"./a//b/": FileProjection(b"x", 0o644)})
    assert visible(tmp_path) == {"a/b": "x"}
