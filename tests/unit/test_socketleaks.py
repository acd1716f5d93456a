"""The suite's unclosed-socket reporter (tests/socketleaks.py) names the test and the line that
opened a socket left open, whichever later test the garbage collector finds it in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LEAKY = '''
import gc
import socket

HELD = []


def test_leaks_a_listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    cycle = [sock]
    cycle.append(cycle)  # only the collector frees it


def test_later_collects_it():
    gc.collect()
'''


def test_an_unclosed_socket_names_where_it_was_created(tmp_path: Path) -> None:
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.socketleaks", "-W", "error", "-p", "no:randomly",
         "-p", "no:cacheprovider", "--no-cov", str(tmp_path / "test_leaky.py")],
        capture_output=True, text=True, cwd=root, timeout=120, check=False)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "test_leaky.py::test_leaks_a_listener (call) at:" in out, out  # the test that leaked it
    assert 'test_leaky.py", line 9, in test_leaks_a_listener' in out, out  # the line that opened it
    assert "FAILED" in out and "test_later_collects_it" in out, out  # where the collector found it
