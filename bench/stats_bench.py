"""Stats endpoints benchmark (issue 4): /stats/summary, /metrics/cadvisor and /metrics/resource
with 110 pods x 2 containers (`sleep 3600`), the CPU time of one housekeeping cycle, the agent's
RSS, and prometheus-node-exporter's /metrics as a peer. Writes its section of bench/results.md.

Two agents, one after the other, each as root with the process runtime (real cgroups under a
private --cgroup-root, state in a temp dir, loopback ports):

1. "external": `python -m kubeletapi` as a subprocess, --housekeeping-interval 10s (the default).
   Warm latency: sequential keep-alive requests over the read-only port, all answered from the
   per-generation render cache (a request whose body differs from the one before it landed on a
   new generation, i.e. was a render, and is left out). Body sizes, series counts, RSS after the
   warm-up and after the scrapes, the agent's CPU over idle housekeeping periods (no requests),
   and node_exporter measured the same way while the 220 containers run.
2. "in-process": the agent in this process (Kubelet on its own event-loop thread, as the tests
   run it, gc.freeze() after start as the CLI does), --housekeeping-interval 1s. The bench sees
   each new Snapshot generation in-process (no request needed to notice it) and at once requests
   every endpoint once over the read-only port: the first scrape after each cycle (bodies asked
   for recently are rendered ahead in the housekeeping thread); plain on even generations, gzip on odd.
   Snapshot.collect_cpu_s (the collecting thread's CPU time) of every cycle, and each renderer
   timed on the same Snapshot directly (the bench thread's CPU time).

Goals: /metrics/cadvisor p50 <= 25 ms and cost per 1,000 series <= node_exporter's;
/stats/summary p50 <= 15 ms; housekeeping <= 100 ms CPU per cycle at 110 pods.
Knobs: BENCH_TRIALS (warm requests per endpoint and encoding, default 200), BENCH_COLD
(generations sampled cold at 1 s, default 40), BENCH_CYCLES (idle 10 s periods measured
externally, default 10), BENCH_PODS (default 110), BENCH_PROFILE=1 (print cProfile tables of one
housekeeping cycle and one render of each endpoint).
"""

from __future__ import annotations

import contextlib
import cProfile
import datetime as dt
import gc
import gzip
import http.client
import os
import platform
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import Client, LoopThread, agent_args, cores, cpu_s, next_cycles, pct, purge, stop_pods, wait
from ports import free_ports
from results_md import update_section

TRIALS = int(os.environ.get("BENCH_TRIALS", "200"))
COLD = int(os.environ.get("BENCH_COLD", "40"))
CYCLES = int(os.environ.get("BENCH_CYCLES", "10"))
PODS = int(os.environ.get("BENCH_PODS", "110"))
PROFILE = os.environ.get("BENCH_PROFILE", "") not in ("", "0")
INTERVAL_S = 10.0
SUMMARY, CADVISOR, RESOURCE = "/stats/summary", "/metrics/cadvisor", "/metrics/resource"
ENDPOINTS = (SUMMARY, CADVISOR, RESOURCE)
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
SECTION = "Stats endpoints (issue 4)"


# --- small helpers ------------------------------------------------------------------------------
def series_count(body: bytes, encoding: str) -> int:
    text = gzip.decompress(body) if encoding == "gzip" else body
    return sum(1 for line in text.splitlines() if line.strip() and not line.startswith(b"#"))


@dataclass
class Timing:
    """Latencies of one endpoint and encoding, with the last body's size and series count."""

    ms: list[float] = field(default_factory=list)
    size: int = 0
    encoding: str = ""
    series: int = 0
    excluded: int = 0  # warm runs: requests that landed on a new generation (a render)
    cpu_ms_per_request: float = 0.0  # the serving process's CPU per request (warm runs)

    def add(self, ms: float, body: bytes, encoding: str) -> None:
        self.ms.append(ms)
        self.size, self.encoding = len(body), encoding

    def p(self, q: float) -> float:
        return pct(self.ms, q) if self.ms else float("nan")


