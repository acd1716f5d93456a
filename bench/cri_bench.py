"""CRI benchmark: pod start latency on containerd next to the process runtime, and the stats
endpoints' scrape latency with 30 containerd pods. Writes its section of bench/results.md.

Needs root, containerd, runc, umoci, busybox-static and gcc (`make deb`). It starts a private
containerd of its own (tests/cri/containerd.py: its own root, state and socket under /tmp/kcri-*,
never the system's /run/containerd/containerd.sock), imports the locally built images
(tests/cri/images.py: localhost/busybox:latest, localhost/pause:3.9; no registry is ever asked) and
runs the agent against it with `--container-runtime=remote --container-runtime-endpoint unix://...`.
Every agent binds 127.0.0.1 only, has its own --cgroup-root and state in a temp dir; at the end
(also on an error, ^C or SIGTERM) every sandbox is removed through CRI and the cgroup roots with
them (tests/cri/cleanup.py), containerd is stopped by its PID, and the bench checks that no cgroup
root, containerd or shim of this run is left.

Runs, one after the other:
1. process runtime, `python -m kubeletapi` as a subprocess (as pod_bench runs it), pod_bench's
   manifest (`sleep 3600`);
2. containerd, the same agent subprocess with the remote runtime; hostNetwork busybox pods
   (localhost/busybox:latest, imagePullPolicy IfNotPresent, `sh -c 'while true; do sleep 1; done'`,
   terminationGracePeriodSeconds 2: that `sh` ignores SIGTERM, so a removal lasts the grace period).
   In both: BENCH_TRIALS single pods, each written, timed and removed (until /pods, /runningpods
   and, on containerd, ListPodSandbox are empty) before the next; then BENCH_PODS pods written at
   once. Latency = manifest renamed into --pod-manifest-path -> the pod's status.phase is Running
   in /pods, read over the secure port (TLS keep-alive, the admin client certificate), polled
   every 2 ms (single pod) or 10 ms (the burst); a pod counts as Running when the response that
   shows it has arrived. With the burst's pods running: BENCH_SCRAPES warm keep-alive requests of
   /metrics/cadvisor and /stats/summary on the read-only port (as stats_bench's warm figures; a
   request that landed on a new housekeeping generation is left out), once every container has
   been sampled twice.
3. containerd, the agent in this process on the CLI's event loop (as stats_bench's run 2),
   BENCH_PODS pods; BENCH_CYCLES rounds of: one housekeeping cycle forced (Housekeeper.collect(),
   which asks containerd for its pod and container stats), then at once one request of each
   endpoint (order alternating): the first scrape after a cycle. The cycle's wall time and its
   collecting thread's CPU (Snapshot.collect_cpu_s) are recorded too.

Goal: one pod's start p50 <= 400 ms on containerd (containerd's own RunPodSandbox + CreateContainer
+ StartContainer take 120-225 ms on these machines).
Knobs: BENCH_TRIALS (single-pod samples, default 20), BENCH_PODS (burst, default 30), BENCH_SCRAPES
(warm requests per endpoint, default 50), BENCH_CYCLES (forced cycles, default 20).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import hashlib
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests.cri: containerd, images, clean-up
import pod_bench
from benchkit import Client, LoopThread, agent_args, pct, purge, stop_pods, wait
from ports import free_ports
from results_md import update_section
from stats_bench import load, machine, wait_generations

from tests.cri import containerd, images
from tests.cri.cleanup import purge_cri, remove_cgroup_root

TRIALS = int(os.environ.get("BENCH_TRIALS", "20"))
PODS = int(os.environ.get("BENCH_PODS", "30"))
SCRAPES = int(os.environ.get("BENCH_SCRAPES", "50"))
CYCLES = int(os.environ.get("BENCH_CYCLES", "20"))
GOAL_P50_MS = 400.0
SECTION = "CRI (containerd)"
SUMMARY, CADVISOR, RESOURCE = "/stats/summary", "/metrics/cadvisor", "/metrics/resource"
SCRAPED = (CADVISOR, SUMMARY)
SHIM_SOCKETS = Path("/run/containerd/s")
NODE = "benchnode"  # agent_args' --hostname-override: static pods are named <name>-benchnode
BUSYBOX = "localhost/busybox:latest"
# `sh` is PID 1 of its container's own PID namespace and has no SIGTERM handler, so the kernel drops
# the SIGTERM: each removal lasts the grace period (the agent's minimum, 2 s, instead of 30 s).
GRACE_S = 2


def cri_manifest(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n"
            f"  hostNetwork: true\n  terminationGracePeriodSeconds: {GRACE_S}\n  containers:\n  - name: c\n"
            f"    image: {BUSYBOX}\n"
            "    imagePullPolicy: IfNotPresent\n    command: [sh, -c, 'while true; do sleep 1; done']\n")


# --- clients -----------------------------------------------------------------------------------
class SecureClient:
    """Sequential keep-alive requests to the secure port over TLS with the admin client
    certificate (reconnects once when the server closed an idle connection)."""

    def __init__(self, port: int, certs: Path) -> None:
        self.port = port
        self.tls = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        self.tls.load_cert_chain(certs / "admin.crt", certs / "admin.key")
        self.conn = self._connect()

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls, timeout=30)

    def get(self, path: str) -> bytes:
        for attempt in (0, 1):
            try:
                self.conn.request("GET", path)
                response = self.conn.getresponse()
                body = response.read()
            except (ConnectionError, http.client.HTTPException):
                self.conn.close()
                self.conn = self._connect()
                if attempt:
                    raise
                continue
            if response.status != 200:
                raise RuntimeError(f"GET {path}: {response.status} {body[:300]!r}")
            return body
        raise AssertionError("unreachable")

    def items(self, path: str = "/pods") -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(self.get(path))["items"] or []
        return items

    def close(self) -> None:
        self.conn.close()


def running(items: list[dict[str, Any]]) -> set[str]:
    """Names of the pods whose phase is Running."""
    return {p["metadata"]["name"] for p in items if p.get("status", {}).get("phase") == "Running"}


class SandboxWatch:
    """ListPodSandbox on the private containerd, from the bench's own event loop (one channel)."""

    def __init__(self, endpoint: str) -> None:
        from kubeletapi.runtime.cri import CRIRuntime  # noqa: PLC0415

        async def make() -> CRIRuntime:  # its gRPC channel belongs to this loop
            return CRIRuntime(endpoint)

        self.loop = asyncio.new_event_loop()
        self.runtime = self.loop.run_until_complete(make())

    def count(self) -> int:
        return len(self.loop.run_until_complete(self.runtime.list_pod_sandboxes()))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(self.runtime.close())
        self.loop.close()


