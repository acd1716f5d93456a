"""pods.dirwatch: inotify on the event loop, with real files in a temporary directory."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from kubeletapi.pods.dirwatch import IN_Q_OVERFLOW, Batch, DirWatch

WAIT_S = 5.0  # a bound for a test that would hang, never a timing expectation


async def next_batch(watch: DirWatch) -> Batch:
    return await asyncio.wait_for(watch.next(), WAIT_S)


async def pending(watch: DirWatch) -> bool:
    """Whether events are queued (a short look: nothing is expected to come later)."""
    try:
        await asyncio.wait_for(watch.next(), 0.2)
    except TimeoutError:
        return False
    return True


def test_a_file_is_reported_once_written_and_closed_not_while_being_written(tmp_path: Path) -> None:
    async def main() -> None:
        with DirWatch(tmp_path) as watch:
            with (tmp_path / "web.yaml").open("wb") as f:
                f.write(b"apiVersion: v1\n")
                f.flush()
                assert not await pending(watch)  # created and written, still open: nothing yet
            batch = await next_batch(watch)
            assert batch == Batch(("web.yaml",), gone=False, overflowed=False)

    asyncio.run(main())


def test_renames_deletions_symlinks_attributes_and_new_directories_are_reported(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    try:
        (outside / "db.yaml").write_text("x")
        (tmp_path / "old.yaml").write_text("x")

        async def main() -> None:
            with DirWatch(tmp_path) as watch:
                os.rename(outside / "db.yaml", tmp_path / "db.yaml")
                assert (await next_batch(watch)).names == ("db.yaml",)
                (tmp_path / "old.yaml").unlink()
                assert (await next_batch(watch)).names == ("old.yaml",)
                (tmp_path / "link.yaml").symlink_to(tmp_path / "db.yaml")
                assert (await next_batch(watch)).names == ("link.yaml",)
                os.chmod(tmp_path / "db.yaml", 0o600)
                assert (await next_batch(watch)).names == ("db.yaml",)
                (tmp_path / "sub").mkdir()  # a watched single path's parent sees it appear
                assert (await next_batch(watch)).names == ("sub",)

        asyncio.run(main())
    finally:
        shutil.rmtree(outside)


def test_the_directory_going_away_is_reported(tmp_path: Path) -> None:
    watched = tmp_path / "manifests"
    watched.mkdir()

    async def main() -> None:
        with DirWatch(watched) as watch:
            watched.rmdir()
            batch = await next_batch(watch)
            while not batch.gone:
                batch = await next_batch(watch)

    asyncio.run(main())


def test_a_path_that_is_no_directory_cannot_be_watched(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for path in (tmp_path / "file", tmp_path / "absent"):
        with pytest.raises(OSError, match=str(path)):
            DirWatch(path)


def test_an_overflowed_queue_is_reported(tmp_path: Path) -> None:
    with DirWatch(tmp_path) as watch:
        # struct inotify_event of IN_Q_OVERFLOW: wd -1, no name (the kernel's own record)
        data = (-1).to_bytes(4, "little", signed=True) + IN_Q_OVERFLOW.to_bytes(4, "little") + bytes(8)
        assert watch.parse(data) == Batch((), gone=False, overflowed=True)


def test_closing_while_a_next_waits_stops_watching_the_descriptor(tmp_path: Path) -> None:
    async def main() -> None:
        watch = DirWatch(tmp_path)
        waiting = asyncio.create_task(watch.next())
        await asyncio.sleep(0)  # the task is waiting on the descriptor
        watch.close()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        with DirWatch(tmp_path) as again:  # may get the same descriptor number: watched anew
            (tmp_path / "web.yaml").write_text("x")
            assert (await next_batch(again)).names == ("web.yaml",)

    asyncio.run(main())
