"""The CRI log file grammar (live, rotated, order; what is not a rotated file) and following a log
file on into the file written after it."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from kubeletapi.runtime import logfiles
from kubeletapi.runtime.logfiles import (
    AtEnd,
    FollowedFile,
    Rotation,
    live_log_path,
    parse_rotation,
    rotated_files,
    rotated_name,
)

STAMP = "20231114-221320"
START = 1_700_000_000.25  # 2023-11-14 22:13:20.25 UTC


def test_live_log_path_is_the_kubelets() -> None:
    assert live_log_path("app", 0) == "app/0.log"
    assert live_log_path("side-car", 12) == "side-car/12.log"


@pytest.mark.parametrize(
    ("name", "rotation"),
    [
        pytest.param(f"0.log.{STAMP}", Rotation(STAMP, 0, False), id="stamp"),
        pytest.param(f"0.log.{STAMP}.1", Rotation(STAMP, 1, True), id="stamp-seq"),
        pytest.param(f"0.log.{STAMP}.10", Rotation(STAMP, 10, True), id="stamp-seq-two-digits"),
        pytest.param(f"0.log.{STAMP}.0", Rotation(STAMP, 0, True), id="stamp-seq-0"),
        pytest.param(f"0.log.{STAMP}.01", Rotation(STAMP, 1, True), id="stamp-seq-leading-zero"),
        pytest.param("0.log.99999999-999999", Rotation("99999999-999999", 0, False), id="stamp-not-a-date"),
        pytest.param("0.log", None, id="live-file"),
        pytest.param("0.log.", None, id="empty-suffix"),
        pytest.param(f"0.log.{STAMP}.gz", None, id="kubelet-compressed"),
        pytest.param(f"0.log.{STAMP}.1.gz", None, id="compressed-seq"),
        pytest.param(f"0.log.{STAMP}.tmp", None, id="kubelet-compression-temporary"),
        pytest.param(f"0.log.{STAMP}.", None, id="empty-seq"),
        pytest.param(f"0.log.{STAMP}.+1", None, id="signed-seq"),
        pytest.param(f"0.log.{STAMP}.-1", None, id="negative-seq"),
        pytest.param(f"0.log.{STAMP}.1a", None, id="seq-not-a-number"),
        pytest.param(f"0.log.{STAMP}.\u0661", None, id="seq-non-ascii-digit"),
        pytest.param("0.log.2023111-221320", None, id="short-date"),
        pytest.param("0.log.20231114-22132", None, id="short-time"),
        pytest.param("0.log.20231114_221320", None, id="underscore"),
        pytest.param("0.log.2023111\u0664-221320", None, id="date-non-ascii-digit"),
        pytest.param(f"0.log{STAMP}", None, id="no-dot"),
        pytest.param(f"0.logx.{STAMP}", None, id="another-file-same-prefix"),
        pytest.param(f"10.log.{STAMP}", None, id="another-container-attempt"),
        pytest.param(f"1.log.{STAMP}", None, id="another-attempt"),
    ],
)
def test_parse_rotation(name: str, rotation: Rotation | None) -> None:
    assert parse_rotation("0.log", name) == rotation
    assert parse_rotation("/l/c/0.log", f"/l/c/{name}") == rotation


def test_parse_rotation_of_paths_needs_the_same_directory() -> None:
    assert parse_rotation("/l/c/0.log", f"/l/d/0.log.{STAMP}") is None


@pytest.mark.parametrize(
    ("names", "oldest_first"),
    [
        pytest.param(["20231114-221321", STAMP], [STAMP, "20231114-221321"], id="by-stamp"),
        pytest.param(
            [f"{STAMP}.10", f"{STAMP}.9", f"{STAMP}.2", STAMP],
            [STAMP, f"{STAMP}.2", f"{STAMP}.9", f"{STAMP}.10"],
            id="seq-as-a-number",
        ),
        pytest.param(
            ["20231114-221321", f"{STAMP}.3", "20231114-221321.1"],
            [f"{STAMP}.3", "20231114-221321", "20231114-221321.1"],
            id="stamp-before-seq",
        ),
        pytest.param([f"{STAMP}.0", STAMP], [STAMP, f"{STAMP}.0"], id="no-suffix-before-dot-0"),
        pytest.param([f"{STAMP}.1", f"{STAMP}.01"], [f"{STAMP}.01", f"{STAMP}.1"], id="equal-seq-by-name"),
        pytest.param(
            [STAMP, f"{STAMP}.gz", f"{STAMP}.tmp", "20231114-221319.gz", f"{STAMP}.1"],
            [STAMP, f"{STAMP}.1"],
            id="compressed-and-temporary-left-out",
        ),
        pytest.param([], [], id="none"),
    ],
)
def test_rotated_files_oldest_first(tmp_path: Path, names: list[str], oldest_first: list[str]) -> None:
    log = tmp_path / "0.log"
    log.touch()
    (tmp_path / "1.log").touch()
    (tmp_path / f"1.log.{STAMP}").touch()  # another attempt's rotated file
    for name in names:
        (tmp_path / f"0.log.{name}").touch()
    assert rotated_files(str(log)) == [str(tmp_path / f"0.log.{name}") for name in oldest_first]


def test_rotated_files_of_a_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("0.log", f"0.log.{STAMP}.1", f"0.log.{STAMP}"):
        Path(name).touch()
    assert rotated_files("0.log") == [f"0.log.{STAMP}", f"0.log.{STAMP}.1"]


@pytest.mark.parametrize(
    ("existing", "name"),
    [
        pytest.param([], f"/l/0.log.{STAMP}", id="first"),
        pytest.param(["/l/0.log.20231114-221319"], f"/l/0.log.{STAMP}", id="earlier-second"),
        pytest.param([f"/l/0.log.{STAMP}"], f"/l/0.log.{STAMP}.1", id="second-taken"),
        pytest.param([f"/l/0.log.{STAMP}", f"/l/0.log.{STAMP}.9"], f"/l/0.log.{STAMP}.10", id="above-every-seq"),
        pytest.param([f"/l/0.log.{STAMP}.7"], f"/l/0.log.{STAMP}.8", id="gaps-not-filled"),
        pytest.param([f"/l/0.log.{STAMP}.gz"], f"/l/0.log.{STAMP}", id="compressed-not-ours"),
        pytest.param([f"/l/1.log.{STAMP}"], f"/l/0.log.{STAMP}", id="another-log"),
    ],
)
def test_rotated_name(existing: list[str], name: str) -> None:
    assert rotated_name("/l/0.log", START, existing) == name


def test_rotated_names_sort_in_rotation_order(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    made = []
    for now in [START] * 12 + [START + 1] * 3:
        made.append(rotated_name(str(log), now, rotated_files(str(log))))
        Path(made[-1]).touch()
    assert Path(made[11]).name == f"0.log.{STAMP}.11"
    assert rotated_files(str(log)) == made
    rotations = [parse_rotation(str(log), name) for name in made]
    shuffled = rotations[:]
    random.Random(1).shuffle(shuffled)
    assert sorted(shuffled) == rotations  # type: ignore[type-var]


# ---------------------------------------------------------------------------------------- following


def follow(path: Path) -> FollowedFile:
    return FollowedFile(str(path), os.open(path, os.O_RDONLY | os.O_CLOEXEC))


def read_on(f: FollowedFile) -> bytes:
    """Everything until WAIT, across rotations."""
    out = b""
    while True:
        data = os.read(f.fd, 65536)
        out += data
        if not data and f.at_end() is AtEnd.WAIT:
            return out


def test_follow_waits_on_the_live_file(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(b"a\n")
    f = follow(log)
    assert read_on(f) == b"a\n"
    with log.open("ab") as w:
        w.write(b"b\n")
    assert read_on(f) == b"b\n"
    f.close()
    assert f.closed


def test_follow_reads_the_old_file_to_its_end_then_moves_on(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(b"a\n")
    f = follow(log)
    assert os.read(f.fd, 100) == b"a\n"
    with log.open("ab") as w:
        w.write(b"late\n")  # written before the rotation, not read yet
    os.rename(log, f"{log}.{STAMP}")
    assert f.at_end() is AtEnd.WAIT, "no new file yet: keep reading the old one"
    log.write_bytes(b"b\n")
    assert f.at_end() is AtEnd.DRAIN
    assert os.read(f.fd, 100) == b"late\n"
    assert os.read(f.fd, 100) == b""
    assert f.at_end() is AtEnd.MOVED
    assert read_on(f) == b"b\n"
    f.close()


def test_follow_goes_through_every_file_rotated_meanwhile(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(b"0\n")
    f = follow(log)
    names = [f"{STAMP}", f"{STAMP}.1", f"{STAMP}.9", f"{STAMP}.10", "20231114-221321"]
    for i, name in enumerate(names):
        os.rename(log, f"{log}.{name}")
        log.write_bytes(b"%d\n" % (i + 1))
    (tmp_path / f"0.log.{STAMP}.2.gz").write_bytes(b"compressed\n")  # not ours: never read
    assert read_on(f) == b"".join(b"%d\n" % i for i in range(len(names) + 1))
    f.close()


def test_follow_does_not_skip_a_file_rotated_between_listing_and_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The interleaving of a writer in another thread (a flaky run of test_logs' rotation test):
    # the follower lists the rotated files, ours is the newest, so the live file comes next; the
    # writer rotates that one before the follower opens the live path, which names a newer file.
    log = tmp_path / "0.log"
    log.write_bytes(b"a\n")
    f = follow(log)
    assert os.read(f.fd, 100) == b"a\n"
    os.rename(log, f"{log}.{STAMP}")
    log.write_bytes(b"b\n")
    listed = []

    def list_then_rotate(path: str) -> list[str]:
        names = rotated_files(path)
        listed.append(names)
        if len(listed) == 1:  # the writer's next rotation, right after the follower's first listing
            os.rename(log, f"{log}.{STAMP}.1")
            log.write_bytes(b"c\n")
        return names

    monkeypatch.setattr(logfiles, "rotated_files", list_then_rotate)
    assert read_on(f) == b"b\nc\n"
    assert listed[0] == [f"{log}.{STAMP}"], "the rotation came after the first listing"
    f.close()


def read_on_until_error(f: FollowedFile) -> tuple[bytes, str]:
    out = b""
    while True:
        data = os.read(f.fd, 65536)
        out += data
        try:
            if not data and f.at_end() is AtEnd.WAIT:
                return out, ""
        except OSError as exc:
            return out, exc.strerror or ""


def test_follow_closes_the_next_file_when_it_cannot_check_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(b"a\n")
    f = follow(log)
    os.rename(log, f"{log}.{STAMP}")
    log.write_bytes(b"b\n")
    calls = []

    def list_then_fail(path: str) -> list[str]:
        calls.append(path)
        if len(calls) == 2:  # the listing after the open
            raise PermissionError(13, "Permission denied", path)
        return rotated_files(path)

    monkeypatch.setattr(logfiles, "rotated_files", list_then_fail)
    fds = os.listdir("/proc/self/fd")
    assert read_on_until_error(f) == (b"a\n", "Permission denied")
    assert os.listdir("/proc/self/fd") == fds, "the next file, opened before the error, is closed"
    assert read_on(f) == b"b\n", "the listing works again: moved on from ours"
    f.close()


def test_follow_after_ours_was_pruned_goes_on_with_what_came_later(tmp_path: Path) -> None:
    log = tmp_path / "0.log"
    log.write_bytes(b"0\n")
    f = follow(log)
    assert os.read(f.fd, 100) == b"0\n"
    os.rename(log, f"{log}.{STAMP}")
    os.remove(f"{log}.{STAMP}")  # pruned before we looked
    Path(f"{log}.{STAMP}.1").write_bytes(b"1\n")
    log.write_bytes(b"2\n")
    assert read_on(f) == b"1\n2\n"
    f.close()
