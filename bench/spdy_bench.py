"""SPDY streaming benchmark (issue 15): exec and port-forward over SPDY/3.1, through the API server
and straight to the node, and the agent's CPU per MB against the WebSocket path.

A real control plane (tests/cluster) and one kubeletapi node (process runtime, a subprocess serving
on the test network's address, as in the cluster tests) run two pods: `shell` (sleeps; the exec
target) and `source` (a TCP server that writes PF_MB MiB of zeros to each connection). Clients are
tests/streaming/spdyclient.py over TLS with the cluster admin certificate: to the API server
(POST .../pods/<p>/exec with `Upgrade: SPDY/3.1`, which it proxies to the node as the kubelet's
SPDY clients do) or straight to the node's /exec and /portForward. Figures:
- exec round trip of `true` (TCP connect to GOAWAY, TLS included), sequential, p50/p99;
- exec stdout throughput: `head -c <EXEC_MB MiB> /dev/zero`, bytes on the stdout stream / wall time,
  and agent CPU seconds per MB (psutil, the agent process); directly, the median of ROUNDS runs
  alternating with the same exec over WebSocket (v4.channel.k8s.io), whose median is beside it;
- port-forward throughput: one data/error stream pair to `source`, bytes / wall time (directly:
  medians against WebSocket port-forward as for exec);
- 50 concurrent execs of `true` through the API server (threads): wall time for all, per-exec p50/p99.
Goals: round trip through the API server p50 <= 30 ms; stdout and port-forward >= 100 MB/s directly;
no more agent CPU per MB than the WebSocket path. Knobs: BENCH_TRIALS (default 100), EXEC_MB (400),
PF_MB (200).
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import os
import platform
import socket
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import pct
from clusterkit import cluster_node
from results_md import update_section

from kubeletapi.spdy import frames as fr
from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.streaming.spdyclient import SpdyClient, upgrade_on

TRIALS = int(os.environ.get("BENCH_TRIALS", "100"))
EXEC_MB = int(os.environ.get("EXEC_MB", "400"))
PF_MB = int(os.environ.get("PF_MB", "200"))
ROUNDS = 5  # alternating SPDY and WebSocket transfers whose medians are compared
PF_PORT = 18555
MIB = 1 << 20
SOURCE = (f"import socket\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
          f"s.bind(('0.0.0.0',{PF_PORT}));s.listen(8)\nb=bytes({MIB})\n"
          f"while True:\n c,_=s.accept()\n for _ in range({PF_MB}): c.sendall(b)\n c.close()\n")


@dataclass
class Endpoint:
    """Where a client connects: an address, a TLS context and the path prefix of the pod."""

    host: str
    port: int
    tls: ssl.SSLContext
    exec_path: Callable[[str, str], str]
    pf_path: str

    def sock(self) -> socket.socket:
        raw = socket.create_connection((self.host, self.port), timeout=60)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.tls.wrap_socket(raw, server_hostname="localhost")


@dataclass
class Figures:
    rows: list[str] = field(default_factory=list)

    def add(self, name: str, value: str, goal: str = "") -> None:
        self.rows.append(f"| {name} | {value} | {goal} |")
        print(name, value, goal, flush=True)


def spdy_exec(ep: Endpoint, command: str) -> tuple[float, int]:
    """One exec over SPDY: (seconds from connect to close, stdout bytes)."""
    started = time.perf_counter()
    answer = upgrade_on(ep.sock(), ep.exec_path(command, "spdy"))
    assert answer.status == 101 and answer.client is not None, (answer.status, answer.body)
    client: SpdyClient = answer.client
    ids = {client.open({"streamtype": t}): t for t in ("error", "stdout", "stderr")}
    out = 0
    status = b""
    while (frame := client.frame(timeout=120)) is not None:
        if isinstance(frame, fr.Data) and ids.get(frame.stream_id) == "stdout":
            out += len(frame.data)
        elif isinstance(frame, fr.Data) and ids.get(frame.stream_id) == "error":
            status += frame.data
        if isinstance(frame, fr.GoAway):
            break
    client.close()
    assert status in (b"", b'{"status":"Success"}'), status
    return time.perf_counter() - started, out


def ws_exec(ep: Endpoint, command: str) -> int:
    """The same exec over a v4 WebSocket straight to the node: stdout bytes."""
    url = f"wss://{ep.host}:{ep.port}{ep.exec_path(command, 'ws')}"
    out = 0
    with ws_connect(url, ssl=ep.tls, server_hostname="localhost", proxy=None, compression=None, max_size=None,
                    subprotocols=[Subprotocol("v4.channel.k8s.io")]) as ws:
        for message in ws:
            if isinstance(message, bytes) and message[:1] == b"\x01":
                out += len(message) - 1
    return out


def agent_cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def round_trips(ep: Endpoint, label: str, out: Figures, goal: str) -> None:
    spdy_exec(ep, "true")  # warm: TLS session, authorization cache
    times = [spdy_exec(ep, "true")[0] * 1000 for _ in range(TRIALS)]
    out.add(f"exec `true` round trip, {label}: p50 / p99", f"{pct(times, 50):.1f} / {pct(times, 99):.1f} ms", goal)


def cpu_per_mb(pid: int, transfer: Callable[[], int]) -> tuple[float, float]:
    """(agent CPU seconds per MB, MB/s) of one transfer returning its byte count."""
    cpu, started = agent_cpu(pid), time.perf_counter()
    got = transfer()
    return (agent_cpu(pid) - cpu) / (got / 1e6), got / (time.perf_counter() - started) / 1e6


def compare(pid: int, spdy: Callable[[], int], ws: Callable[[], int]) -> tuple[float, float, float]:
    """Median agent CPU per MB of SPDY and WebSocket over ROUNDS alternating runs, SPDY's median MB/s."""
    runs = [(cpu_per_mb(pid, spdy), cpu_per_mb(pid, ws)) for _ in range(ROUNDS)]
    return (statistics.median(s[0] for s, _ in runs), statistics.median(w[0] for _, w in runs),
            statistics.median(s[1] for s, _ in runs))


