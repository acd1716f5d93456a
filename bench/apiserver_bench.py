"""Apiserver mode: 110 pods of a Deployment on one kubeletapi node of a real control plane.

- `kubectl scale` 0 -> 110: time to all Running in the API, and per-pod startup latency (the
  pod's ADDED event on an admin watch -> the first event showing it Running with every container
  ready), p50/p99 (the Kubernetes pod-startup SLO: p99 <= 5 s; aim: p99 <= 2 s);
- the agent's CPU (over a steady minute) and RSS with 110 API pods;
- the API requests the agent sends at steady state, per minute, by verb and resource, from the API
  server's own audit log (every request of group system:nodes; a watch counts when it ends).
  The kubelet's budget: one lease renewal per 10 s, node status patched only on change or every
  5 min (read from its node informer, no GET), pod status patches only on change, watches renewed
  every 5-10 min.

Needs root and the cluster binaries (`make cluster-bin`). Writes its section of bench/results.md.
`python bench/apiserver_bench.py` reproduces it (BENCH_STEADY_SECONDS, default 120).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as dt
import json
import os
import platform
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests.cluster: the control plane
from clusterkit import audit_counts, cluster_node
from results_md import update_section

from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node

PODS = 110
STEADY_S = int(os.environ.get("BENCH_STEADY_SECONDS", "120"))
SETTLE_S = 30


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def running_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    return status.get("phase") == "Running" and bool(containers) and all(c.get("ready") for c in containers)


class PodWatch(threading.Thread):
    """An admin watch on the namespace: when each pod was first seen and first seen Running."""

    def __init__(self, plane: ControlPlane, namespace: str, version: str) -> None:
        super().__init__(daemon=True)
        self.plane, self.namespace, self.version = plane, namespace, version
        self.added: dict[str, float] = {}
        self.bound: dict[str, float] = {}  # first seen with spec.nodeName: the scheduler's part ends
        self.running: dict[str, float] = {}

    def run(self) -> None:
        ctx = ssl.create_default_context(cafile=str(self.plane.pki.ca.cert))
        ctx.load_cert_chain(self.plane.pki.root / "admin.crt", self.plane.pki.root / "admin.key")
        url = f"{self.plane.server}/api/v1/namespaces/{self.namespace}/pods"
        params = {"watch": "true", "resourceVersion": self.version, "timeoutSeconds": "600"}
        timeout = httpx.Timeout(10, read=700)
        with contextlib.suppress(httpx.HTTPError), httpx.Client(verify=ctx, timeout=timeout) as client, \
                client.stream("GET", url, params=params) as response:  # ends when the plane stops
            for line in response.iter_lines():
                now = time.perf_counter()
                event = json.loads(line)
                pod = event["object"]
                name = pod["metadata"]["name"]
                self.added.setdefault(name, now)
                if pod["spec"].get("nodeName"):
                    self.bound.setdefault(name, now)
                if running_ready(pod):
                    self.running.setdefault(name, now)


@dataclasses.dataclass
class Figures:
    all_running: float
    latencies: list[float]
    on_node: list[float]  # bound (nodeName seen) -> Running and ready: the node's part
    cpu: float
    rss_mib: float
    counts: collections.Counter[str]
    startup_counts: collections.Counter[str]
    startup_s: float


def measure(plane: ControlPlane, node: Node) -> Figures:
    deadline = time.monotonic() + 30
    while not node.ready() and time.monotonic() < deadline:
        time.sleep(0.1)
    plane.kubectl("create", "namespace", "bench")
    plane.wait_namespace_ready("bench")
    plane.kubectl("create", "deployment", "sleepers", "-n", "bench", "--replicas=0", "--image=busybox:1.36",
                  "--", "sleep", "36000")
    listed = plane.get_json("/api/v1/namespaces/bench/pods")
    watch = PodWatch(plane, "bench", str(listed["metadata"]["resourceVersion"]))  # type: ignore[index]
    watch.start()
    started = time.perf_counter()
    scaled_at = dt.datetime.now(dt.UTC)
    plane.kubectl("scale", "deployment", "sleepers", "-n", "bench", f"--replicas={PODS}")
    while len(watch.running) < PODS and time.perf_counter() - started < 600:
        time.sleep(0.05)
    all_running = max(watch.running.values()) - started
    latencies = [watch.running[n] - watch.added[n] for n in watch.running]
    on_node = [watch.running[n] - watch.bound[n] for n in watch.running]
    running_at = dt.datetime.now(dt.UTC)
    time.sleep(SETTLE_S)
    assert node.agent is not None
    agent = psutil.Process(node.agent.proc.pid)
    cpu0 = sum(agent.cpu_times()[:2])
    since = dt.datetime.now(dt.UTC)
    time.sleep(STEADY_S)
    until = dt.datetime.now(dt.UTC)
    cpu = (sum(agent.cpu_times()[:2]) - cpu0) / STEADY_S
    rss = agent.memory_info().rss / 2**20
    time.sleep(2)  # the audit log's batch
    return Figures(all_running, latencies, on_node, cpu, rss, audit_counts(plane, node.name, since, until),
                   audit_counts(plane, node.name, scaled_at, running_at), (running_at - scaled_at).total_seconds())


def render(f: Figures) -> str:
    per_minute = {k: v * 60 / STEADY_S for k, v in sorted(f.counts.items())}
    p50, p99, total = pct(f.latencies, 50), pct(f.latencies, 99), sum(per_minute.values())
    rows = "\n".join(f"| {k} | {v:.1f} |" for k, v in per_minute.items()) or "| (none) | 0 |"
    startup_rows = "\n".join(f"| {k} | {v} |" for k, v in sorted(f.startup_counts.items())) or "| (none) | 0 |"
    n50, n99 = pct(f.on_node, 50), pct(f.on_node, 99)
    return f"""## Apiserver mode (issue 14): 110 Deployment pods on a kubeletapi node, {dt.date.today()}