def repeat(port: int, path: str, gzipped: bool, proc: psutil.Process, cached: bool) -> Timing:
    """TRIALS sequential requests on a new keep-alive connection, after one to open it (and fill the cache)."""
    timing = Timing()
    client = Client(port)
    try:
        _, previous, encoding = client.get(path, gzipped)
        timing.series = series_count(previous, encoding)
        cpu0 = cpu_s(proc)
        for _ in range(TRIALS):
            ms, body, encoding = client.get(path, gzipped)
            if cached and body != previous:
                timing.excluded += 1
            else:
                timing.add(ms, body, encoding)
            previous = body
        timing.cpu_ms_per_request = (cpu_s(proc) - cpu0) * 1000 / TRIALS
    finally:
        client.close()
    return timing


# --- pods -----------------------------------------------------------------------------------------
def manifest(name: str) -> str:
    container = "  - name: {0}\n    image: busybox:1.36\n    command: [sleep, '3600']\n"
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  containers:\n"
            + container.format("app") + container.format("sidecar"))


def running_containers(client: Client) -> int:
    """Containers running in /pods."""
    return sum(sum(1 for s in pod["status"].get("containerStatuses") or [] if "running" in s["state"])
               for pod in client.json("/pods")["items"])


def start_pods(manifests: Path, client: Client, make: Callable[[str], str] = manifest) -> float:
    """Write PODS manifests made by `make` (two containers each; atomic renames); seconds until
    every container is running in /pods."""
    start = time.perf_counter()
    for i in range(PODS):
        tmp = manifests / f".p{i:03d}.tmp"
        tmp.write_text(make(f"p{i:03d}"))
        tmp.rename(manifests / f"p{i:03d}.yaml")
    wait(lambda: running_containers(client) == 2 * PODS, 300, 0.2, f"{PODS} pods running")
    return time.perf_counter() - start


# --- run 1: the agent as a subprocess, 10 s housekeeping ----------------------------------------
@dataclass
class External:
    pods_running_s: float = 0.0
    rss_warm_mib: float = 0.0
    rss_scraped_mib: float = 0.0
    idle_cpu_per_period_ms: float = 0.0
    idle_core: float = 0.0
    warm: dict[tuple[str, bool], Timing] = field(default_factory=dict)
    peer: dict[bool, Timing] = field(default_factory=dict)
    peer_version: str = ""


def wait_generations(client: Client, count: int) -> None:
    """Poll /metrics/resource (a cache hit unless the generation changed) until `count` new generations."""
    _, previous, _ = client.get(RESOURCE)
    for _ in range(count):
        def changed() -> bool:
            nonlocal previous
            body = client.get(RESOURCE)[1]
            new, previous = body != previous, body
            return new

        wait(changed, 60, 0.25, "a housekeeping cycle")


def all_containers_sampled(client: Client) -> bool:
    body = client.get(RESOURCE)[1]
    return body.count(b"\ncontainer_memory_working_set_bytes{") >= 2 * PODS


def external_run() -> External:
    out = External()
    ports = free_ports(3)
    with tempfile.TemporaryDirectory(prefix="stats-bench-") as tmp:
        base = Path(tmp)
        (base / "manifests").mkdir()
        args = agent_args(base, "10s", ports)
        with (base / "agent.log").open("wb") as log:
            agent = subprocess.Popen([sys.executable, "-m", "kubeletapi", *args], stdout=log, stderr=log)
        client = Client(ports[1])
        try:
            wait(lambda: _healthy(ports[2]) or agent.poll() is not None, 30, 0.1, "agent healthy")
            if agent.poll() is not None:
                raise RuntimeError(f"agent exited: {(base / 'agent.log').read_text()[-2000:]}")
            out.pods_running_s = start_pods(base / "manifests", client)
            wait(lambda: all_containers_sampled(client), 60, 0.5, "every container in housekeeping")
            wait_generations(client, 2)  # two samples of every container: rates exist
            client.close()  # idle from here: the server would close it after 90 s anyway
            proc = psutil.Process(agent.pid)
            out.rss_warm_mib = proc.memory_info().rss / 2**20
            out.idle_core = cores(proc, CYCLES * INTERVAL_S)
            out.idle_cpu_per_period_ms = out.idle_core * INTERVAL_S * 1000
            for path in ENDPOINTS:
                for gzipped in (False, True):
                    out.warm[(path, gzipped)] = repeat(ports[1], path, gzipped, proc, cached=True)
            out.rss_scraped_mib = proc.memory_info().rss / 2**20
            out.peer, out.peer_version = peer_run(base)
        finally:
            stop_pods(base / "manifests", ports[1])
            client.close()
            agent.terminate()
            try:
                agent.wait(30)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
            purge(args)
    return out


