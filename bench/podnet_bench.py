"""Pod networking on the process runtime: single-pod start latency (manifest written -> Running in
/pods) on the node's network and with the pod's own network namespace (--pod-cidr: the shim's
`netns add`, CNI loopback + bridge + host-local, the shim joining it), and the removal latency.

The agent runs inside a network namespace this script creates (and deletes), so the bridge, the
veths and the addresses of the bench range exist only there. Needs root and the CNI plugins
(/usr/lib/cni). Writes its section of bench/results.md.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pod_bench import _healthy, get_json, pct, remove_cgroups, running_names, wait, write
from ports import free_ports
from results_md import update_section

TRIALS = int(os.environ.get("BENCH_TRIALS", "30"))
POD_CIDR = "10.251.250.0/24"
CNI_BIN = "/usr/lib/cni"


def trials(pod_cidr: str) -> tuple[list[float], list[float]]:
    """Start and removal latencies of TRIALS pods, one at a time, on a fresh agent."""
    secure, ro, healthz = free_ports(3)
    with tempfile.TemporaryDirectory() as tmp:
        manifests = Path(tmp) / "manifests"
        manifests.mkdir()
        cgroup_root = f"/kubeletapi-bench-{os.getpid()}"
        extra = ["--pod-cidr", pod_cidr, "--cni-bin-dir", CNI_BIN] if pod_cidr else []
        agent = subprocess.Popen(
            [sys.executable, "-m", "kubeletapi", "--address", "127.0.0.1", "--port", str(secure),
             "--read-only-port", str(ro), "--healthz-port", str(healthz), "--cert-dir", f"{tmp}/certs",
             "--root-dir", f"{tmp}/root", "--pod-logs-dir", f"{tmp}/logs", "--cgroup-root", cgroup_root,
             "--pod-manifest-path", str(manifests), "--hostname-override", "bench", "--node-ip", "127.0.0.1",
             *extra], stderr=subprocess.DEVNULL)
        starts, removals = [], []
        netns = Path(tmp) / "root" / "network" / "netns"  # empty once the pod's network is released
        try:
            wait(lambda: _healthy(healthz), 30, 0.05)
            for i in range(TRIALS):
                name = f"one{i}"
                t0 = time.perf_counter()
                write(manifests, name)
                wait(lambda n=name: f"{n}-bench" in running_names(ro), 30)
                starts.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                (manifests / f"{name}.yaml").unlink()
                wait(lambda n=name: all(p["metadata"]["name"] != f"{n}-bench"
                                        for p in get_json(f"http://127.0.0.1:{ro}/pods")["items"])
                     and not any(netns.glob("*")), 30, 0.002)
                removals.append(time.perf_counter() - t0)
        finally:
            agent.terminate()
            agent.wait(30)
            remove_cgroups(cgroup_root)
    return starts, removals


def inside() -> int:
    host = trials("")
    own = trials(POD_CIDR)
    rows = []
    for label, (starts, removals) in (("node's network", host), ("own network (--pod-cidr)", own)):
        s, r = [x * 1000 for x in starts], [x * 1000 for x in removals]
        rows.append(f"| {label} | {pct(s, 50):.0f} ms | {pct(s, 90):.0f} ms | {pct(r, 50):.0f} ms | "
                    f"{pct(r, 90):.0f} ms |")
    body = "\n".join([
        f"## Pod networking, process runtime, {dt.date.today().isoformat()}",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, as root. {TRIALS} pods one at a "
        "time (one `sleep` container each); start = manifest written to every container running in /pods, "
        "removal = manifest deleted to the pod gone from /pods and its namespace unbound (polled every 2 ms). "
        "The own network adds the shim's `netns add`, the CNI loopback, bridge and host-local calls on start, "
        "and the bridge DEL and `netns del` on removal. `python bench/podnet_bench.py` reproduces it (inside "
        "a namespace it makes).",
        "",
        "| pods on | start p50 | start p90 | removal p50 | removal p90 |",
        "|---|---:|---:|---:|---:|",
        *rows,
    ])
    print(body)
    update_section("Pod networking", body)
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        return inside()
    name = f"kla-bench-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        return subprocess.call(["nsenter", f"--net=/run/netns/{name}", "--", sys.executable, __file__, "--inside"])
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


if __name__ == "__main__":
    sys.exit(main())
