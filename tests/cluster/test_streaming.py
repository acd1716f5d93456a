"""What a user does with a pod's streams through the real API server: `kubectl exec` (a command,
and `-it sh` on a pseudo-terminal with a resize), `kubectl attach`, `kubectl cp`, `kubectl
port-forward`, and the Python client's stream(). kubectl speaks WebSocket (v5.channel.k8s.io,
port-forward tunnelled) to the API server, which speaks SPDY/3.1 to the node; the Python client
offers v5 (translated to SPDY the same way) and v4 (proxied byte for byte to the node's WebSocket).

One node and one set of pods per runtime (module scope: no test changes what another one uses; the one
test that ends a container has a pod of its own):
- `box`: `main` (sleeps; exec, cp), `printer` (prints tick-<n> five times a second), `reader`
  (stdin: true; prints `got: <line>` for every line), `web` (an HTTP server on a free port: the
  pods use the host's network, serving f0..f19);
- `term`: `sh` with stdin and a tty, restartPolicy Never (attach -it types into it and exits it).
The process runtime runs commands on the host: its containers see the host's filesystem, so their
files live in the module's tmp directory; busybox's on containerd live in the image's /tmp and /www.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.stream import stream

from tests.cluster.conftest import IMAGE, RUNTIMES
from tests.cluster.controlplane import ControlPlane, binary
from tests.cluster.node import Node
from tests.cluster.terminal import Terminal
from tests.helpers import free_port
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

FILES = 20  # the web server's files, one per concurrent request
FILE_BYTES = 200_000
MB50 = 50 * 1024 * 1024


def file_body(i: int) -> bytes:
    """What `yes file-<i> | head -c FILE_BYTES` writes."""
    line = f"file-{i}\n".encode()
    return (line * (FILE_BYTES // len(line) + 1))[:FILE_BYTES]


@dataclass
class Pods:
    plane: ControlPlane
    node: Node
    namespace: str
    dir: str  # a directory the containers can write (kubectl cp's target)
    web_port: int

    def kubectl(self, *args: str, input_: str | None = None, timeout: float = 60, check: bool = True
                ) -> subprocess.CompletedProcess[str]:
        return self.plane.kubectl("-n", self.namespace, *args, input_=input_, timeout=timeout, check=check)

    def argv(self, *args: str) -> list[str]:
        """kubectl's command line, for the tests that run it as a process of their own."""
        return [binary("kubectl"), f"--kubeconfig={self.plane.admin}", "-n", self.namespace, *args]


def _box(runtime: str, www: str, port: int) -> dict[str, Any]:
    files = f"mkdir -p {www} && for i in $(seq 0 {FILES - 1}); do yes file-$i | head -c {FILE_BYTES} > {www}/f$i; done"
    server = (f"exec {sys.executable} -m http.server {port} --bind 0.0.0.0 --directory {www}" if runtime == "process"
              else f"exec httpd -f -p {port} -h {www}")
    ticks = "i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.2; done"
    reader = 'while read -r line; do echo "got: $line"; done'

    def c(name: str, command: list[str], **extra: Any) -> dict[str, Any]:
        return {"name": name, "image": IMAGE, "command": command, **extra}

    return {"terminationGracePeriodSeconds": 1, "containers": [
        c("main", ["sleep", "3600"]),
        c("printer", ["sh", "-c", ticks]),
        c("reader", ["sh", "-c", reader], stdin=True),
        c("web", ["sh", "-c", f"{files} && {server}"],
          readinessProbe={"tcpSocket": {"port": port}, "periodSeconds": 1}),
    ]}


def _term() -> dict[str, Any]:
    return {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
        {"name": "sh", "image": IMAGE, "command": ["sh"], "stdin": True, "tty": True}]}


def _ready(plane: ControlPlane, namespace: str, name: str) -> bool:
    with plane.admin_client() as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    status = response.json().get("status", {}) if response.status_code == 200 else {}
    ready = next((c for c in status.get("conditions") or [] if c["type"] == "Ready"), None)
    return status.get("phase") == "Running" and ready is not None and ready["status"] == "True"


