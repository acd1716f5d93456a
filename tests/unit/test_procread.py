"""The one /proc/<pid>/stat parser (procread.parse_stat) and its readers: the process runtime's
process identity (procfs.start_ticks) over the proctree fixture (tests/testdata/node/proctree)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubeletapi.procread import ProcStat, parse_stat, read_stat
from kubeletapi.runtime.process.procfs import start_ticks

PROC = Path(__file__).parent.parent / "testdata" / "node" / "proctree" / "proc"
TAIL = b"1000 0 10 0 7 3 1 2 20 0 4 0 5004 12345678 50 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0\n"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(b"104 (sh) R 103 104 99 0 -1 4194560 " + TAIL,
                     ProcStat(104, "R", 103, 99, 7, 3, 1, 2, 4, 5004, 50), id="plain"),
        pytest.param(b"104 (my (odd) proc) S 103 104 99 0 -1 4194560 " + TAIL,
                     ProcStat(104, "S", 103, 99, 7, 3, 1, 2, 4, 5004, 50), id="comm-with-spaces-and-parens"),
        pytest.param(b"104 (a) b) Z 1 104 104 0 -1 4194560 " + TAIL,
                     ProcStat(104, "Z", 1, 104, 7, 3, 1, 2, 4, 5004, 50), id="zombie-comm-with-close-paren"),
    ],
)
def test_parse_stat(data: bytes, expected: ProcStat) -> None:
    assert parse_stat(104, data) == expected


@pytest.mark.parametrize("data", [b"106 (torn", b"106 (x) S 1 106 106 0"], ids=["torn-in-comm", "cut-short"])
def test_a_torn_record_is_an_error(data: bytes) -> None:
    with pytest.raises((IndexError, ValueError)):
        parse_stat(106, data)


def test_read_stat_of_this_process() -> None:
    stat = read_stat(os.getpid())
    assert (stat.pid, stat.ppid, stat.session) == (os.getpid(), os.getppid(), os.getsid(0))
    assert stat.state == "R" and stat.threads >= 1


@pytest.mark.parametrize(
    ("pid", "ticks"),
    [
        pytest.param(104, 5004, id="live"),
        pytest.param(102, -1, id="zombie"),
        pytest.param(105, -1, id="gone"),
        pytest.param(106, -1, id="torn"),
    ],
)
def test_start_ticks(pid: int, ticks: int) -> None:
    assert start_ticks(pid, PROC) == ticks
