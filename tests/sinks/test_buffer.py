"""The bounded buffer of gzipped chunks: counted in points, oldest chunks dropped first, one batch
in flight, given back in front."""

from __future__ import annotations

import pytest

from kubeletapi.sinks.buffer import Chunk, PointBuffer


def chunks(*sizes: int) -> list[Chunk]:
    """Chunks named by their position (their body) with the given point counts."""
    return [Chunk(f"c{i}".encode(), n) for i, n in enumerate(sizes)]


def names(batch: list[Chunk]) -> list[bytes]:
    return [c.body for c in batch]


def test_oldest_chunks_dropped_beyond_capacity() -> None:
    buf = PointBuffer(5)
    buf.extend(chunks(2, 2, 2))  # 6 points: the oldest chunk goes
    assert len(buf) == 4 and buf.dropped == 2
    assert names(buf.take(100)) == [b"c1", b"c2"]


def test_take_stops_at_the_limit_but_takes_one_chunk_at_least() -> None:
    buf = PointBuffer(100)
    buf.extend(chunks(3, 3, 3))
    assert names(buf.take(7)) == [b"c0", b"c1"]
    buf.commit()
    buf.extend([Chunk(b"big", 50)])
    assert names(buf.take(7)) == [b"c2"]
    buf.commit()
    assert names(buf.take(7)) == [b"big"]  # bigger than a batch: still sent, alone


def test_batch_in_flight_counts_and_is_given_back_in_front() -> None:
    buf = PointBuffer(8)
    buf.extend(chunks(2, 2, 2))
    assert names(buf.take(4)) == [b"c0", b"c1"]
    assert len(buf) == 6 and buf.waiting == 2
    buf.extend([Chunk(b"new", 2)])
    buf.give_back()
    assert buf.dropped == 0
    assert names(buf.take(100)) == [b"c0", b"c1", b"c2", b"new"]


def test_overflow_during_a_write_dooms_the_batchs_oldest_chunks_first() -> None:
    buf = PointBuffer(4)
    buf.extend(chunks(1, 1, 1, 1))
    buf.take(2)  # c0, c1 in flight
    buf.extend([Chunk(b"a", 1), Chunk(b"b", 1), Chunk(b"c", 1)])  # 3 over: c0, c1 (in flight), then c2
    assert len(buf) == 4 and buf.dropped == 1  # c2 is gone; c0 and c1 only if the write fails
    buf.give_back()
    assert buf.dropped == 3
    assert names(buf.take(10)) == [b"c3", b"a", b"b", b"c"]
    buf.give_back()
    buf.extend([Chunk(b"d", 1)])
    assert names(buf.take(10)) == [b"a", b"b", b"c", b"d"]


def test_doomed_chunks_of_a_successful_write_were_written_not_dropped() -> None:
    buf = PointBuffer(4)
    buf.extend(chunks(2, 2))
    buf.take(2)  # c0 in flight
    buf.extend(chunks(2))  # one chunk over: c0 is the oldest
    assert len(buf) == 4 and buf.dropped == 0
    buf.commit()  # the write succeeded: c0 reached InfluxDB
    assert buf.dropped == 0 and len(buf) == 4
    assert names(buf.take(10)) == [b"c1", b"c0"]  # c1 of the first extend, c0 of the second


def test_buffer_equal_to_batch_keeps_the_newest() -> None:
    buf = PointBuffer(2)
    buf.extend(chunks(2))
    buf.take(2)
    buf.extend([Chunk(b"new", 2)])
    buf.give_back()
    assert names(buf.take(2)) == [b"new"] and buf.dropped == 2


def test_commit_forgets_the_batch() -> None:
    buf = PointBuffer(10)
    buf.extend(chunks(2, 3, 4))
    buf.take(5)
    buf.commit()
    assert len(buf) == 4 and buf.waiting == 4 and names(buf.take(10)) == [b"c2"]


def test_one_batch_at_a_time() -> None:
    buf = PointBuffer(4)
    buf.extend(chunks(1, 1))
    buf.take(1)
    with pytest.raises(RuntimeError):
        buf.take(1)
