"""CrashLoopBackOff bookkeeping: immediate first restart, 10 s doubling to 300 s, reset after 10 minutes."""

from __future__ import annotations

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.pods.backoff import Backoff

P = pytest.param
KEY = "uid-1/app"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=1_700_000_000.0)


def test_unknown_key_restarts_at_once(clock: FakeClock) -> None:
    backoff = Backoff(clock)
    assert backoff.remaining(KEY, finished_at=clock.now()) == 0.0
    assert backoff.current(KEY) == 0.0


@pytest.mark.parametrize(
    ("restarts", "expected"),
    [
        P(1, 10.0, id="1"),
        P(2, 20.0, id="2"),
        P(3, 40.0, id="3"),
        P(4, 80.0, id="4"),
        P(5, 160.0, id="5"),
        P(6, 300.0, id="6-capped-not-320"),
        P(7, 300.0, id="7"),
        P(20, 300.0, id="20"),
    ],
)
def test_doubling_capped(clock: FakeClock, restarts: int, expected: float) -> None:
    backoff = Backoff(clock)
    for _ in range(restarts):
        backoff.next(KEY)
        clock.advance(1)  # restarts well inside the 10-minute window
    assert backoff.current(KEY) == expected
    assert backoff.remaining(KEY, finished_at=clock.now()) == expected


@pytest.mark.parametrize(
    ("finished_ago", "expected"),
    [
        P(0.0, 20.0, id="just-finished"),
        P(5.0, 15.0, id="finished-5s-ago"),
        P(19.5, 0.5, id="almost-over"),
        P(20.0, 0.0, id="exactly-over"),
        P(90.0, 0.0, id="long-ago-never-negative"),
    ],
)
def test_remaining_counts_from_the_finish_time(clock: FakeClock, finished_ago: float, expected: float) -> None:
    backoff = Backoff(clock)
    backoff.next(KEY)
    backoff.next(KEY)  # 20 s
    assert backoff.remaining(KEY, finished_at=clock.now() - finished_ago) == pytest.approx(expected)


def test_remaining_shrinks_as_time_passes(clock: FakeClock) -> None:
    backoff = Backoff(clock)
    finished = clock.now()
    backoff.next(KEY)
    assert backoff.remaining(KEY, finished) == 10.0
    clock.advance(4)
    assert backoff.remaining(KEY, finished) == pytest.approx(6.0)
    clock.advance(6)
    assert backoff.remaining(KEY, finished) == 0.0


def test_reset_after_ten_minutes_untouched(clock: FakeClock) -> None:
    backoff = Backoff(clock)
    for _ in range(3):
        backoff.next(KEY)
    assert backoff.current(KEY) == 40.0
    clock.advance(600)  # exactly 10 minutes: still remembered
    assert backoff.current(KEY) == 40.0
    clock.advance(0.5)
    assert backoff.current(KEY) == 0.0
    assert backoff.remaining(KEY, finished_at=clock.now()) == 0.0  # restart at once
    backoff.next(KEY)
    assert backoff.current(KEY) == 10.0  # starts over, not 80


def test_each_restart_refreshes_the_window(clock: FakeClock) -> None:
    backoff = Backoff(clock)
    backoff.next(KEY)
    for _ in range(3):
        clock.advance(500)  # never 10 minutes between two restarts
        backoff.next(KEY)
    assert backoff.current(KEY) == 80.0


def test_keys_are_independent(clock: FakeClock) -> None:
    backoff = Backoff(clock)
    backoff.next("uid-1/a")
    backoff.next("uid-1/a")
    backoff.next("uid-1/b")
    assert (backoff.current("uid-1/a"), backoff.current("uid-1/b")) == (20.0, 10.0)


def test_forget_drops_one_pods_entries(clock: FakeClock) -> None:
    backoff = Backoff(clock)
    for key in ("uid-1/a", "uid-1/b", "uid-10/a", "uid-2/a"):
        backoff.next(key)
        backoff.next(key)
    backoff.forget("uid-1/")
    assert [backoff.current(k) for k in ("uid-1/a", "uid-1/b", "uid-10/a", "uid-2/a")] == [0.0, 0.0, 20.0, 20.0]
    backoff.next("uid-1/a")
    assert backoff.current("uid-1/a") == 10.0  # starts over
    backoff.forget("nothing/")  # no match: no error


def test_custom_limits(clock: FakeClock) -> None:
    backoff = Backoff(clock, initial_s=1.0, max_s=3.0, reset_after_s=5.0)
    got = []
    for _ in range(4):
        backoff.next(KEY)
        got.append(backoff.current(KEY))
    assert got == [1.0, 2.0, 3.0, 3.0]
    clock.advance(5.1)
    assert backoff.current(KEY) == 0.0