def peer_run(base: Path) -> tuple[dict[bool, Timing], str]:
    """prometheus-node-exporter on a loopback port, measured like the warm agent (it has no cache)."""
    if not Path(NODE_EXPORTER).exists():
        print(f"{NODE_EXPORTER} is missing (apt-get install prometheus-node-exporter): no peer", file=sys.stderr)
        return {}, ""
    version = subprocess.run([NODE_EXPORTER, "--version"], capture_output=True, text=True, check=False)
    port = free_ports(1)[0]
    with (base / "node-exporter.log").open("wb") as log:
        peer = subprocess.Popen([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log)
    try:
        wait(lambda: _healthy(port, "/metrics") or peer.poll() is not None, 30, 0.1, "node_exporter")
        proc = psutil.Process(peer.pid)
        results = {gzipped: repeat(port, "/metrics", gzipped, proc, cached=False) for gzipped in (False, True)}
    finally:
        peer.terminate()
        try:
            peer.wait(10)
        except subprocess.TimeoutExpired:
            peer.kill()
            peer.wait()
    return results, (version.stdout or version.stderr).splitlines()[0] if (version.stdout or version.stderr) else ""


def _healthy(port: int, path: str = "/healthz") -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", path)
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


# --- run 2: the agent in this process, 1 s housekeeping -----------------------------------------
@dataclass
class Internal:
    collect_cpu_ms: list[float] = field(default_factory=list)
    prepare_cpu_ms: list[float] = field(default_factory=list)  # bodies rendered ahead, per cycle
    cold: dict[tuple[str, bool], Timing] = field(default_factory=dict)
    render_cpu_ms: dict[str, list[float]] = field(default_factory=dict)
    discarded: int = 0  # rounds in which a newer generation arrived before the last request
    gc_full_ms: list[float] = field(default_factory=list)  # full (gen 2) collections during the cold rounds


class GcWatch:
    """Wall time of every full (generation 2) garbage collection in this process, any thread."""

    def __init__(self, into: list[float]) -> None:
        self.into = into
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.into.append((time.perf_counter() - self._start) * 1000)


def render_all(snap: Any) -> dict[str, float]:
    """Each endpoint's bytes rendered from `snap` as the agent's cache renders them: CPU ms."""
    from kubeletapi import __version__  # noqa: PLC0415
    from kubeletapi.metrics.cadvisor import render_cadvisor  # noqa: PLC0415
    from kubeletapi.metrics.resource import render_resource  # noqa: PLC0415
    from kubeletapi.stats.rendercache import GZIP_LEVEL  # noqa: PLC0415
    from kubeletapi.stats.summary import cpu_and_memory_summary, encode, full_summary  # noqa: PLC0415

    bodies: dict[str, bytes] = {}
    renderers: dict[str, Callable[[], bytes]] = {
        SUMMARY: lambda: encode(full_summary(snap)),
        CADVISOR: lambda: render_cadvisor(snap, version=f"kubeletapi-{__version__}"),
        RESOURCE: lambda: render_resource(cpu_and_memory_summary(snap)),
        f"{CADVISOR} gzip": lambda: gzip.compress(bodies[CADVISOR], GZIP_LEVEL),
        f"{RESOURCE} gzip": lambda: gzip.compress(bodies[RESOURCE], GZIP_LEVEL),
    }
    cpu = {}
    for name, render in renderers.items():
        start = time.thread_time()
        bodies[name] = render()
        cpu[name] = (time.thread_time() - start) * 1000
    return cpu


def inprocess_run() -> Internal:
    from kubeletapi.cli import configuration  # noqa: PLC0415
    from kubeletapi.kubelet import Kubelet  # noqa: PLC0415

    out = Internal()
    ports = free_ports(3)
    with tempfile.TemporaryDirectory(prefix="stats-bench-") as tmp:
        base = Path(tmp)
        (base / "manifests").mkdir()
        args = agent_args(base, "1s", ports)
        kubelet = Kubelet(*configuration(args))
        loop = LoopThread()
        client = Client(ports[1])
        try:
            loop.run(kubelet.start())
            gc.freeze()  # as the CLI does once the agent has started
            housekeeper = kubelet.stats.housekeeper
            start_pods(base / "manifests", client)
            wait(lambda: _sampled(housekeeper.latest()) >= 2 * PODS, 60, 0.1, "every container in housekeeping")
            generation = housekeeper.latest().generation + 2
            wait(lambda: housekeeper.latest().generation >= generation, 30, 0.01, "two housekeeping cycles")
            watch = GcWatch(out.gc_full_ms)
            gc.callbacks.append(watch)
            try:
                cold_rounds(housekeeper, client, out)
            finally:
                gc.callbacks.remove(watch)
            if PROFILE:
                profile(kubelet, loop, housekeeper.latest())
        finally:
            stop_pods(base / "manifests", ports[1])
            client.close()
            with contextlib.suppress(Exception):
                loop.run(kubelet.stop())
            loop.close()
            purge(args)
    return out


def _sampled(snap: Any) -> int:
    if snap is None:
        return 0
    return sum(1 for p in snap.pods for c in p.containers if c.stats is not None)


def cold_rounds(housekeeper: Any, client: Client, out: Internal) -> None:
    """COLD generations: the first request of each endpoint right after the Snapshot swap."""
    cycles = next_cycles(lambda: housekeeper.latest().generation, COLD, "the next housekeeping cycle")
    for i, _ in enumerate(cycles):
        snap = housekeeper.latest()
        last = snap.generation
        out.collect_cpu_ms.append(snap.collect_cpu_s * 1000)
        if i:  # the first round's bodies were not asked for before, so nothing was prepared
            out.prepare_cpu_ms.append(housekeeper.last_prepare_cpu_s * 1000)
        gzipped = i % 2 == 1
        order = ENDPOINTS[i % 3:] + ENDPOINTS[:i % 3]  # no endpoint always goes first
        results = {path: client.get(path, gzipped) for path in order}
        if housekeeper.latest().generation != last:
            out.discarded += 1
            continue
        for path, (ms, body, encoding) in results.items():
            timing = out.cold.setdefault((path, gzipped), Timing())
            timing.add(ms, body, encoding)
            timing.series = series_count(body, encoding)
        for name, ms in render_all(snap).items():
            out.render_cpu_ms.setdefault(name, []).append(ms)


def profile(kubelet: Any, loop: LoopThread, snap: Any) -> None:
    """cProfile of one housekeeping cycle (run in this thread) and one render of each endpoint."""
    async def inventory() -> tuple[Any, Any]:
        return kubelet.pods.inventory.pods(), kubelet.pods.inventory.runtime_pids()

    pods, pids = loop.run(inventory())
    collector = kubelet.stats.collector
    targets: list[tuple[str, Callable[[], object]]] = [
        ("one housekeeping cycle (Collector.collect)",
         lambda: collector.collect(pods, pids, snap, snap.generation + 1)),
        ("render of every endpoint", lambda: render_all(snap)),
    ]
    for title, target in targets:
        prof = cProfile.Profile()
        prof.runcall(target)
        print(f"\n--- profile: {title}, by own time ---")
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)