# --- the agent and what it left ------------------------------------------------------------------
@dataclass
class Trash:
    """Everything this run made that must not outlive it."""

    agent_args: list[list[str]] = field(default_factory=list)  # each agent's flags (its --cgroup-root)
    work_dirs: list[Path] = field(default_factory=list)  # the private containerd's (in its processes' argv)
    shim_sockets: list[Path] = field(default_factory=list)  # of shims killed at the end


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


class Agent:
    """`python -m kubeletapi` as a subprocess (as pod_bench runs it), or in this process on the
    CLI's event loop (as stats_bench's run 2); state in a temp dir, loopback ports only."""

    def __init__(self, label: str, trash: Trash, endpoint: str | None, in_process: bool = False) -> None:
        self.label, self.endpoint = label, endpoint
        self.base = Path(tempfile.mkdtemp(prefix=f"cri-bench-{label}-"))
        self.manifests = self.base / "manifests"
        self.manifests.mkdir()
        self.ports = free_ports(3)
        remote = ("--container-runtime", "remote", "--container-runtime-endpoint", endpoint) if endpoint else ()
        self.args = agent_args(self.base, "10s", self.ports, *remote)
        trash.agent_args.append(self.args)
        self.proc: subprocess.Popen[bytes] | None = None
        self.kubelet: Any = None
        self.loop: LoopThread | None = None
        self.client: SecureClient | None = None
        self.sandboxes: SandboxWatch | None = None
        try:
            if in_process:
                self._start_in_process()
            else:
                self._start_subprocess()
            self.client = SecureClient(self.ports[0], self.base / "certs")
            self.sandboxes = SandboxWatch(endpoint) if endpoint else None
        except BaseException:
            self.close()
            raise

    def _start_subprocess(self) -> None:
        with (self.base / "agent.log").open("wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "kubeletapi", *self.args], stdout=log, stderr=log)
        proc = self.proc
        wait(lambda: _healthy(self.ports[2]) or proc.poll() is not None, 30, 0.05, f"{self.label} agent healthy")
        if proc.poll() is not None:
            raise RuntimeError(f"{self.label} agent exited {proc.returncode}:\n{self.log_tail()}")

    def _start_in_process(self) -> None:
        from kubeletapi.cli import configuration  # noqa: PLC0415
        from kubeletapi.kubelet import Kubelet  # noqa: PLC0415

        self.kubelet = Kubelet(*configuration(self.args))
        self.loop = LoopThread()
        self.loop.run(self.kubelet.start())
        gc.freeze()  # as the CLI does once the agent has started

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else os.getpid()

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.base / "agent.log").read_text(errors="replace").splitlines()[-lines:])
        return ""

    def write(self, name: str, text: str) -> Path:
        """The manifest under a hidden name; renaming it into place is 'written' (atomic)."""
        tmp = self.manifests / f".{name}.tmp"
        tmp.write_text(text)
        return tmp

    def manifest(self, name: str) -> str:
        return cri_manifest(name) if self.endpoint else pod_bench.manifest(name)

    def empty(self) -> bool:
        """No pod in /pods, no running pod in /runningpods, and (containerd) no sandbox left."""
        assert self.client is not None
        if self.client.items("/pods") or self.client.items("/runningpods/"):
            return False
        return self.sandboxes is None or self.sandboxes.count() == 0

    def close(self) -> None:
        """Pods removed through the agent, the agent stopped, then whatever it left purged."""
        if self.client is not None:
            self.client.close()
        with contextlib.suppress(Exception):
            stop_pods(self.manifests, self.ports[1])
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.loop is not None:
            with contextlib.suppress(Exception):
                self.loop.run(self.kubelet.stop())
            self.loop.close()
        if self.sandboxes is not None:
            self.sandboxes.close()
        if self.endpoint:
            purge_cri(self.endpoint, self.args)
        else:
            purge(self.args)
        shutil.rmtree(self.base, ignore_errors=True)


