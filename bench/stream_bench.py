"""Streaming and probes benchmark (issue 5): exec round trip, exec stdout throughput, /containerLogs
follow throughput, and probe scheduling jitter with 110 pods x 3 probes at a 1 s period.

The agent runs in this process on the event loop the CLI uses (uvloop when installed), with
gc.freeze() after start as the CLI does, as root with the process runtime (a private
--cgroup-root, state in a temp dir, loopback ports). Clients talk to the secure port over TLS with
the admin client certificate, as kubectl would through the API server:
- exec round trip: a new WebSocket (v5.channel.k8s.io) per exec of `true`, from the TCP connect
  to the status frame on channel 3 (TLS handshake included);
- exec throughput: `head -c 100000000 /dev/zero` with output=1, bytes on channel 1 / wall time;
- /containerLogs?follow=true throughput: a container that has written 100 MB of 100-byte lines
  (containerLogMaxSize raised so nothing rotates away), read from the start until 100 MB arrived;
- probe jitter: 110 pods, each with a startup exec probe (`true`), a liveness httpGet and a
  readiness tcpSocket probe against a loopback HTTP server in another process, all at periodSeconds 1;
  jitter = started - scheduled of every run in a steady 30 s window (the prober's own record:
  `scheduled` is the tick a run belongs to, `started` when its handler began). A second phase runs
  110 exec liveness probes (`true`) at 1 s, the expensive kind (a process spawn each).
Goals: exec round trip p50 <= 50 ms; >= 50 MB/s stdout; probe jitter p99 <= 100 ms.
Knobs: BENCH_TRIALS (exec round trips, default 100), BENCH_PODS (default 110), BENCH_WINDOW_S
(probe window, default 30).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import os
import platform
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import Client, LoopThread, agent_args, pct, purge, stop_pods, wait
from ports import free_ports
from results_md import update_section

TRIALS = int(os.environ.get("BENCH_TRIALS", "100"))
PODS = int(os.environ.get("BENCH_PODS", "110"))
WINDOW_S = float(os.environ.get("BENCH_WINDOW_S", "30"))
STREAM_BYTES = 100_000_000
SECTION = "Streaming and probes (issue 5)"
CONFIG = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
          "containerLogMaxSize: 300Mi\nmaxPods: 250\n")


def write(manifests: Path, name: str, text: str) -> None:
    tmp = manifests / f".{name}.tmp"
    tmp.write_text(text)
    tmp.rename(manifests / f"{name}.yaml")


def pod(name: str, command: str, extra: str = "") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n"
            f"  - name: c\n    image: busybox:1.36\n    command: [sh, -c, {command!r}]\n{extra}")


def probed_pod(name: str, port: int, exec_liveness: bool) -> str:
    if exec_liveness:
        probes = "    livenessProbe: {exec: {command: [\"true\"]}, periodSeconds: 1}\n"
    else:
        probes = (
            "    startupProbe: {exec: {command: [\"true\"]}, periodSeconds: 1}\n"
            f"    livenessProbe: {{httpGet: {{path: /, port: {port}, host: 127.0.0.1}}, periodSeconds: 1}}\n"
            f"    readinessProbe: {{tcpSocket: {{port: {port}, host: 127.0.0.1}}, periodSeconds: 1}}\n"
        )
    return pod(name, "exec sleep 3600", probes)


@dataclass
class Results:
    exec_ms: list[float] = field(default_factory=list)
    exec_mbps: list[float] = field(default_factory=list)
    logs_mbps: list[float] = field(default_factory=list)
    jitter_ms: dict[str, list[float]] = field(default_factory=dict)  # phase -> lags
    runs: dict[str, int] = field(default_factory=dict)
    cpu_core: dict[str, float] = field(default_factory=dict)
    rss_mib: float = 0.0


class Node:
    """The in-process agent and TLS clients for its secure port."""

    def __init__(self, base: Path) -> None:
        from kubeletapi.cli import configuration  # noqa: PLC0415
        from kubeletapi.kubelet import Kubelet  # noqa: PLC0415

        (base / "manifests").mkdir()
        (base / "config.yaml").write_text(CONFIG)
        self.base = base
        self.ports = free_ports(3)
        self.args = agent_args(base, "10s", self.ports, "--config", str(base / "config.yaml"))
        self.kubelet = Kubelet(*configuration(self.args))
        self.loop = LoopThread()
        self.loop.run(self.kubelet.start())
        gc.freeze()
        certs = base / "certs"
        self.tls = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        self.tls.load_cert_chain(certs / "admin.crt", certs / "admin.key")
        self.client = Client(self.ports[1])

    def ws(self, path: str) -> ClientConnection:
        return connect(f"wss://127.0.0.1:{self.ports[0]}{path}", ssl=self.tls, proxy=None,
                       subprotocols=[Subprotocol("v5.channel.k8s.io")], compression=None, max_size=None)

    def running(self, names: list[str]) -> bool:
        items = {p["metadata"]["name"]: p for p in self.client.json("/pods")["items"]}
        for name in names:
            statuses = items.get(f"{name}-benchnode", {}).get("status", {}).get("containerStatuses") or []
            if not statuses or not all("running" in s["state"] for s in statuses):
                return False
        return True

    def close(self) -> None:
        stop_pods(self.base / "manifests", self.ports[1])
        self.client.close()
        with contextlib.suppress(Exception):
            self.loop.run(self.kubelet.stop())
        self.loop.close()
        purge(self.args)


def exec_once(node: Node, command: str) -> tuple[float, int]:
    """(seconds from connect to the status frame, stdout bytes) of one exec."""
    start = time.perf_counter()
    received = 0
    with node.ws(f"/exec/default/shell-benchnode/c?output=1&{command}") as ws:
        for message in ws:
            assert isinstance(message, bytes)
            if message[:1] == b"\x01":
                received += len(message) - 1
            elif message[:1] == b"\x03":
                if b'"Success"' not in message:
                    raise RuntimeError(f"exec failed: {message[1:300]!r}")
                break
    return time.perf_counter() - start, received


def streaming(node: Node, out: Results) -> None:
    manifests = node.base / "manifests"
    write(manifests, "shell", pod("shell", "exec sleep 3600"))
    # 1,000,000 lines of 99 bytes; fold leaves the last one unterminated, echo ends it.
    lines = "head -c 99000000 /dev/zero | fold -w 99; echo; exec sleep 3600"
    write(manifests, "talker", pod("talker", lines))
    wait(lambda: node.running(["shell", "talker"]), 60, 0.1, "the streaming pods")
    for _ in range(5):  # warm-up
        exec_once(node, "command=true")
    for _ in range(TRIALS):
        out.exec_ms.append(exec_once(node, "command=true")[0] * 1000)
    for _ in range(3):
        seconds, received = exec_once(node, f"command=head&command=-c&command={STREAM_BYTES}&command=/dev/zero")
        if received != STREAM_BYTES:
            raise RuntimeError(f"exec delivered {received} of {STREAM_BYTES} bytes")
        out.exec_mbps.append(received / seconds / 1e6)
    log_dir = node.base / "logs"
    wait(lambda: sum(f.stat().st_size for f in log_dir.glob("default_talker-benchnode_*/c/*.log")) > 1.2 * 99e6,
         120, 0.5, "the talker's 100 MB of log")
    for _ in range(3):
        out.logs_mbps.append(follow_logs(node))


def follow_logs(node: Node) -> float:
    import http.client  # noqa: PLC0415

    conn = http.client.HTTPSConnection("127.0.0.1", node.ports[0], context=node.tls, timeout=60)
    try:
        start = time.perf_counter()
        conn.request("GET", "/containerLogs/default/talker-benchnode/c?follow=true")
        response = conn.getresponse()
        got = 0
        target = 99_000_000 + 1_000_000  # 1,000,000 lines of 99 x and a newline
        while got < target:
            chunk = response.read1(1 << 20)
            if not chunk:
                raise RuntimeError(f"the log ended after {got} bytes")
            got += len(chunk)
        return got / (time.perf_counter() - start) / 1e6
    finally:
        conn.close()


@contextlib.contextmanager
def probe_target() -> Iterator[int]:
    """A loopback HTTP server in its own process (in this one it would compete with the agent
    for the GIL and show up as probe jitter)."""
    port = free_ports(1)[0]
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    try:
        wait(lambda: _listening(port), 10, 0.05, "the probe target")
        yield port
    finally:
        server.kill()
        server.wait()


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def probes(node: Node, out: Results, phase: str, exec_liveness: bool) -> None:
    manifests = node.base / "manifests"
    records: list[tuple[float, float]] = []
    lock = threading.Lock()
    recording = threading.Event()

    class Observer:
        def probe_finished(self, record: Any) -> None:
            if recording.is_set():
                with lock:
                    records.append((record.scheduled, record.started))

        def worker_stopped(self, key: Any) -> None:
            pass

    node.kubelet.pods.probes.add_observer(Observer())  # type: ignore[union-attr]
    with probe_target() as port:
        names = [f"{phase}{i:03d}" for i in range(PODS)]
        for name in names:
            write(manifests, name, probed_pod(name, port, exec_liveness))
        wait(lambda: node.running(names), 300, 0.5, f"{PODS} probed pods")
        time.sleep(5)  # startup probes done, workers on their steady schedule
        proc = psutil.Process()
        cpu0 = proc.cpu_times()
        recording.set()
        time.sleep(WINDOW_S)
        recording.clear()
        cpu1 = proc.cpu_times()
        for name in names:
            (manifests / f"{name}.yaml").unlink()
        wait(lambda: not any(p["metadata"]["name"].startswith(phase) for p in node.client.json("/pods")["items"]),
             180, 0.5, "probed pods removed")
    out.jitter_ms[phase] = [(started - scheduled) * 1000 for scheduled, started in records]
    out.runs[phase] = len(records)
    used = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    out.cpu_core[phase] = used / WINDOW_S


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, Linux {platform.release()}"


def met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def write_results(out: Results, loop_name: str) -> None:
    def row(name: str, values: list[float], unit: str) -> str:
        return f"| {name} | {pct(values, 50):.2f} | {pct(values, 99):.2f} | {max(values):.2f} | {unit} |"

    mix, heavy = out.jitter_ms.get("mix", []), out.jitter_ms.get("exec", [])
    lines = [
        f"## {SECTION}, {dt.date.today().isoformat()}",
        "",
        f"Machine: {machine()}; event loop: {loop_name}. `python bench/stream_bench.py` (as root) reproduces "
        "it. Method: see the module docstring (in-process agent, TLS to the secure port with the admin "
        f"client certificate; {TRIALS} exec round trips; 3 x 100 MB for each throughput; probe windows of "
        f"{WINDOW_S:.0f} s with {PODS} pods).",
        "",
        "| measure | p50 | p99 | max | unit |",
        "|---|---:|---:|---:|---|",
        row("exec round trip (`true`, new TLS WebSocket each)", out.exec_ms, "ms"),
        f"| exec stdout throughput (100 MB) | {pct(out.exec_mbps, 50):.0f} | | {max(out.exec_mbps):.0f} | MB/s |",
        f"| /containerLogs follow throughput (100 MB) | {pct(out.logs_mbps, 50):.0f} | | {max(out.logs_mbps):.0f} "
        "| MB/s |",
        row(f"probe jitter, {PODS} pods x (liveness httpGet + readiness tcpSocket), 1 s "
            f"({out.runs.get('mix', 0)} runs)", mix, "ms"),
        row(f"probe jitter, {PODS} pods x liveness exec, 1 s ({out.runs.get('exec', 0)} runs)", heavy, "ms"),
        "",
        "| measure | value |",
        "|---|---:|",
        f"| agent CPU during the httpGet + tcpSocket window | {out.cpu_core.get('mix', 0):.3f} core |",
        f"| agent CPU during the exec window (the shims it spawns not included) | "
        f"{out.cpu_core.get('exec', 0):.3f} core |",
        f"| agent RSS at the end | {out.rss_mib:.0f} MiB |",
        "",
        "| goal | measured | met? |",
        "|---|---:|---|",
        f"| exec round trip p50 <= 50 ms | {pct(out.exec_ms, 50):.1f} ms | {met(pct(out.exec_ms, 50) <= 50)} |",
        f"| exec stdout >= 50 MB/s | {pct(out.exec_mbps, 50):.0f} MB/s | {met(pct(out.exec_mbps, 50) >= 50)} |",
    ]
    for phase, label in (("mix", "httpGet + tcpSocket"), ("exec", "exec")):
        values = out.jitter_ms.get(phase, [])
        if values:
            p99 = pct(values, 99)
            lines.append(f"| probe jitter p99 <= 100 ms ({label}) | {p99:.1f} ms | {met(p99 <= 100)} |")
    lines.append("")
    section = "\n".join(lines)
    print(section)
    update_section(SECTION, section)


def main() -> int:
    if os.geteuid() != 0:
        print("stream_bench: needs root (cgroups, namespaces)", file=sys.stderr)
        return 1
    from kubeletapi.cli import _loop_factory  # noqa: PLC0415

    factory = _loop_factory()
    loop_name = "asyncio" if factory is None else factory.__module__.split(".")[0]
    out = Results()
    with tempfile.TemporaryDirectory(prefix="stream-bench-") as tmp:
        node = Node(Path(tmp))
        try:
            streaming(node, out)
            for name in ("shell", "talker"):
                (node.base / "manifests" / f"{name}.yaml").unlink()
            probes(node, out, "mix", exec_liveness=False)
            probes(node, out, "exec", exec_liveness=True)
            out.rss_mib = psutil.Process().memory_info().rss / 2**20
        finally:
            node.close()
    write_results(out, loop_name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
