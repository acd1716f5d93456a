"""The bounded point buffer: oldest dropped first, one batch in flight, given back in front."""

from __future__ import annotations

import pytest

from kubeletapi.sinks.buffer import PointBuffer


def lines(*numbers: int) -> list[bytes]:
    return [str(n).encode() for n in numbers]


def test_oldest_dropped_beyond_capacity() -> None:
    buf = PointBuffer(3)
    buf.extend(lines(1, 2))
    buf.extend(lines(3, 4, 5))
    assert len(buf) == 3 and buf.dropped == 2
    assert buf.take(10) == lines(3, 4, 5)


def test_batch_in_flight_counts_and_is_given_back_in_front() -> None:
    buf = PointBuffer(4)
    buf.extend(lines(1, 2, 3))
    assert buf.take(2) == lines(1, 2)
    assert len(buf) == 3 and buf.waiting == 1
    buf.extend(lines(4))
    buf.give_back()
    assert buf.dropped == 0
    assert buf.take(10) == lines(1, 2, 3, 4)


def test_given_back_batch_loses_its_oldest_when_full() -> None:
    buf = PointBuffer(4)
    buf.extend(lines(1, 2, 3, 4))
    buf.take(2)
    buf.extend(lines(5, 6, 7))  # only waiting points can go while 1 and 2 are in flight
    assert len(buf) == 4 and buf.dropped == 3
    buf.give_back()
    assert buf.take(10) == lines(1, 2, 6, 7)
    buf.give_back()
    buf.extend(lines(8))
    assert buf.take(10) == lines(2, 6, 7, 8)


def test_commit_forgets_the_batch() -> None:
    buf = PointBuffer(4)
    buf.extend(lines(1, 2, 3))
    buf.take(2)
    buf.commit()
    assert len(buf) == 1 and buf.take(5) == lines(3)


def test_one_batch_at_a_time() -> None:
    buf = PointBuffer(4)
    buf.extend(lines(1, 2))
    buf.take(1)
    with pytest.raises(RuntimeError):
        buf.take(1)
