"""Web UI benchmark (issue 19): page load time on loopback, the agent's CPU while a page is open,
its memory with a page left open, and the history ring's memory and cost at 110 pods. Writes its
section of bench/results.md.

One agent, `python -m kubeletapi` as a subprocess (root, process runtime, private cgroup root, state
in a temp dir, loopback ports), at the default --housekeeping-interval 10s, with 110 static pods of
two `sleep 3600` containers (as stats_bench). The browser is Debian's Chromium driven by
playwright-core (bench/ui_load.mjs; `make deb` and `make ui` install both), on the secure port with
the node's bearer token (TLS, authentication and authorization included); the node's serving key is
trusted (--ignore-certificate-errors-spki-list), as a browser trusting the node's CA would: with a
certificate error Chromium caches nothing.

1. Load: BENCH_LOADS fresh page loads (a new tab each; the HTTP cache kept) of the node page (/ui/:
   node and pods views, 110 rows) and of a pod page; per load the time from navigation start to
   DOMContentLoaded, to the load event, and to the first render with data (the views the page
   carries drawn: cards, the table, every chart), and where the time went (when the page's first
   byte came, when it was received, the script, the page's performance marks).
2. CPU: the agent's CPU (psutil, user + system) over BENCH_OPEN_S seconds with no page open, then
   with the node page open, then with a pod page open (each polls its views every 5 s).
3. Memory: the node page left open for BENCH_MEMORY_S seconds, the agent's RSS sampled every 10 s;
   growth = least-squares slope with its standard error (the hour-long check, shortened).
4. Ring: stats/history.History filled for a whole 15-minute window with a 110-pod Summary at 10 s
   and at 1 s intervals: bytes held (tracemalloc) and CPU per add (one per housekeeping cycle).

Goals (issue 19): a page loads in under 300 ms on loopback; an open page costs under 1 % of a core.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import psutil
from benchkit import Client, agent_args, cores, cpu_s, pct, purge, stop_pods, wait
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from ports import free_ports
from results_md import update_section
from stats_bench import PODS, all_containers_sampled, start_pods, wait_generations

from kubeletapi.api import stats_v1alpha1 as api
from kubeletapi.stats.history import History

REPO = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).with_name("ui_load.mjs")
CHROMIUM = "/usr/bin/chromium"
LOADS = int(os.environ.get("BENCH_LOADS", "20"))
OPEN_S = float(os.environ.get("BENCH_OPEN_S", "60"))
MEMORY_S = float(os.environ.get("BENCH_MEMORY_S", "300"))
RING_PODS = 110  # the ring is measured at 110 pods whatever BENCH_PODS says
Mi = 1 << 20


def spki(cert: Path) -> str:
    """base64 of the SHA-256 of the certificate's public key (Chromium's --ignore-certificate-errors-spki-list)."""
    key = x509.load_pem_x509_certificate(cert.read_bytes()).public_key()
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def browser(mode: str, url: str, token: str, key: str, paths: list[str], seconds: float = 0) -> subprocess.Popen[str]:
    node = shutil.which("node")
    if not node or not Path(CHROMIUM).exists() or not (REPO / "ui/node_modules/playwright-core").is_dir():
        raise SystemExit("ui_bench: needs node, Debian's chromium (make deb) and playwright-core (make ui)")
    args = {"mode": mode, "url": url, "token": token, "spki": key, "chromium": CHROMIUM, "ui": str(REPO / "ui"),
            "paths": paths, "loads": LOADS, "seconds": seconds}
    return subprocess.Popen([node, str(SCRIPT), json.dumps(args)], stdout=subprocess.PIPE, text=True)


def open_page(proc: psutil.Process, url: str, token: str, key: str, path: str, seconds: float,
              rss: list[tuple[float, float]] | None = None) -> tuple[float, int]:
    """Agent cores used while `path` is open for `seconds` (from its first render), and the polls made."""
    page = browser("open", url, token, key, [path], seconds)
    assert page.stdout is not None
    if page.stdout.readline().strip() != "OPEN":
        raise RuntimeError("the page did not open")
    cpu0, t0 = cpu_s(proc), time.monotonic()
    if rss is not None:
        while page.poll() is None and time.monotonic() - t0 < seconds:
            rss.append((time.monotonic() - t0, proc.memory_info().rss / Mi))
            time.sleep(10)
    closed = page.stdout.readline().split()
    core = (cpu_s(proc) - cpu0) / (time.monotonic() - t0)
    page.wait(30)
    return core, int(closed[1]) if len(closed) > 1 else 0


def slope(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares slope (MiB per hour) and its standard error."""
    xs = [x / 3600 for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    resid = [y - (my + b * (x - mx)) for x, y in zip(xs, ys, strict=True)]
    se = (sum(r * r for r in resid) / max(1, len(xs) - 2) / sxx) ** 0.5
    return b, se


def ring(interval: float) -> tuple[float, float]:
    """(MiB held, ms CPU per add) of a full window at 110 pods of two containers."""
    node = api.NodeStats("n", 0, cpu=api.CPUStats(1, usage_nano_cores=10**9),
                         memory=api.MemoryStats(1, working_set_bytes=Mi),
                         network=api.NetworkStats(1, api.InterfaceStats("eth0", 1, 0, 1, 0)),
                         fs=api.FsStats(1, used_bytes=Mi), image_fs=api.FsStats(1, used_bytes=Mi))
    summary = api.Summary(node)
    for p in range(RING_PODS):
        pod = api.PodStats(f"p{p}", "default", f"uid-{p}", 0, cpu=api.CPUStats(1, usage_nano_cores=10**6),
                           memory=api.MemoryStats(1, working_set_bytes=Mi),
                           network=api.NetworkStats(1, api.InterfaceStats("eth0", 1, 0, 1, 0)))
        pod.containers = [api.ContainerStats(n, 0, cpu=api.CPUStats(1, usage_nano_cores=10**6),
                                             memory=api.MemoryStats(1, working_set_bytes=Mi))
                          for n in ("app", "sidecar")]
        summary.pods.append(pod)
    tracemalloc.start()
    history = History(interval)
    t0 = time.thread_time()
    for i in range(history.capacity):
        history.add(i + 1, float(i), summary)
    per_add = (time.thread_time() - t0) / history.capacity * 1000
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t0 = time.thread_time()  # without tracemalloc's overhead
    for i in range(100):
        history.add(i + 1, float(i), summary)
    per_add = (time.thread_time() - t0) / 100 * 1000
    return held / Mi, per_add


def run() -> dict[str, Any]:
    out: dict[str, Any] = {}
    ports = free_ports(3)
    with tempfile.TemporaryDirectory(prefix="ui-bench-") as tmp:
        base = Path(tmp)
        (base / "manifests").mkdir()
        args = agent_args(base, "10s", ports)
        with (base / "agent.log").open("wb") as log:
            agent = subprocess.Popen([sys.executable, "-m", "kubeletapi", *args], stdout=log, stderr=log)
        client = Client(ports[1])
        try:
            wait(lambda: ((base / "certs/tokens.csv").exists() and _healthy(ports[1])) or agent.poll() is not None,
                 30, 0.1, "agent healthy")
            if agent.poll() is not None:
                raise RuntimeError(f"agent exited: {(base / 'agent.log').read_text()[-2000:]}")
            start_pods(base / "manifests", client)
            wait(lambda: all_containers_sampled(client), 60, 0.5, "every container in housekeeping")
            wait_generations(client, 2)
            client.close()
            token = (base / "certs/tokens.csv").read_text().split(",", 1)[0]
            key = spki(base / "certs/kubelet.crt")
            url = f"https://127.0.0.1:{ports[0]}"
            pod_path = "/ui/pods/default/p000-benchnode"
            proc = psutil.Process(agent.pid)
            loader = browser("load", url, token, key, ["/ui/", pod_path])
            stdout, _ = loader.communicate(timeout=600)
            out["loads"] = json.loads(stdout)
            out["idle_core"] = cores(proc, OPEN_S)
            out["node_core"], out["node_polls"] = open_page(proc, url, token, key, "/ui/", OPEN_S)
            out["pod_core"], out["pod_polls"] = open_page(proc, url, token, key, pod_path, OPEN_S)
            rss: list[tuple[float, float]] = []
            out["memory_core"], _ = open_page(proc, url, token, key, "/ui/", MEMORY_S, rss)
            out["rss"] = rss
            sizes = Client(ports[1])
            out["bytes"] = {p: len(sizes.get(p)[1]) for p in ("/ui/api/node", "/ui/api/pods",
                                                               "/ui/api/pods/default/p000-benchnode")}
            sizes.close()
        finally:
            stop_pods(base / "manifests", ports[1])
            agent.terminate()
            try:
                agent.wait(30)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
            purge(args)
    out["ring"] = {interval: ring(interval) for interval in (10.0, 1.0)}
    return out


def _healthy(port: int) -> bool:
    try:
        client = Client(port)
        try:
            return client.get("/healthz")[1] == b"ok"
        finally:
            client.close()
    except (OSError, RuntimeError):
        return False


STEPS = (("page first byte", "page's first byte"), ("page", "page received"), ("assets/ui.js", "script"),
         ("ui:script", "script starts"), ("ui:data", "views parsed"), ("ui:table", "table drawn"),
         ("ui:charts", "charts drawn"))


def _steps(loads: list[dict[str, Any]]) -> str:
    """The p50 end of each step the page's loads recorded (ui_load.mjs: requests and the page's marks)."""
    parts = []
    for key, label in STEPS:
        ends = [load["steps"][key][1] for load in loads if key in load["steps"]]
        if ends:
            parts.append(f"{label} {statistics.median(ends):.0f}")
    ready = statistics.median(load["ready"] for load in loads)
    return ", ".join([*parts, f"first render with data {ready:.0f}"])


def write(out: dict[str, Any]) -> str:
    def stats(path: str, key: str) -> str:
        values = [load[key] for load in out["loads"][path]]
        return f"{pct(values, 50):.0f} / {pct(values, 95):.0f} / {max(values):.0f}"

    pages = (("node page /ui/ (110 pods)", "/ui/"), ("pod page", "/ui/pods/default/p000-benchnode"))
    rows = [f"| {name} | {stats(path, 'dcl')} | {stats(path, 'load')} | {stats(path, 'ready')} |"
            for name, path in pages]
    steps = [f"{name}: {_steps(out['loads'][path])}" for name, path in pages]
    rss = out["rss"]
    growth, se = slope(rss) if len(rss) > 2 else (0.0, 0.0)
    late = rss[len(rss) // 2:]  # the ring full and the caches warm: what an open page adds from then on
    late_growth, late_se = slope(late) if len(late) > 2 else (0.0, 0.0)
    if dump := os.environ.get("BENCH_RSS_OUT"):
        Path(dump).write_text(json.dumps(rss))
    ring_rows = [f"| {interval:g} s | {held:.2f} MiB | {per_add:.2f} ms |"
                 for interval, (held, per_add) in out["ring"].items()]
    body = "\n".join([
        "## ui_bench: the web UI (issue 19)",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {platform.node()} ({os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.2f}); {PODS} pods x 2 containers, --housekeeping-interval 10s, "
        "secure port (TLS, token).",
        "",
        f"Page loads ({LOADS} each, ms from navigation start; p50 / p95 / max):",
        "",
        "| page | DOMContentLoaded | load event | first render with data |",
        "|---|---|---|---|",
        *rows,
        "",
        "Where a load's time goes (p50 ms from navigation start, when each step ended; the page's views "
        "inline, its assets from the browser's cache by their versioned address):",
        "",
        *[f"- {line}" for line in steps],
        "",
        f"Agent CPU ({OPEN_S:.0f} s each): no page {out['idle_core'] * 100:.2f} % of a core; node page open "
        f"{out['node_core'] * 100:.2f} % ({out['node_polls']} polls); pod page open {out['pod_core'] * 100:.2f} % "
        f"({out['pod_polls']} polls). The page's own share: node page "
        f"{(out['node_core'] - out['idle_core']) * 100:+.2f} %, "
        f"pod page {(out['pod_core'] - out['idle_core']) * 100:+.2f} % of a core.",
        "",
        "View sizes: " + ", ".join(f"{p} {n / 1024:.1f} KiB" for p, n in out["bytes"].items()) + ".",
        "",
        f"Memory, node page open {MEMORY_S:.0f} s (RSS every 10 s): {rss[0][1]:.1f} MiB at the start, "
        f"{rss[-1][1]:.1f} MiB at the end, slope {growth:+.2f} +- {se:.2f} MiB per hour (second half alone "
        f"{late_growth:+.2f} +- {late_se:.2f}); agent CPU meanwhile "
        f"{out['memory_core'] * 100:.2f} % of a core.",
        "",
        f"History ring, a full 15-minute window at {RING_PODS} pods x 2 containers:",
        "",
        "| housekeeping interval | held (tracemalloc) | CPU per cycle (add) |",
        "|---|---|---|",
        *ring_rows,
    ])
    update_section("ui_bench", body)
    return body


def main() -> int:
    if os.geteuid() != 0:
        print("ui_bench: needs root (cgroups for the pods)")
        return 1
    print(write(run()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