# --- pod start latency -------------------------------------------------------------------------
def single_pod_latency(agent: Agent) -> list[float]:
    """TRIALS pods one at a time: ms from the rename to phase Running; each removed before the next."""
    assert agent.client is not None
    client = agent.client
    out = []
    for i in range(TRIALS):
        name = f"one{i:02d}"
        tmp = agent.write(name, agent.manifest(name))
        target = agent.manifests / f"{name}.yaml"
        start = time.perf_counter()
        tmp.rename(target)
        pod = f"{name}-{NODE}"
        wait(lambda: pod in running(client.items()), 60, 0.002, f"{name} Running")  # noqa: B023
        out.append((time.perf_counter() - start) * 1000)
        target.unlink()
        wait(agent.empty, 60, 0.01, f"{name} removed")
    return out


@dataclass
class Burst:
    per_pod_ms: list[float]
    all_running_s: float
    agent_cpu_s: float = 0.0  # CPU the agent used from the write until the last pod was Running
    runtime_cpu_s: float = 0.0  # the same for the containerd daemon (not its shims, nor runc)


def cpu_s(proc: psutil.Process | None) -> float:
    if proc is None:
        return 0.0
    times = proc.cpu_times()
    return times.user + times.system


def burst(agent: Agent, runtime: psutil.Process | None = None) -> Burst:
    """PODS manifests renamed into place at once; each pod's ms from that common time to Running."""
    assert agent.client is not None
    names = [f"p{i:03d}" for i in range(PODS)]
    tmps = [agent.write(n, agent.manifest(n)) for n in names]
    proc = psutil.Process(agent.pid)
    agent0, runtime0 = cpu_s(proc), cpu_s(runtime)
    start = time.perf_counter()
    for name, tmp in zip(names, tmps, strict=True):
        tmp.rename(agent.manifests / f"{name}.yaml")
    seen: dict[str, float] = {}
    while len(seen) < PODS:
        items = agent.client.items()
        now = time.perf_counter()
        for name in running(items):
            seen.setdefault(name, now)
        if now - start > 300:
            raise TimeoutError(f"benchmark: {len(seen)} of {PODS} pods Running after 300 s")
        time.sleep(0.01)
    return Burst([(t - start) * 1000 for t in seen.values()], max(seen.values()) - start,
                 cpu_s(proc) - agent0, cpu_s(runtime) - runtime0)


