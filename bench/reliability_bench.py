"""Reliability figures (issue 13): what hostile input costs a running agent.

- a 10,000-container manifest (JSON and YAML) dropped into the manifest directory of an agent with
  10 pods: /healthz latency on all three ports while the source reads and refuses it;
- 1,100 idle connections to the read-only port of an agent started at a soft file limit of 1024
  (its hard limit above): pods lost, /healthz latency while they are open;
- 10 minutes of wrk on /metrics/cadvisor and /stats/summary at 110 pods x 2 containers: the
  agent's RSS every 30 s.
Writes its section of bench/results.md. Needs root (cgroups) and wrk. `--minutes N` shortens the
last part for a trial run (the section says so).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import Client, agent_args, pct, purge, stop_pods, wait
from ports import free_ports
from results_md import update_section
from stats_bench import PODS, manifest, running_containers, start_pods

SECTION = "Reliability (issue 13): hostile input"
BIG = 10_000


class Agent:
    def __init__(self, base: Path, *, soft_nofile: int | None = None) -> None:
        (base / "manifests").mkdir(parents=True)
        self.ports = free_ports(3)
        self.args = agent_args(base, "10s", self.ports, "--file-check-frequency", "1s")
        wrapper = ["prlimit", f"--nofile={soft_nofile}:"] if soft_nofile else []
        self.proc = subprocess.Popen([*wrapper, sys.executable, "-m", "kubeletapi", *self.args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.manifests = base / "manifests"
        wait(self.healthy, 60, 0.1, "agent healthy")

    @property
    def read_only(self) -> int:
        return self.ports[1]

    def healthy(self) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.ports[2]), timeout=1):
            return _healthz_ms("127.0.0.1", self.ports[2]) is not None
        return False

    def rss_mib(self) -> float:
        return psutil.Process(self.proc.pid).memory_info().rss / 2**20

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            stop_pods(self.manifests, self.read_only)
        self.proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(30)
        if self.proc.poll() is None:
            self.proc.kill()
        purge(self.args)


def _healthz_ms(host: str, port: int) -> float | None:
    start = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
    except OSError:
        return None
    return (time.perf_counter() - start) * 1000 if data.startswith(b"HTTP/1.1 200") else None


def probe_healthz(ports: list[int], seconds: float) -> list[float]:
    """/healthz on each port every 50 ms for `seconds`; latencies in ms (a failure counts as 10 s)."""
    out: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for port in ports:
            ms = _healthz_ms("127.0.0.1", port)
            out.append(ms if ms is not None else 10_000.0)
        time.sleep(0.05)
    return out


def big_manifest(kind: str) -> bytes:
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
           "spec": {"containers": [{"name": f"c{i}", "image": "busybox:1.36", "command": ["sleep", "3600"]}
                                   for i in range(BIG)]}}
    if kind == "json":
        return json.dumps(doc).encode()
    import yaml  # noqa: PLC0415

    return yaml.safe_dump(doc).encode()


def big_manifest_run(base: Path) -> list[str]:
    agent = Agent(base)
    rows = []
    try:
        client = Client(agent.read_only)
        for i in range(10):
            (agent.manifests / f"p{i}.yaml").write_text(manifest(f"p{i}"))
        wait(lambda: running_containers(client) == 20, 120, 0.2, "10 pods running")
        ports = [agent.ports[0], agent.ports[1], agent.ports[2]]
        quiet = probe_healthz(ports[1:], 5)
        rows.append(f"| no manifest change (baseline) | {len(quiet)} | {pct(quiet, 50):.1f} | {pct(quiet, 99):.1f} | "
                    f"{max(quiet):.1f} | 20 of 20 running |")
        for kind in ("json", "yaml"):
            data = big_manifest(kind)
            seen: list[float] = []
            prober = threading.Thread(target=lambda s=seen: s.extend(probe_healthz(ports[1:], 15)))
            prober.start()
            time.sleep(1)
            tmp = agent.manifests / f".big.{kind}.tmp"
            tmp.write_bytes(data)
            tmp.rename(agent.manifests / f"big.{kind}")
            prober.join()
            running = running_containers(client)
            rows.append(f"| {BIG:,}-container {kind.upper()} manifest ({len(data) / 2**20:.2f} MiB) dropped in | "
                        f"{len(seen)} | {pct(seen, 50):.1f} | {pct(seen, 99):.1f} | {max(seen):.1f} | "
                        f"{running} of 20 running |")
            (agent.manifests / f"big.{kind}").unlink()
        client.close()
    finally:
        agent.stop()
    return rows


def idle_connections_run(base: Path) -> list[str]:
    agent = Agent(base, soft_nofile=1024)
    try:
        client = Client(agent.read_only)
        for i in range(10):
            (agent.manifests / f"p{i}.yaml").write_text(manifest(f"p{i}"))
        wait(lambda: running_containers(client) == 20, 120, 0.2, "10 pods running")
        before = {p["metadata"]["uid"] for p in client.json("/pods")["items"]}
        limits = Path(f"/proc/{agent.proc.pid}/limits").read_text()
        nofile = next(line for line in limits.splitlines() if line.startswith("Max open files")).split()[3:5]
        held = [socket.create_connection(("127.0.0.1", agent.read_only), timeout=5) for _ in range(1100)]
        time.sleep(2)
        fds = len(os.listdir(f"/proc/{agent.proc.pid}/fd"))
        seen = probe_healthz([agent.ports[1], agent.ports[2]], 20)
        for sock in held:
            sock.close()
        time.sleep(3)
        after = {p["metadata"]["uid"] for p in client.json("/pods")["items"]}
        running = running_containers(client)
        client.close()
        return [f"| 1,100 idle connections, agent started at soft limit 1024 (limit after start: "
                f"{nofile[0]} soft / {nofile[1]} hard; {fds} descriptors open) | {len(seen)} | {pct(seen, 50):.1f} | "
                f"{pct(seen, 99):.1f} | {max(seen):.1f} | {running} of 20 running, pods lost {len(before - after)} |"]
    finally:
        agent.stop()


def wrk_run(base: Path, minutes: float) -> list[str]:
    agent = Agent(base)
    try:
        client = Client(agent.read_only)
        start_pods(agent.manifests, client)
        client.close()
        rss = [(0.0, agent.rss_mib())]
        duration = int(minutes * 60)
        jobs = [subprocess.Popen(["wrk", "-t1", "-c2", f"-d{duration}s", f"http://127.0.0.1:{agent.read_only}{path}"],
                                 stdout=subprocess.PIPE, text=True)
                for path in ("/metrics/cadvisor", "/stats/summary")]
        began = time.monotonic()
        while any(j.poll() is None for j in jobs):
            time.sleep(min(30, max(duration / 20, 1)))
            rss.append((time.monotonic() - began, agent.rss_mib()))
        requests = []
        for job in jobs:
            out = job.communicate()[0]
            line = next((x for x in out.splitlines() if "requests in" in x), "")
            requests.append(line.strip())
        trend = ", ".join(f"{t / 60:.1f} min {m:.0f}" for t, m in rss)
        first = mean([m for t, m in rss if 0 < t <= duration / 2])
        second = mean([m for t, m in rss if t > duration / 2])
        return [f"| {PODS} pods x 2 containers, {minutes:g} min of wrk (1 thread, 2 connections each) on "
                f"/metrics/cadvisor and /stats/summary | RSS MiB: {trend} | mean first half {first:.1f}, "
                f"second half {second:.1f} | "
                f"{'; '.join(requests)} |"]
    finally:
        agent.stop()


def mean(values: list[float]) -> float:
    return sum(values) / max(len(values), 1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    opts = parser.parse_args()
    if os.geteuid() != 0:
        print("reliability_bench needs root (the process runtime's cgroups)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="relbench-") as tmp:
        base = Path(tmp)
        big = big_manifest_run(base / "big")
        idle = idle_connections_run(base / "idle")
        soak = wrk_run(base / "soak", opts.minutes)
    cores = os.cpu_count()
    lines = [
        f"## {SECTION}, {time.strftime('%Y-%m-%d')}",
        "",
        f"`.venv/bin/python bench/reliability_bench.py` as root, {cores} cores, "
        f"load {os.getloadavg()[0]:.1f} at the end. /healthz probed on the read-only and healthz ports every 50 ms "
        "(a new connection each time), milliseconds; a failed probe counts 10,000.",
        "",
        "| attack | probes | p50 | p99 | max | pods |",
        "|---|---|---|---|---|---|",
        *big,
        *idle,
        "",
        "| soak | RSS over time | trend | wrk |",
        "|---|---|---|---|",
        *soak,
    ]
    section = "\n".join(lines)
    print(section)
    update_section(SECTION, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