def throughput(ep: Endpoint, label: str, pid: int, out: Figures) -> None:
    command = f"head -c {EXEC_MB * MIB} /dev/zero"
    if label != "direct":
        per_mb, rate = cpu_per_mb(pid, lambda: spdy_exec(ep, command)[1])
        out.add(f"exec stdout, {label}", f"{rate:.0f} MB/s, agent {per_mb * 1000:.2f} ms CPU/MB", "")
        return
    spdy_cpu, ws_cpu, rate = compare(pid, lambda: spdy_exec(ep, command)[1], lambda: ws_exec(ep, command))
    out.add(f"exec stdout, {label}", f"{rate:.0f} MB/s, agent {spdy_cpu * 1000:.2f} ms CPU/MB",
            ">= 100 MB/s directly")
    out.add("exec stdout, WebSocket v4 direct (the same exec)", f"agent {ws_cpu * 1000:.2f} ms CPU/MB",
            f"SPDY/WebSocket CPU per MB: {spdy_cpu / ws_cpu:.2f}x (goal <= 1)")


def spdy_port_forward(ep: Endpoint) -> int:
    """One data/error pair to the source pod over SPDY: the bytes that arrived."""
    answer = upgrade_on(ep.sock(), ep.pf_path, ("portforward.k8s.io",))
    assert answer.status == 101 and answer.client is not None, (answer.status, answer.body)
    client = answer.client
    client.open({"streamtype": "error", "port": str(PF_PORT), "requestid": "0"})
    data = client.open({"streamtype": "data", "port": str(PF_PORT), "requestid": "0"})
    got = 0
    while (frame := client.frame(timeout=120)) is not None:
        if isinstance(frame, fr.Data) and frame.stream_id == data:
            got += len(frame.data)
            if frame.fin:
                break
    client.close()
    assert got == PF_MB * MIB, got
    return got


def port_forward(ep: Endpoint, label: str, pid: int, out: Figures) -> None:
    if label != "direct":
        per_mb, rate = cpu_per_mb(pid, lambda: spdy_port_forward(ep))
        out.add(f"port-forward, {label}", f"{rate:.0f} MB/s, agent {per_mb * 1000:.2f} ms CPU/MB", "")
        return
    spdy_cpu, ws_cpu, rate = compare(pid, lambda: spdy_port_forward(ep), lambda: ws_port_forward(ep))
    out.add(f"port-forward, {label}", f"{rate:.0f} MB/s, agent {spdy_cpu * 1000:.2f} ms CPU/MB",
            ">= 100 MB/s directly")
    out.add("port-forward, WebSocket v4 direct (the same transfer)", f"agent {ws_cpu * 1000:.2f} ms CPU/MB",
            f"SPDY/WebSocket CPU per MB: {spdy_cpu / ws_cpu:.2f}x (goal <= 1)")