# --- scrapes ------------------------------------------------------------------------------------
@dataclass
class Timing:
    ms: list[float] = field(default_factory=list)
    size: int = 0
    excluded: int = 0  # warm: requests that landed on a new housekeeping generation

    def p(self, q: float) -> float:
        return pct(self.ms, q) if self.ms else float("nan")


def sampled_containers(client: Client) -> int:
    return client.get(RESOURCE)[1].count(b"\ncontainer_memory_working_set_bytes{")


def wait_sampled_twice(agent: Agent) -> None:
    """Every container in the housekeeping Snapshot, then two more generations (rates exist)."""
    client = Client(agent.ports[1])
    try:
        wait(lambda: sampled_containers(client) >= PODS, 60, 0.25, "every container sampled")
        wait_generations(client, 2)
    finally:
        client.close()


def warm_scrapes(agent: Agent) -> dict[str, Timing]:
    """SCRAPES sequential keep-alive requests per endpoint on the read-only port (after one to open it)."""
    out = {}
    for path in SCRAPED:
        timing = Timing()
        client = Client(agent.ports[1])
        try:
            _, previous, _ = client.get(path)
            for _ in range(SCRAPES):
                ms, body, _ = client.get(path)
                if body != previous:
                    timing.excluded += 1
                else:
                    timing.ms.append(ms)
                    timing.size = len(body)
                previous = body
        finally:
            client.close()
        out[path] = timing
    return out


@dataclass
class Forced:
    first: dict[str, Timing] = field(default_factory=dict)
    cycle_wall_ms: list[float] = field(default_factory=list)
    collect_cpu_ms: list[float] = field(default_factory=list)
    discarded: int = 0  # rounds a periodic cycle landed in


def forced_cycles(agent: Agent) -> Forced:
    """CYCLES forced housekeeping cycles, each followed at once by one request of each endpoint."""
    assert agent.loop is not None
    housekeeper = agent.kubelet.stats.housekeeper
    out = Forced()
    client = Client(agent.ports[1])
    try:
        for path in SCRAPED:  # asked for once: from now on every cycle renders these bodies ahead
            client.get(path)
        for i in range(CYCLES):
            start = time.perf_counter()
            snap = agent.loop.run(housekeeper.collect())
            wall = (time.perf_counter() - start) * 1000
            if snap is None:
                raise RuntimeError("a forced housekeeping cycle failed (see the agent's log)")
            order = SCRAPED if i % 2 == 0 else SCRAPED[::-1]
            results = {path: client.get(path) for path in order}
            if housekeeper.latest().generation != snap.generation:
                out.discarded += 1
                continue
            out.cycle_wall_ms.append(wall)
            out.collect_cpu_ms.append(snap.collect_cpu_s * 1000)
            for path, (ms, body, _) in results.items():
                timing = out.first.setdefault(path, Timing())
                timing.ms.append(ms)
                timing.size = len(body)
    finally:
        client.close()
    return out


