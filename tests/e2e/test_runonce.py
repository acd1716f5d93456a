"""`kubeletapi --runonce` as a real process: the static pods (a manifest directory and a manifest
URL) run once, one line per pod, the pods removed, exit 0 only when every pod ran; no listener is
started."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


@pytest.fixture
def manifest_url() -> Iterator[str]:
    """A --manifest-url serving one pod."""
    body = POD.format(name="fromurl", script="sleep 300", policy="Always").encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}/pods.yaml"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_runonce_all_ran(args: list[str], manifest_url: str) -> None:
    _write(args, "web", "echo serving; sleep 300")
    result = _run([*args, "--manifest-url", manifest_url])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["default/fromurl-testnode: Running", "default/web-testnode: Running"]
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