@pytest.fixture(scope="module", params=RUNTIMES)
def pods(request: pytest.FixtureRequest, control_plane: ControlPlane,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pods]:
    runtime = request.param
    tmp = tmp_path_factory.mktemp(f"streaming-{runtime}")
    endpoint = request.getfixturevalue("cluster_cri").endpoint if runtime == "containerd" else ""
    node = Node(control_plane, tmp, runtime=runtime, cri_endpoint=endpoint)
    namespace = f"stream-{node.name.removeprefix('node-')}"
    share = tmp / "share"
    share.mkdir()
    container_dir, www = (str(share), str(share / "www")) if runtime == "process" else ("/tmp", "/www")
    p = Pods(control_plane, node, namespace, container_dir, free_port())
    try:
        node.start()
        wait_for(node.ready, timeout=10, what="node Ready")
        control_plane.kubectl("create", "namespace", namespace)
        control_plane.wait_namespace_ready(namespace)
        for name, spec in (("box", _box(runtime, www, p.web_port)), ("term", _term())):
            body = {"nodeName": node.name, "automountServiceAccountToken": False, **spec}
            p.kubectl("apply", "-f", "-", input_=json.dumps(
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": body}))
        for name in ("box", "term"):
            wait_for(partial(_ready, control_plane, namespace, name), timeout=60, what=f"{name} Ready")
        yield p
    finally:
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        node.remove()


# --- exec ---------------------------------------------------------------------------------------
def test_exec_output_and_exit_codes(pods: Pods) -> None:
    done = pods.kubectl("exec", "box", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2")
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")
    failed = pods.kubectl("exec", "box", "-c", "main", "--", "sh", "-c", "echo before; exit 7", check=False)
    assert failed.returncode == 7, failed.stderr  # kubectl exits with the command's code
    assert failed.stdout == "before\n"
    assert "command terminated with exit code 7" in failed.stderr


def test_exec_stdin_to_its_end(pods: Pods) -> None:
    """The command sees EOF once kubectl's input ended (`kubectl exec -i ... < file`; cp needs it too)."""
    data = "0123456789" * 10_000
    counted = pods.kubectl("exec", "-i", "box", "-c", "main", "--", "wc", "-c", input_=data, timeout=20)
    assert counted.stdout.strip() == str(len(data))


def test_exec_it_shell_on_a_terminal(pods: Pods) -> None:
    term = Terminal(pods.argv("exec", "-it", "box", "-c", "main", "--", "sh"), rows=24, cols=80)
    try:
        term.expect(rb"[#$] ")  # the shell's prompt (busybox asks for the cursor position after it)
        term.type("stty size\r")
        term.expect(rb"\b24 80\r\n")  # the terminal's size when kubectl started
        term.type("echo typed-$((6*7))\r")
        term.expect(rb"typed-42\r\n")
        term.type("sleep 60\r")
        time.sleep(0.5)
        term.type("\x03")  # ^C: the terminal's interrupt reaches the command in the container
        term.type("echo after-$((1+1))\r")
        term.expect(rb"after-2\r\n", timeout=10)
        term.resize(37, 111)
        time.sleep(0.5)  # the resize travels on its own stream: let it land before asking
        term.type("stty size\r")
        term.expect(rb"\b37 111\r\n")
        term.type("exit\r")
        assert term.wait() == 0, term.seen.decode(errors="replace")
    finally:
        term.close()


def _line(proc: subprocess.Popen[str]) -> str:
    """The next line of kubectl's output; when there is none, what it said on stderr."""
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise AssertionError(f"kubectl ended ({proc.returncode}) without a line: {proc.stderr.read()}")
    return line


# --- attach -------------------------------------------------------------------------------------
def test_attach_follows_output(pods: Pods) -> None:
    attach = subprocess.Popen(pods.argv("attach", "box", "-c", "printer"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        lines = [_line(attach) for _ in range(4)]
        assert all(re.fullmatch(r"tick-\d+\n", line) for line in lines), lines
        ticks = [int(line.strip().removeprefix("tick-")) for line in lines]
        assert ticks == list(range(ticks[0], ticks[0] + 4)), ticks
    finally:
        attach.kill()
        attach.communicate()


def test_attach_stdin(pods: Pods) -> None:
    """Typed lines reach the container; a second attach after the first went away still does."""
    for words in (("hello", "world"), ("again",)):
        attach = subprocess.Popen(pods.argv("attach", "-i", "box", "-c", "reader"), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        try:
            assert attach.stdin is not None
            for word in words:
                attach.stdin.write(f"{word}\n")
                attach.stdin.flush()
                assert _line(attach) == f"got: {word}\n"
        finally:
            attach.kill()  # not EOF on stdin: the reader would end and restart
            attach.communicate()


def test_attach_it_types_into_a_tty_container(pods: Pods) -> None:
    term = Terminal(pods.argv("attach", "-it", "term", "-c", "sh"), rows=30, cols=100)
    try:
        term.expect("If you don't see a command prompt, try pressing enter.")
        term.type("echo typed-$((6*7))\r")
        term.expect(rb"typed-42\r\n")
        term.type("stty size\r")
        term.expect(rb"\b30 100\r\n")
        term.type("exit\r")  # the container ends (restartPolicy Never), and with it the attach
        assert term.wait() == 0, term.seen.decode(errors="replace")
    finally:
        term.close()


# --- cp -----------------------------------------------------------------------------------------
def test_cp_50mb_in_and_back(pods: Pods, tmp_path: Path) -> None:
    sent = tmp_path / "sent.bin"
    sent.write_bytes(os.urandom(MB50))
    digest = hashlib.sha256(sent.read_bytes()).hexdigest()
    started = time.monotonic()
    pods.kubectl("cp", str(sent), f"box:{pods.dir}/in.bin", "-c", "main", timeout=50)
    assert _sha256_inside(pods, f"{pods.dir}/in.bin") == digest
    back = tmp_path / "back.bin"
    pods.kubectl("cp", f"box:{pods.dir}/in.bin", str(back), "-c", "main", timeout=50)
    assert hashlib.sha256(back.read_bytes()).hexdigest() == digest
    print(f"kubectl cp 50 MB in and back on {pods.node.runtime}: {time.monotonic() - started:.1f}s")


def test_cp_50mb_out(pods: Pods, tmp_path: Path) -> None:
    """Out only (no stdin to the container): a file the container wrote."""
    made = f"{pods.dir}/made.bin"
    pods.kubectl("exec", "box", "-c", "main", "--", "sh", "-c", f"head -c {MB50} /dev/urandom > {made}")
    out = tmp_path / "out.bin"
    pods.kubectl("cp", f"box:{made}", str(out), "-c", "main", timeout=50)
    assert out.stat().st_size == MB50
    assert hashlib.sha256(out.read_bytes()).hexdigest() == _sha256_inside(pods, made)


def _sha256_inside(pods: Pods, path: str) -> str:
    return pods.kubectl("exec", "box", "-c", "main", "--", "sha256sum", path).stdout.split()[0]


# --- port-forward -------------------------------------------------------------------------------
def test_port_forward_20_concurrent_requests(pods: Pods) -> None:
    forward = subprocess.Popen(pods.argv("port-forward", "pod/box", f":{pods.web_port}", "--address", "127.0.0.1"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        found = re.fullmatch(rf"Forwarding from 127\.0\.0\.1:(\d+) -> {pods.web_port}\n", _line(forward))
        assert found is not None
        local = int(found.group(1))

        def fetch(i: int) -> bytes:  # a connection of its own: one more stream pair on the node
            response = httpx.get(f"http://127.0.0.1:{local}/f{i}", timeout=30)
            assert response.status_code == 200, response.text
            return response.content

        with ThreadPoolExecutor(FILES) as pool:
            bodies = list(pool.map(fetch, range(FILES)))
        for i, body in enumerate(bodies):
            assert body == file_body(i), f"f{i}: {len(body)} bytes, starting {body[:20]!r}"
    finally:
        forward.kill()
        forward.communicate()


# --- the Python client ----------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["v5.channel.k8s.io", "v4.channel.k8s.io"])
def test_python_client_stream(pods: Pods, protocol: str) -> None:
    """v5 (what the client prefers): the API server translates it to SPDY; v4: proxied as it is."""
    api_client = k8s_config.new_client_from_config(config_file=str(pods.plane.admin))
    api_client.set_default_header("sec-websocket-protocol", protocol)
    api = k8s.CoreV1Api(api_client)
    try:
        assert _client_exec(api, pods.namespace, "echo hello; echo oops >&2") == (protocol, "hello\n", 0)
        assert _client_exec(api, pods.namespace, "echo bye; exit 3") == (protocol, "bye\n", 3)
        _, lines, code = _client_exec(api, pods.namespace, "seq 1 5000")
        assert (lines.split(), code) == ([str(i) for i in range(1, 5001)], 0)
    finally:
        api_client.close()


def _client_exec(api: k8s.CoreV1Api, namespace: str, script: str) -> tuple[str, str, int]:
    """(subprotocol, stdout, exit code) of `sh -c script` in box's main. Not preloaded: the
    client's preloading call never closes its WebSocket."""
    ws = stream(api.connect_get_namespaced_pod_exec, "box", namespace, container="main",
                command=["sh", "-c", script], stdout=True, stderr=True, stdin=False, tty=False,
                _preload_content=False)
    try:
        ws.run_forever(timeout=20)
        return ws.subprotocol, ws.read_stdout(), ws.returncode
    finally:
        ws.close()
        ws.sock.shutdown()  # close() skips a socket whose close frame was already answered