# --- runs ------------------------------------------------------------------------------------------
@dataclass
class RuntimeResult:
    single_ms: list[float]
    burst: Burst
    warm: dict[str, Timing]
    agent_rss_mib: float


def latency_run(label: str, trash: Trash, endpoint: str | None, runtime: psutil.Process | None) -> RuntimeResult:
    agent = Agent(label, trash, endpoint)
    try:
        single = single_pod_latency(agent)
        many = burst(agent, runtime)
        wait_sampled_twice(agent)
        warm = warm_scrapes(agent)
        rss = psutil.Process(agent.pid).memory_info().rss / 2**20
    except BaseException:
        print(f"--- {label} agent log (tail) ---\n{agent.log_tail()}", file=sys.stderr)
        raise
    finally:
        agent.close()
    return RuntimeResult(single, many, warm, rss)


def forced_run(trash: Trash, endpoint: str) -> Forced:
    agent = Agent("inproc", trash, endpoint, in_process=True)
    try:
        burst(agent)
        wait_sampled_twice(agent)
        return forced_cycles(agent)
    finally:
        agent.close()


# --- clean-up checks -------------------------------------------------------------------------------
def leftovers(trash: Trash) -> list[str]:
    """Cgroup roots of this run in any hierarchy, and processes naming this run's containerd work dir."""
    roots = [args[args.index("--cgroup-root") + 1].strip("/") for args in trash.agent_args]
    found = [str(mount / root) for mount in Path("/sys/fs/cgroup").iterdir() for root in roots
             if (mount / root).is_dir()]
    found += [f"pid {pid}: {' '.join(argv)}" for pid, argv in own_processes(trash)]
    found += [str(sock) for sock in trash.shim_sockets if sock.exists()]
    return found


def own_processes(trash: Trash) -> Iterator[tuple[int, list[str]]]:
    """containerd and shims whose command line names one of this run's work dirs."""
    marks = [str(d) for d in trash.work_dirs]
    for proc in psutil.process_iter(["pid", "cmdline"]):
        argv = proc.info["cmdline"] or []
        if proc.info["pid"] != os.getpid() and any(m in " ".join(argv) for m in marks):
            yield proc.info["pid"], argv


def containerd_process(trash: Trash) -> psutil.Process | None:
    """The private containerd daemon (its argv names the run's work dir)."""
    for pid, argv in own_processes(trash):
        if argv and Path(argv[0]).name == "containerd":
            return psutil.Process(pid)
    return None


