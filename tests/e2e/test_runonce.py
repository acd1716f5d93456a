"""`kubeletapi --runonce` as a real process: the static pods run once, one line per pod, the pods
removed, exit 0 only when every pod ran; no listener is started."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import LOOPBACK, agent_args, purge

pytestmark = pytest.mark.e2e

POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  restartPolicy: {policy}
  containers:
  - name: c
    image: busybox
    command: ["sh", "-c", "{script}"]
"""


@pytest.fixture
def args(tmp_path: Path) -> Iterator[list[str]]:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    flags = agent_args(tmp_path, "--runonce", "--pod-manifest-path", str(manifests))
    yield flags
    purge(flags)


def _write(args: list[str], name: str, script: str, policy: str = "Always") -> None:
    manifests = Path(args[args.index("--pod-manifest-path") + 1])
    (manifests / f"{name}.yaml").write_text(POD.format(name=name, script=script, policy=policy))


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubeletapi", *args], capture_output=True, text=True, timeout=90)


def _port_free(args: list[str], flag: str) -> bool:
    with socket.socket() as s:
        return s.connect_ex((LOOPBACK, int(args[args.index(flag) + 1]))) != 0


def _runtime_containers(args: list[str]) -> list[Path]:
    root = Path(args[args.index("--root-dir") + 1])
    return list((root / "runtime" / "process" / "containers").glob("*/container.json"))


def test_runonce_all_ran(args: list[str]) -> None:
    _write(args, "web", "echo serving; sleep 300")
    result = _run(args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["default/web-testnode: Running"]
    assert _runtime_containers(args) == []  # removed before exiting
    assert _port_free(args, "--port") and _port_free(args, "--healthz-port")


def test_runonce_a_failed_pod_fails_the_run(args: list[str]) -> None:
    _write(args, "web", "sleep 300")
    _write(args, "broken", "echo failing; exit 3", policy="Never")
    result = _run(args)
    assert result.returncode == 1, result.stderr
    lines = sorted(result.stdout.splitlines())
    assert lines[0] == 'default/broken-testnode: failed: Failed: container "c" exited with 3 (Error)', lines
    assert lines[1] == "default/web-testnode: Running"
    assert "runonce failed: error running pods: [default/broken-testnode]" in result.stderr
    assert _runtime_containers(args) == []