def ws_port_forward(ep: Endpoint) -> int:
    """The same transfer over a v4 WebSocket straight to the node: bytes on the data channel."""
    url = f"wss://{ep.host}:{ep.port}{ep.pf_path}?port={PF_PORT}"
    got = -2  # the port prefix that opens the data channel
    with ws_connect(url, ssl=ep.tls, server_hostname="localhost", proxy=None, compression=None, max_size=None,
                    subprotocols=[Subprotocol("v4.channel.k8s.io")]) as ws:
        for message in ws:
            if isinstance(message, bytes) and message[:1] == b"\x00":
                got += len(message) - 1
    assert got == PF_MB * MIB, got
    return got


def concurrent_execs(ep: Endpoint, out: Figures) -> None:
    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(50) as pool:
        times = [t * 1000 for t, _ in pool.map(lambda _: spdy_exec(ep, "true"), range(50))]
    wall = time.perf_counter() - started
    out.add("50 concurrent execs through the API server", f"all done in {wall * 1000:.0f} ms; "
            f"per exec p50 {statistics.median(times):.0f} ms, p99 {pct(times, 99):.0f} ms")


def endpoints(plane: ControlPlane, node: Node, namespace: str) -> tuple[Endpoint, Endpoint]:
    tls = ssl.create_default_context(cafile=str(plane.pki.ca.cert))
    tls.load_cert_chain(plane.pki.root / "admin.crt", plane.pki.root / "admin.key")
    api_port = plane.api_port

    def api_exec(command: str, _: str) -> str:
        args = "".join(f"&command={part}" for part in command.split())
        return f"/api/v1/namespaces/{namespace}/pods/shell/exec?stdout=true&stderr=true{args}"

    def node_exec(command: str, _: str) -> str:
        args = "".join(f"&command={part}" for part in command.split())
        return f"/exec/{namespace}/shell/c?output=1&error=1{args}"

    node_tls = ssl.create_default_context(cafile=str(plane.pki.ca.cert))
    node_tls.load_cert_chain(plane.pki.root / "admin.crt", plane.pki.root / "admin.key")
    node_tls.check_hostname = False
    node_tls.verify_mode = ssl.CERT_NONE  # the node's serving certificate is self-signed
    address = node.flag("--node-ip")
    port = int(node.flag("--port"))
    api = Endpoint("127.0.0.1", api_port, tls, api_exec, f"/api/v1/namespaces/{namespace}/pods/source/portforward")
    direct = Endpoint(address, port, node_tls, node_exec, f"/portForward/{namespace}/source")
    return api, direct


def pods_yaml(namespace: str) -> str:
    def pod(name: str, command: list[str]) -> str:
        return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n"
                f"  containers:\n  - name: c\n    image: busybox:1.36\n    command: {command!r}\n---\n")
    return pod("shell", ["sleep", "3600"]) + pod("source", ["python3", "-c", SOURCE])


def measure(plane: ControlPlane, node: Node, out: Figures) -> None:
    namespace = "bench"
    plane.kubectl("create", "namespace", namespace)
    plane.wait_namespace_ready(namespace)
    plane.kubectl("apply", "-f", "-", input_=pods_yaml(namespace))
    plane.kubectl("wait", "-n", namespace, "--for=condition=Ready", "pod/shell", "pod/source", "--timeout=60s")
    time.sleep(1)  # the source pod's listener
    api, direct = endpoints(plane, node, namespace)
    assert node.agent is not None
    pid = node.agent.proc.pid
    round_trips(api, "through the API server", out, "p50 <= 30 ms")
    round_trips(direct, "direct", out, "")
    throughput(direct, "direct", pid, out)
    throughput(api, "through the API server", pid, out)
    port_forward(direct, "direct", pid, out)
    port_forward(api, "through the API server", pid, out)
    concurrent_execs(api, out)


def render(out: Figures) -> str:
    cpu = platform.processor() or platform.machine()
    return (f"## SPDY streaming (issue 15), {dt.date.today().isoformat()}\n\n"
            f"`python bench/spdy_bench.py` as root: a real control plane and one kubeletapi node (process "
            f"runtime) on {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}; {TRIALS} round "
            f"trips, {EXEC_MB} MiB exec output, {PF_MB} MiB port-forward. Clients, agent and control plane share "
            f"the machine.\n\n| Figure | Value | Goal |\n|---|---|---|\n" + "\n".join(out.rows) + "\n")


def main() -> int:
    if os.geteuid() != 0:
        print("spdy_bench needs root (test network, cgroups)", file=sys.stderr)
        return 1
    out = Figures()
    with tempfile.TemporaryDirectory() as tmp, cluster_node(Path(tmp)) as (plane, node):
        measure(plane, node, out)
    body = render(out)
    update_section("SPDY streaming (issue 15)", body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