def kill_own_leftovers(trash: Trash) -> None:
    """Last resort after containerd's stop (a no-op when every agent's clean-up worked): SIGKILL
    what still names this run's work dir and remove the sockets of the shims killed (containerd 1.6
    puts a shim's socket in /run/containerd/s/sha256(<address>/<namespace>/<id>) whatever its
    config says; a shim that dies by SIGKILL leaves it behind); then kill whatever still runs in
    the run's cgroup roots (a shim's containers outlive it) and remove those roots."""
    killed = []
    for pid, argv in list(own_processes(trash)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        flags = dict(zip(argv[1::2], argv[2::2], strict=False)) if argv and "shim" in Path(argv[0]).name else {}
        if {"-address", "-namespace", "-id"} <= flags.keys():
            key = f"{flags['-address']}/{flags['-namespace']}/{flags['-id']}"
            trash.shim_sockets.append(SHIM_SOCKETS / hashlib.sha256(key.encode()).hexdigest())
    with contextlib.suppress(TimeoutError):
        wait(lambda: not any(psutil.pid_exists(p) for p in killed), 10, 0.05, "killed processes to exit")
    for sock in trash.shim_sockets:
        with contextlib.suppress(OSError):
            sock.unlink()
    for args in trash.agent_args:  # a killed shim's containers outlive it: kill what is in our cgroups
        purge(args)
        remove_cgroup_root(args[args.index("--cgroup-root") + 1])


# --- results ---------------------------------------------------------------------------------------
def p50_p99(values: list[float]) -> str:
    return f"{pct(values, 50):.0f} / {pct(values, 99):.0f} ms" if values else "n/a"


def fmt(t: Timing | None, digits: int = 2) -> str:
    return f"{t.p(50):.{digits}f} / {t.p(99):.{digits}f}" if t is not None and t.ms else "n/a"


def write_results(cri: RuntimeResult, proc: RuntimeResult, forced: Forced, loads: list[str],
                  versions: str) -> None:
    cri_p50 = pct(cri.single_ms, 50)
    lines = [
        f"## {SECTION}, pod start and scrapes, {dt.date.today().isoformat()}",
        "",
        f"Machine: {machine()}. {versions}. Load average (1/5/15 min) before: {loads[0]}; after: {loads[1]}. "
        "`python bench/cri_bench.py` (as root) reproduces it.",
        "",
        "Method. A private containerd (tests/cri/containerd.py: own root, state and socket, overlayfs, runc, "
        "images imported from local tars, no registry). The agent is `python -m kubeletapi` as a subprocess "
        "(as pod_bench runs it), loopback only, --housekeeping-interval 10s; on containerd with "
        "`--container-runtime=remote --container-runtime-endpoint unix://...`. containerd pods: hostNetwork, "
        f"{BUSYBOX}, imagePullPolicy IfNotPresent, `sh -c 'while true; do sleep 1; done'`, "
        f"terminationGracePeriodSeconds {GRACE_S} (that sh ignores SIGTERM); process-runtime pods: "
        "pod_bench's manifest (`sleep 3600`). Latency = manifest renamed into --pod-manifest-path -> "
        "status.phase Running in /pods over the secure port (TLS keep-alive, admin client certificate), "
        "polled every 2 ms for one pod and every 10 ms for the burst, counted when the response showing it "
        f"arrived. One pod: {TRIALS} samples, each pod removed (/pods, /runningpods and ListPodSandbox empty) "
        f"before the next. Burst: {PODS} manifests renamed at once, each pod's latency from that common time. "
        f"Warm scrapes: with the burst's {PODS} pods running and sampled twice, {SCRAPES} sequential keep-alive "
        "requests per endpoint on the read-only port (a request that landed on a new generation is left out). "
        f"After a forced cycle: the agent in-process (CLI event loop, gc.freeze()), {PODS} containerd pods, "
        f"{CYCLES} rounds of Housekeeper.collect() (which asks containerd for its pod and container stats) "
        "followed at once by one request per endpoint (order alternating); the bodies are rendered ahead in "
        "the cycle, as for a steady scraper.",
        "",
        "| pod start | containerd | process runtime | goal |",
        "|---|---:|---:|---|",
        f"| one pod: p50 / p99 ({TRIALS} samples) | {p50_p99(cri.single_ms)} | {p50_p99(proc.single_ms)} | "
        f"containerd p50 <= {GOAL_P50_MS:.0f} ms: {'yes' if cri_p50 <= GOAL_P50_MS else '**no**'} |",
        f"| one pod: min / max | {min(cri.single_ms):.0f} / {max(cri.single_ms):.0f} ms | "
        f"{min(proc.single_ms):.0f} / {max(proc.single_ms):.0f} ms | |",
        f"| {PODS} pods at once: per-pod p50 / p99 | {p50_p99(cri.burst.per_pod_ms)} | "
        f"{p50_p99(proc.burst.per_pod_ms)} | |",
        f"| {PODS} pods at once: first / last Running after | {min(cri.burst.per_pod_ms) / 1000:.2f} / "
        f"{cri.burst.all_running_s:.2f} s | {min(proc.burst.per_pod_ms) / 1000:.2f} / "
        f"{proc.burst.all_running_s:.2f} s | |",
        f"| {PODS} pods at once: CPU until all Running, agent / containerd daemon | {cri.burst.agent_cpu_s:.2f} / "
        f"{cri.burst.runtime_cpu_s:.2f} s | {proc.burst.agent_cpu_s:.2f} s / - | |",
        f"| agent RSS with {PODS} pods | {cri.agent_rss_mib:.0f} MiB | {proc.agent_rss_mib:.0f} MiB | |",
        "",
        f"| scrape, {PODS} pods (read-only port) | body (containerd) | containerd warm p50 / p99 ms | "
        "containerd first scrape after a forced cycle p50 / p99 ms (n) | process runtime warm p50 / p99 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for path in SCRAPED:
        warm, first, other = cri.warm.get(path), forced.first.get(path), proc.warm.get(path)
        left = f" ({warm.excluded} left out)" if warm is not None and warm.excluded else ""
        size = f"{warm.size / 1024:,.1f} KiB" if warm is not None and warm.size else "n/a"
        n = len(first.ms) if first is not None else 0
        lines.append(f"| {path} | {size} | {fmt(warm)}{left} | {fmt(first)} ({n}) | {fmt(other)} |")
    lines += [
        "",
        "| housekeeping with containerd | value |",
        "|---|---:|",
        f"| forced cycle wall time, p50 / p99 ({len(forced.cycle_wall_ms)} cycles; CRI stats calls, collection "
        f"and render-ahead) | {pct(forced.cycle_wall_ms, 50):.1f} / {pct(forced.cycle_wall_ms, 99):.1f} ms |",
        f"| collecting thread CPU per cycle (collect_cpu_s), p50 / p99 | {pct(forced.collect_cpu_ms, 50):.1f} / "
        f"{pct(forced.collect_cpu_ms, 99):.1f} ms |",
        f"| rounds discarded (a periodic cycle landed in them) | {forced.discarded} |",
        "",
    ]
    section = "\n".join(lines)
    print(section)
    update_section(SECTION, section)


def versions() -> str:
    def first_line(*argv: str) -> str:
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        return (result.stdout or result.stderr).splitlines()[0] if (result.stdout or result.stderr) else "?"

    return f"{first_line('containerd', '--version')}; {first_line('runc', '--version')}"


# --- main ------------------------------------------------------------------------------------------
def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through every finally: the clean-up runs


def run(trash: Trash) -> tuple[RuntimeResult, RuntimeResult, Forced]:
    tars = images.build_all()
    daemon = containerd.PrivateContainerd()
    trash.work_dirs.append(daemon.work)
    try:
        daemon.start()
        daemon.import_images(tars)
        print("process runtime: pod start ...", file=sys.stderr)
        proc = latency_run("process", trash, None, None)
        print("containerd: pod start and warm scrapes ...", file=sys.stderr)
        cri = latency_run("containerd", trash, daemon.endpoint, containerd_process(trash))
        print("containerd: forced housekeeping cycles (agent in-process) ...", file=sys.stderr)
        forced = forced_run(trash, daemon.endpoint)
    except BaseException:
        print(f"--- containerd log (tail) ---\n{daemon.log_tail()}", file=sys.stderr)
        raise
    finally:
        if daemon.socket.exists():
            with contextlib.suppress(Exception):
                purge_cri(daemon.endpoint)  # anything an agent's own clean-up missed
        daemon.stop()
        kill_own_leftovers(trash)
    return cri, proc, forced


def preflight(name: str) -> bool:
    """What a benchmark on private containerd instances needs (root, containerd and the image
    tools); on success SIGTERM and ^C unwind through every finally, so its clean-up runs."""
    if os.geteuid() != 0:
        print(f"{name} needs root (a private containerd, cgroups)", file=sys.stderr)
        return False
    missing = containerd.missing_tools() + images.missing_tools()
    if missing:
        print(f"{name} needs {', '.join(missing)} (`make deb` installs them)", file=sys.stderr)
        return False
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # ^C even when started in the background
    return True


def main() -> int:
    if not preflight("cri_bench"):
        return 1
    trash = Trash()
    loads = [load()]
    try:
        cri, proc, forced = run(trash)
    finally:
        left = leftovers(trash)
        if left:
            print("cri_bench: LEFT BEHIND:\n  " + "\n  ".join(left), file=sys.stderr)
    loads.append(load())
    write_results(cri, proc, forced, loads, versions())
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