Machine: {os.cpu_count()} cores, Python {platform.python_version()}; a real control plane (etcd, kube-apiserver,
controller-manager, scheduler v1.34 built by `make cluster-bin`) on the same machine; the process runtime.
`python bench/apiserver_bench.py` reproduces it. Startup latency per pod: its ADDED event on an admin
watch to the first event showing it Running and ready (the SLO's definition, no image pulls).

| measure | value | goal |
|---|---:|---:|
| `kubectl scale` 0 -> {PODS}: all Running in the API after | {f.all_running:.1f} s | |
| per-pod startup latency p50 / p99 | {p50:.2f} s / {p99:.2f} s | p99 <= 5 s (SLO), aim <= 2 s |
| of which on the node (bound -> Running and ready) p50 / p99 | {n50:.2f} s / {n99:.2f} s | |
| agent CPU at steady state ({STEADY_S} s) | {f.cpu:.3f} core | |
| agent RSS with {PODS} API pods | {f.rss_mib:.0f} MiB | |
| API requests per minute at steady state (all verbs) | {total:.1f} | <= the kubelet's: 6 lease PUTs + watches |

Requests per minute at steady state, by verb and resource (the API server's audit log, user
system:node:<node>, {STEADY_S} s after {SETTLE_S} s of settling):

| verb resource | per minute |
|---|---:|
{rows}

Requests the node sent during the scale-up ({f.startup_s:.1f} s, from `kubectl scale` to all Running;
kubeAPIQPS 50, kubeAPIBurst 100):

| verb resource | requests |
|---|---:|
{startup_rows}
"""


def main() -> int:
    if os.geteuid() != 0:
        print("apiserver_bench needs root (test network, cgroups)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp, cluster_node(Path(tmp), audit_nodes=True) as (plane, node):
        figures = measure(plane, node)
    body = render(figures)
    update_section("Apiserver mode", body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
