"""`make run` (scripts/run.sh): it starts the agent with the example pods, every command it prints
works, and Ctrl-C removes the pods before stopping the agent."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import free_ports, purge
from tests.podtools import wait_for

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def read_until_banner(proc: subprocess.Popen[str], timeout: float = 30) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "Press Ctrl-C to stop." in line:
            break
    return lines


def examples_settled(read_only: int) -> bool:
    """All four example pods are listed and each container has started at least once."""
    items = httpx.get(f"http://127.0.0.1:{read_only}/pods", timeout=5).json()["items"]
    statuses = [s for p in items for s in p["status"].get("containerStatuses", [])]
    return len(items) == 4 and len(statuses) == 4 and all(s.get("containerID") for s in statuses)


def test_run_script_prints_working_commands(tmp_path: Path) -> None:
    secure, read_only, healthz = free_ports(3)
    env = {
        **os.environ,
        "KUBELETAPI_PORT": str(secure), "KUBELETAPI_READ_ONLY_PORT": str(read_only),
        "KUBELETAPI_HEALTHZ_PORT": str(healthz), "KUBELETAPI_CERT_DIR": str(tmp_path / "certs"),
        "KUBELETAPI_RUN_DIR": str(tmp_path / "run"),
        "KUBELETAPI_CGROUP_ROOT": f"/kubeletapi-test-run-{os.getpid()}",
    }
    state = ["--root-dir", str(tmp_path / "run" / "root"), "--cgroup-root", env["KUBELETAPI_CGROUP_ROOT"]]
    # Ctrl-C as a terminal sends it. SIGINT is set back to its default in the child: a suite started
    # in the background of a non-interactive shell (`make test &`) inherits it ignored, and bash can
    # never trap a signal ignored at its start, so the script would not hear the Ctrl-C at all.
    proc = subprocess.Popen([str(ROOT / "scripts" / "run.sh")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
    lines: list[str] = []
    try:
        lines = read_until_banner(proc)
        assert any("Press Ctrl-C" in line for line in lines), "".join(lines)
        wait_for(lambda: examples_settled(read_only), timeout=30, what="the example pods")
        commands = [line.strip() for line in lines if line.strip().startswith(("curl ", "kubectl "))]
        assert len(commands) == 10, commands
        for command in commands:
            argv = shlex.split(command)
            if argv[0] == "kubectl" and shutil.which("kubectl") is None:
                continue
            result = subprocess.run(argv, capture_output=True, text=True, timeout=30, cwd=ROOT)
            assert result.returncode == 0, (command, result.stderr)
            assert result.stdout, command
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(60)
            lines += proc.stdout.readlines() if proc.stdout else []
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                # The agent runs in a session of its own (the script's setsid): the script did not
                # stop it, so the test does, by the PID the banner printed (still its child's).
                started = re.search(r"kubeletapi is running \(pid (\d+)\)", "".join(lines))
                if started is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(started.group(1)), signal.SIGKILL)
            if proc.stdout is not None:
                proc.stdout.close()
            leftovers = list((tmp_path / "run" / "root" / "runtime" / "process" / "containers").glob("*"))
            purge(state)
    out = "".join(lines)
    assert proc.returncode == 130, out  # interrupted by Ctrl-C...
    assert "Removing the example pods" in out and "Shutting down" in out  # ...pods removed, agent stopped
    assert leftovers == [], "make run left containers behind"
