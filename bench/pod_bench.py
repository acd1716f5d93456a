"""Pod benchmarks: start latency (manifest written -> Running in /pods), 110 pods at once, the
agent's idle RSS and CPU with 110 pods, and the shim's private memory per container.

Goals (issue 3): p50 <= 150 ms for one pod; 110 pods Running <= 15 s; agent <= 120 MiB RSS and
<= 0.05 core idle at 110 pods. Writes its section of bench/results.md.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

from ports import free_ports
from results_md import update_section

ROOT = Path(__file__).resolve().parent.parent
TRIALS = int(os.environ.get("BENCH_TRIALS", "30"))
IDLE_S = int(os.environ.get("BENCH_IDLE_SECONDS", "60"))
PODS = 110


def manifest(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n"
            f"  - name: c\n    image: busybox:1.36\n    command: [sleep, '3600']\n")


def get_json(url: str) -> Any:
    import json  # noqa: PLC0415

    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def running_names(ro: int) -> set[str]:
    names = set()
    for pod in get_json(f"http://127.0.0.1:{ro}/pods")["items"]:
        statuses = pod["status"].get("containerStatuses") or []
        if statuses and all("running" in s["state"] for s in statuses):
            names.add(pod["metadata"]["name"])
    return names


def wait(predicate: Any, timeout: float, interval: float = 0.002) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if predicate():
            return time.perf_counter() - start
        time.sleep(interval)
    raise TimeoutError("benchmark wait timed out")


def write(manifests: Path, name: str) -> None:
    tmp = manifests / f".{name}.tmp"
    tmp.write_text(manifest(name))
    tmp.rename(manifests / f"{name}.yaml")


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def single_pod_latency(manifests: Path, ro: int) -> list[float]:
    latencies = []
    for i in range(TRIALS):
        name = f"one{i}"
        start = time.perf_counter()
        write(manifests, name)
        wait(lambda n=name: f"{n}-bench" in running_names(ro), 30)
        latencies.append(time.perf_counter() - start)
        (manifests / f"{name}.yaml").unlink()
        wait(lambda n=name: all(p["metadata"]["name"] != f"{n}-bench"
                                for p in get_json(f"http://127.0.0.1:{ro}/pods")["items"]), 30, 0.01)
    return latencies


def many_pods(manifests: Path, ro: int) -> tuple[float, list[float]]:
    written: dict[str, float] = {}
    start = time.perf_counter()
    for i in range(PODS):
        write(manifests, f"p{i:03d}")
        written[f"p{i:03d}-bench"] = time.perf_counter()
    seen: dict[str, float] = {}
    while len(seen) < PODS and time.perf_counter() - start < 120:
        now = time.perf_counter()
        for name in running_names(ro):
            seen.setdefault(name, now)
        time.sleep(0.01)
    total = max(seen.values()) - start
    return total, [seen[n] - written[n] for n in seen]


def private_kib(pid: int) -> int:
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        fields[key] = int(value.split()[0])
    return fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)


def shim_memory(state: Path) -> tuple[float, float]:
    """Average private KiB of the shim daemons and of their in-namespace inits (0 if none)."""
    daemons, inits = [], []
    import json  # noqa: PLC0415

    for record in (state / "runtime" / "process" / "containers").glob("*/container.json"):
        data = json.loads(record.read_text())
        daemons.append(private_kib(data["shim_pid"]))
        if data.get("init_pid"):
            inits.append(private_kib(data["init_pid"]))
    return statistics.mean(daemons), statistics.mean(inits) if inits else 0.0


def main() -> int:
    secure, ro, healthz = free_ports(3)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        manifests = base / "manifests"
        manifests.mkdir()
        cgroup_root = f"/kubeletapi-bench-{os.getpid()}"
        agent = subprocess.Popen(
            [sys.executable, "-m", "kubeletapi", "--address", "127.0.0.1", "--port", str(secure),
             "--read-only-port", str(ro), "--healthz-port", str(healthz), "--cert-dir", f"{tmp}/certs",
             "--root-dir", f"{tmp}/root", "--pod-logs-dir", f"{tmp}/logs", "--cgroup-root", cgroup_root,
             "--pod-manifest-path", str(manifests), "--hostname-override", "bench", "--node-ip", "127.0.0.1"],
            stderr=subprocess.DEVNULL,
        )
        try:
            wait(lambda: _healthy(healthz), 30, 0.05)
            one = single_pod_latency(manifests, ro)
            total, per_pod = many_pods(manifests, ro)
            proc = psutil.Process(agent.pid)
            time.sleep(5)  # let the burst settle
            cpu0, t0 = proc.cpu_times(), time.perf_counter()
            time.sleep(IDLE_S)
            cpu1, t1 = proc.cpu_times(), time.perf_counter()
            idle_core = (cpu1.user + cpu1.system - cpu0.user - cpu0.system) / (t1 - t0)
            rss = proc.memory_info().rss / 2**20
            daemon_kib, init_kib = shim_memory(base / "root")
            for path in manifests.glob("*.yaml"):
                path.unlink()
            wait(lambda: not get_json(f"http://127.0.0.1:{ro}/pods")["items"], 120, 0.2)
        finally:
            agent.terminate()
            agent.wait(30)
            remove_cgroups(cgroup_root)
    write_results(one, total, per_pod, idle_core, rss, daemon_kib, init_kib)
    return 0


def remove_cgroups(cgroup_root: str) -> None:
    """The QoS cgroups the agent created under its root (empty once the pods are gone)."""
    for mount in Path("/sys/fs/cgroup").iterdir():
        base = mount / cgroup_root.strip("/")
        if base.is_dir():
            for dirpath, _, _ in sorted(os.walk(base), key=lambda e: -len(e[0])):
                with contextlib.suppress(OSError):
                    Path(dirpath).rmdir()


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
            return True
    except OSError:
        return False


def write_results(one: list[float], total: float, per_pod: list[float], idle_core: float, rss: float,
                  daemon_kib: float, init_kib: float) -> None:
    ms = [x * 1000 for x in one]
    many = [x * 1000 for x in per_pod]
    root = "as root: cgroups + namespaces" if os.geteuid() == 0 else "not root: plain processes"
    lines = [
        f"## Pods, process runtime ({root}), {dt.date.today().isoformat()}",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}. Latency = manifest written "
        "(atomic rename into --pod-manifest-path) to every container running in /pods (read-only port, "
        f"polled every 2 ms). `python bench/pod_bench.py` reproduces it ({TRIALS} single-pod trials).",
        "",
        "| measure | value | goal |",
        "|---|---:|---:|",
        f"| one pod: p50 / p99 start latency | {pct(ms, 50):.0f} ms / {pct(ms, 99):.0f} ms | p50 <= 150 ms |",
        f"| 110 pods written at once: all Running after | {total:.2f} s | <= 15 s |",
        f"| 110 pods: per-pod p50 / p99 latency | {pct(many, 50):.0f} ms / {pct(many, 99):.0f} ms | |",
        f"| agent idle CPU with 110 pods ({IDLE_S} s) | {idle_core:.4f} core | <= 0.05 core |",
        f"| agent RSS with 110 pods | {rss:.0f} MiB | <= 120 MiB |",
        f"| shim daemon private memory per container | {daemon_kib:.0f} KiB | <= 4096 KiB |",
        f"| in-namespace init private memory per container | {init_kib:.0f} KiB | |",
        "",
    ]
    section = "\n".join(lines)
    print(section)
    update_section("Pods, process runtime", section)


if __name__ == "__main__":
    raise SystemExit(main())