# --- results -------------------------------------------------------------------------------------
def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return (f"{os.cpu_count()} cores ({cpu}), {psutil.virtual_memory().total / 2**30:.1f} GiB, Python "
            f"{platform.python_version()}, {platform.system()} {platform.release()}")


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def fmt(t: Timing | None) -> str:
    return f"{t.p(50):.2f} / {t.p(99):.2f}" if t is not None and t.ms else "n/a"


def per_k(t: Timing | None, series: int) -> float:
    return t.p(50) / series * 1000 if t is not None and t.ms and series else float("nan")


def size(t: Timing | None, gzipped: bool) -> str:
    if t is None or not t.size:
        return "n/a"
    note = " (not compressed: no gzip on this endpoint)" if gzipped and not t.encoding else ""
    return f"{t.size / 1024:,.1f} KiB{note}"


RENDER_NAMES = {(CADVISOR, False): [CADVISOR], (CADVISOR, True): [CADVISOR, f"{CADVISOR} gzip"],
                (RESOURCE, False): [RESOURCE], (RESOURCE, True): [RESOURCE, f"{RESOURCE} gzip"],
                (SUMMARY, False): [SUMMARY], (SUMMARY, True): [SUMMARY]}


def render_ms(inn: Internal, path: str, gzipped: bool) -> float:
    """CPU p50 of building the body from scratch (render, then gzip): a scrape without render-ahead."""
    return sum(pct(inn.render_cpu_ms[name], 50) for name in RENDER_NAMES[(path, gzipped)]
               if name in inn.render_cpu_ms)


