"""`make run` (scripts/run.sh): it starts the agent and every command it prints works."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import free_ports

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def test_run_script_prints_working_commands(tmp_path: Path) -> None:
    secure, read_only, healthz = free_ports(3)
    env = {
        **os.environ,
        "KUBELETAPI_PORT": str(secure), "KUBELETAPI_READ_ONLY_PORT": str(read_only),
        "KUBELETAPI_HEALTHZ_PORT": str(healthz), "KUBELETAPI_CERT_DIR": str(tmp_path / "certs"),
        "KUBELETAPI_RUN_DIR": str(tmp_path / "run"),
    }
    proc = subprocess.Popen([str(ROOT / "scripts" / "run.sh")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, start_new_session=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Press Ctrl-C to stop." in line:
                break
        assert any("Press Ctrl-C" in line for line in lines), "".join(lines)
        commands = [line.strip() for line in lines if line.strip().startswith(("curl ", "kubectl "))]
        assert len(commands) == 5, commands
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
            proc.wait(30)
            lines += proc.stdout.readlines() if proc.stdout else []
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    assert proc.returncode == 130, "".join(lines)  # interrupted by Ctrl-C...
    assert "Shutting down" in "".join(lines)  # ...after the agent stopped cleanly
