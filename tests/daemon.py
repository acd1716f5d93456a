"""Helpers for the daemons tests start themselves (the private containerd, the private registry):
wait until one answers, and the tail of its log for the error that says why it did not."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def terminate(proc: subprocess.Popen[bytes] | None, timeout_s: float) -> None:
    """SIGTERM a daemon we started (by its PID) and wait for it; SIGKILL when it has not exited
    within `timeout_s`. Nothing when it is not running."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout_s)


def log_tail(path: Path, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def wait_answering(proc: subprocess.Popen[bytes], answers: Callable[[], bool], timeout_s: float, name: str,
                   log_path: Path, stop: Callable[[], None]) -> None:
    """Poll `answers` until it is true; RuntimeError with the log's tail if the daemon exits first,
    or (after `stop`) if it has not answered within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not answers():
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited {proc.returncode} at start-up:\n{log_tail(log_path)}")
        if time.monotonic() > deadline:
            stop()
            raise RuntimeError(f"{name} did not answer within {timeout_s:g}s:\n{log_tail(log_path)}")
        time.sleep(0.05)