def endpoint_rows(ext: External, inn: Internal) -> list[str]:
    rows = []
    for path in ENDPOINTS:
        for gzipped in (False, True):
            warm, after = ext.warm.get((path, gzipped)), inn.cold.get((path, gzipped))
            series = warm.series if warm is not None and path != SUMMARY else 0
            built = render_ms(inn, path, gzipped)
            cost = f"{per_k(warm, series):.3f} / {per_k(after, series):.3f} / {built / series * 1000:.3f}" \
                if series else ""
            excluded = f" ({warm.excluded} left out)" if warm is not None and warm.excluded else ""
            rows.append(
                f"| {path} | {'gzip' if gzipped else 'identity'} | {size(warm, gzipped)} | {series or ''} | "
                f"{fmt(warm)}{excluded} | {fmt(after)} ({len(after.ms) if after else 0}) | {built:.2f} | {cost} |"
            )
    for gzipped, t in ext.peer.items():
        rows.append(
            f"| node_exporter /metrics | {'gzip' if gzipped else 'identity'} | {size(t, gzipped)} | {t.series} | "
            f"{fmt(t)} | = warm (no cache) | = warm | {per_k(t, t.series):.3f} |"
        )
    return rows


def goal_rows(ext: External, inn: Internal) -> list[str]:
    def met(ok: bool) -> str:
        return "yes" if ok else "**no**"

    rows = []
    for path, goal in ((CADVISOR, 25.0), (SUMMARY, 15.0)):
        for gzipped in (False, True):
            if path == SUMMARY and gzipped:
                continue
            enc = "gzip" if gzipped else "identity"
            for label, timings in (("first scrape after each cycle", inn.cold), ("warm", ext.warm)):
                t = timings.get((path, gzipped))
                if t is not None and t.ms:
                    rows.append(f"| {path} p50 <= {goal:.0f} ms ({label}, {enc}) | {t.p(50):.2f} ms | "
                                f"{met(t.p(50) <= goal)} |")
            built = render_ms(inn, path, gzipped)
            rows.append(f"| {path} p50 <= {goal:.0f} ms (built on request: CPU of render{' + gzip' if gzipped else ''}"
                        f", {enc}) | {built:.2f} ms | {met(built <= goal)} |")
    for gzipped, peer in ext.peer.items():
        theirs = per_k(peer, peer.series)
        enc = "gzip" if gzipped else "identity"
        warm = ext.warm.get((CADVISOR, gzipped))
        series = warm.series if warm is not None else 0
        for label, ours in (("built on request", render_ms(inn, CADVISOR, gzipped) / series * 1000 if series else 0),
                            ("first scrape after each cycle", per_k(inn.cold.get((CADVISOR, gzipped)), series))):
            rows.append(f"| /metrics/cadvisor ms per 1,000 series <= node_exporter's ({label}, {enc}) | "
                        f"{ours:.3f} vs {theirs:.3f} | {met(ours <= theirs)} |")
    hk = inn.collect_cpu_ms
    for label, value in (("p50", pct(hk, 50)), ("max", max(hk))):
        rows.append(f"| housekeeping <= 100 ms CPU per cycle ({label} of {len(hk)} cycles, collection) | "
                    f"{value:.1f} ms | {met(value <= 100)} |")
    return rows


def gc_summary(pauses: list[float]) -> str:
    return f"{len(pauses)}, {pct(pauses, 50):.1f} / {max(pauses):.1f} ms" if pauses else "0"


def render_rows(inn: Internal) -> list[str]:
    rows = []
    for name, values in inn.render_cpu_ms.items():
        rows.append(f"| {name} | {pct(values, 50):.2f} | {max(values):.2f} |")
    return rows


def write_results(ext: External, inn: Internal, loads: Sequence[str]) -> None:
    hk = inn.collect_cpu_ms
    cad = ext.warm[(CADVISOR, False)]
    lines = [
        f"## {SECTION}, {PODS} pods x 2 containers, {dt.date.today().isoformat()}",
        "",
        f"Machine: {machine()}. Load average (1/5/15 min) before: {loads[0]}; between the runs: {loads[1]}; "
        f"after: {loads[2]}. `python bench/stats_bench.py` (as root) reproduces it.",
        "",
        "Method. Run 1 (external): `python -m kubeletapi` as a subprocess, process runtime, "
        f"--housekeeping-interval 10s, {PODS} static pods of 2 `sleep 3600` containers; one keep-alive "
        "http.client connection to the read-only port, sequential requests; latency = request sent to last "
        f"body byte. Warm = {TRIALS} requests per endpoint and encoding served from the per-generation "
        "cache (a request that landed on a new generation is left out and counted). node_exporter is "
        f"measured the same way in the same run ({TRIALS} requests per encoding, default collectors). "
        "Run 2 (in-process): the agent on an event-loop thread (uvloop, as the CLI runs) of the bench process, "
        f"gc.freeze() after start as the CLI does, --housekeeping-interval 1s; for each of {COLD} generations, "
        "seen in-process as soon as the Snapshot is published, one request per endpoint at once over the "
        "read-only port (identity on even generations, gzip on odd, endpoint order rotated): the first scrape "
        "after each cycle, what a steady scraper gets. Bodies asked for in the last 5 minutes are rendered "
        "ahead in the housekeeping thread before the Snapshot is published, so that scrape normally finds its "
        "body ready; `built on request` is the CPU of rendering (and gzipping) one body from scratch, which a "
        "scrape pays only when nobody asked for that body recently, and is the fair comparison with "
        "node_exporter, which computes on every scrape. Housekeeping CPU = Snapshot.collect_cpu_s (thread CPU "
        "time of the collecting worker) of every cycle in run 2, and the render-ahead CPU separately. "
        "Render CPU = each renderer run again on the same Snapshot in the bench thread. p99 and max figures "
        "include any full (gen 2) garbage collection that landed in them (counted below).",
        "",
        "| endpoint | encoding | body | series | warm p50 / p99 ms | first scrape after each cycle p50 / p99 ms (n) | "
        "built on request, CPU ms | ms per 1,000 series: warm / after a cycle / built |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *endpoint_rows(ext, inn),
        "",
        "| render from one Snapshot (in-process) | CPU p50 ms | CPU max ms |",
        "|---|---:|---:|",
        *render_rows(inn),
        "",
        "| measure | value |",
        "|---|---:|",
        f"| housekeeping CPU per cycle, collect_cpu_s p50 / p99 / max ({len(hk)} cycles, 1 s interval) | "
        f"{pct(hk, 50):.1f} / {pct(hk, 99):.1f} / {max(hk):.1f} ms |",
        f"| render-ahead CPU per cycle (the three endpoints, plain and gzip), p50 / max ({len(inn.prepare_cpu_ms)} "
        f"cycles) | {pct(inn.prepare_cpu_ms, 50):.1f} / {max(inn.prepare_cpu_ms, default=0):.1f} ms |",
        f"| agent CPU per idle 10 s period, no requests (external, {CYCLES} periods; includes the sync "
        f"loop and everything else the idle agent does) | {ext.idle_cpu_per_period_ms:.0f} ms "
        f"({ext.idle_core:.4f} core) |",
        f"| agent CPU per warm request, /metrics/cadvisor identity / gzip | {cad.cpu_ms_per_request:.2f} / "
        f"{ext.warm[(CADVISOR, True)].cpu_ms_per_request:.2f} ms |",
        *(f"| node_exporter CPU per scrape, {'gzip' if g else 'identity'} | {t.cpu_ms_per_request:.2f} ms |"
          for g, t in ext.peer.items()),
        f"| agent RSS with {PODS} pods, after warm-up / after the scrapes | {ext.rss_warm_mib:.0f} / "
        f"{ext.rss_scraped_mib:.0f} MiB |",
        f"| {PODS} pods written at once: every container running after | {ext.pods_running_s:.1f} s |",
        f"| full (gen 2) GC pauses in the in-process agent during the run-2 rounds: count, p50 / max | "
        f"{gc_summary(inn.gc_full_ms)} |",
        "",
        f"Peer: {ext.peer_version or 'node_exporter not installed'}. Rounds discarded (a newer generation "
        f"arrived mid-round): {inn.discarded}.",
        "",
        "| goal | measured | met? |",
        "|---|---:|---|",
        *goal_rows(ext, inn),
        "",
    ]
    section = "\n".join(lines)
    print(section)
    update_section(SECTION, section)


def main() -> int:
    if os.geteuid() != 0:
        print("stats_bench needs root (the process runtime's cgroups)", file=sys.stderr)
        return 1
    loads = [load()]
    ext = external_run()
    loads.append(load())
    inn = inprocess_run()
    loads.append(load())
    write_results(ext, inn, loads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
