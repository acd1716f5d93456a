"""InfluxDB sink benchmark (issue 7): what writing every housekeeping cycle to InfluxDB costs with
110 pods x 2 containers (`sleep 3600`) and one emptyDir each, and that the API does not feel it.
Writes its section of bench/results.md.

One set of pods serves every agent: the first agent starts them, and since the process runtime's
containers outlive the agent, each following agent (same --root-dir, --cgroup-root and manifests)
re-adopts them. A real influxd 1.x (tests/ecosystem/influxd.py) on loopback receives the points.

1. Build cost (in-process): the agent on an event-loop thread of this process (as stats_bench's
   in-process run), --housekeeping-interval 1s, volume usage measured once the pods run. For
   BUILD_CYCLES consecutive cycles, the published Snapshot is turned into what the sink buffers, in
   this thread, by the sink's own code: snapshot_points, encode_all, then InfluxSink._chunks (a sink
   whose writer is never called, its encoder handing over the lines just encoded) cuts the lines
   into chunks of at most BATCH points and gzips each at level 1; thread CPU time of each step, and
   of the worker's whole call (_chunks with the real encoder) as a check. full_summary alone is
   timed too (snapshot_points builds one; the render-ahead of /stats/summary builds another). Chunk
   bytes per cycle and per point as buffered (gzip member + Chunk object + deque slot). The write
   path: a full batch as PointBuffer.take(BATCH) hands it out of the measured cycles' chunks, joined
   into one multi-member gzip body as the sink's _write_batch does (b"".join of the chunk bodies,
   the only CPU left between buffer and HTTP); its body checked to decompress to its points' lines.
2. Idle cost (external): `python -m kubeletapi` as a subprocess at the default 10 s housekeeping,
   without the sink, then with the sink writing to the healthy influxd: agent CPU over IDLE_S
   seconds (psutil, read every 10 s for the spread; no requests meanwhile) and RSS at the end.
3. API (external, --housekeeping-interval 1s): /healthz and /stats/summary on the read-only port,
   API_REQUESTS each, sequential on one keep-alive connection, alternating, API_GAP_S apart (so
   the requests spread over ~12 cycles): first an agent without the sink (baseline), then one agent
   with the sink in three states of influxd: healthy; frozen (SIGSTOP: connections are accepted,
   nothing answers, each write waits --influxdb-timeout 5s), SIGCONT after; stopped (connection
   refused). kubeletapi_influxdb_* read from /metrics after each state.
4. Buffer (same agent): influxd stays stopped until the buffer (--influxdb-buffer-size 50000, the
   default) is full and points are being dropped; agent RSS just before the stop, then RSS and
   buffered points sampled every second (RSS growth per 10,000 points = least-squares slope over
   the fill, with its standard error), set against the bytes the buffer holds (chunk sizes from
   part 1). Then influxd is restarted: time until the first write lands (the sink's back-off), until
   the buffer is empty, and the accounting: written_total against the points stored in InfluxDB;
   dropped_total against what is missing there. The buffer drops whole chunks, oldest first, and a
   cycle is one chunk when it fits in a batch (several of at most BATCH points when not), so what is
   missing must be whole cycles (with a cycle larger than a batch: plus the oldest whole chunks of
   the first cycle stored after the gap), and exactly as many cycles as the bench saw published in
   the gap (/stats/summary, cached per cycle, is polled from before the stop until the buffer is
   full; a changed body is a new cycle). The sink agent's warnings and errors are summarised.

Knobs: BENCH_PODS (110), BENCH_BUILD_CYCLES (30), BENCH_IDLE_SECONDS (60), BENCH_API_REQUESTS
(300), BENCH_API_GAP (0.02 s), BENCH_FILL_EXTRA (5 s of dropping after the buffer is full),
BENCH_BATCH / BENCH_BUFFER (--influxdb-batch-size / --influxdb-buffer-size, default 5000 / 50000).
Needs root (cgroups) and influxd (Debian package influxdb).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import gzip
import itertools
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests.ecosystem.influxd
from benchkit import Client, LoopThread, agent_args, cpu_s, pct, purge, stop_pods, wait
from ports import free_ports
from results_md import update_section
from stats_bench import load, machine, running_containers, start_pods, wait_generations

from kubeletapi.sinks.sink import BACKOFF_INITIAL_S, BACKOFF_MAX_S
from tests.ecosystem.influxd import INFLUXD, Influxd

PODS = int(os.environ.get("BENCH_PODS", "110"))
BUILD_CYCLES = int(os.environ.get("BENCH_BUILD_CYCLES", "30"))
IDLE_S = float(os.environ.get("BENCH_IDLE_SECONDS", "60"))
IDLE_PERIOD_S = 10.0  # the idle window is read every housekeeping interval (for its spread)
GEN_POLL_S = 0.1  # how often the buffer phase looks for a new housekeeping cycle
GEN_LAG_S = 0.6  # a cycle is published (collected and rendered) and seen within this of its time
API_REQUESTS = int(os.environ.get("BENCH_API_REQUESTS", "300"))
API_GAP_S = float(os.environ.get("BENCH_API_GAP", "0.02"))
FILL_EXTRA_S = float(os.environ.get("BENCH_FILL_EXTRA", "5"))
BATCH = int(os.environ.get("BENCH_BATCH", "5000"))  # --influxdb-batch-size (default 5000)
BUFFER = int(os.environ.get("BENCH_BUFFER", "50000"))  # --influxdb-buffer-size (default 50000)
EFFECTIVE_BATCH = min(BATCH, BUFFER)  # the agent's batch (InfluxDBOptions.effective_batch_size)
TIMEOUT_S = 5.0  # --influxdb-timeout default
SECTION = "InfluxDB sink (issue 7)"
DB = "k8s_api"  # the database of the outage agent (the idle one writes to k8s_idle)
HEALTHZ, SUMMARY = "/healthz", "/stats/summary"
# One integer field per measurement, to count its points in InfluxDB.
COUNT_FIELD = {
    "kubernetes_node": "cpu_usage_nanocores",
    "kubernetes_system_container": "cpu_usage_nanocores",
    "kubernetes_pod_container": "cpu_usage_nanocores",
    "kubernetes_pod_volume": "used_bytes",
    "kubernetes_pod_network": "rx_bytes",
}


# --- pods and agents ------------------------------------------------------------------------------
def manifest(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n"
            "  volumes:\n  - name: scratch\n    emptyDir: {}\n  containers:\n"
            "  - name: app\n    image: busybox:1.36\n    command: [sleep, '3600']\n"
            "    volumeMounts:\n    - {name: scratch, mountPath: /scratch}\n"
            "  - name: sidecar\n    image: busybox:1.36\n    command: [sleep, '3600']\n")


def all_sampled(client: Client) -> bool:
    """Every container has stats in /metrics/resource (a cached body between cycles)."""
    return client.get("/metrics/resource")[1].count(b"\ncontainer_memory_working_set_bytes{") >= 2 * PODS


def healthy(port: int) -> bool:
    client = Client(port)
    client.conn.timeout = 1
    try:
        client.get(HEALTHZ)
        return True
    except (OSError, RuntimeError):
        return False
    finally:
        client.close()


class External:
    """`python -m kubeletapi` as a subprocess on the shared state (it re-adopts the running pods)."""

    def __init__(self, base: Path, name: str, args: Sequence[str]) -> None:
        self.args = list(args)
        self.log = base / f"agent-{name}.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "kubeletapi", *self.args], stdout=log, stderr=log)
        self.ps = psutil.Process(self.proc.pid)
        self.read_only = int(self.args[self.args.index("--read-only-port") + 1])
        healthz = int(self.args[self.args.index("--healthz-port") + 1])
        try:
            wait(lambda: healthy(healthz) or self.proc.poll() is not None, 60, 0.1, f"agent {name} healthy")
        except BaseException:
            self.stop()
            raise
        if self.proc.poll() is not None:
            raise RuntimeError(f"agent {name} exited: {self.log.read_text()[-2000:]}")

    def ready(self, client: Client) -> None:
        """Every pod running and sampled, then one more cycle (so every rate exists)."""
        wait(lambda: running_containers(client) == 2 * PODS, 120, 0.2, "pods re-adopted")
        wait(lambda: all_sampled(client), 120, 0.25, "every container in housekeeping")
        wait_generations(client, 1)

    def rss_mib(self) -> float:
        return float(self.ps.memory_info().rss) / 2**20

    def stop(self) -> None:
        """SIGTERM (the pods keep running for the next agent), SIGKILL if it hangs."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


# --- the sink's counters --------------------------------------------------------------------------
@dataclass(frozen=True)
class Counts:
    written: int
    retried: int
    dropped_full: int
    dropped_rejected: int
    buffered: int

    def row(self) -> str:
        return (f"{self.written:,} | {self.retried:,} | {self.dropped_full:,} | {self.dropped_rejected:,} | "
                f"{self.buffered:,}")


METRIC_LINE = re.compile(r"^(kubeletapi_influxdb_\w+)(\{[^}]*\})? (\S+)$", re.MULTILINE)


def counts(client: Client) -> Counts:
    found = {name + labels: int(float(value)) for name, labels, value in
             METRIC_LINE.findall(client.get("/metrics")[1].decode())}
    return Counts(found.get("kubeletapi_influxdb_points_written_total", 0),
                  found.get("kubeletapi_influxdb_points_retried_total", 0),
                  found.get('kubeletapi_influxdb_points_dropped_total{reason="buffer_full"}', 0),
                  found.get('kubeletapi_influxdb_points_dropped_total{reason="rejected"}', 0),
                  found.get("kubeletapi_influxdb_buffered_points", 0))


# --- 1. build cost, in-process --------------------------------------------------------------------
@dataclass
class Build:
    points: list[int] = field(default_factory=list)
    raw_bytes: list[int] = field(default_factory=list)  # the cycle's line protocol, newlines included
    chunk_bytes: list[int] = field(default_factory=list)  # sum of the cycle's gzip members
    held_bytes: list[int] = field(default_factory=list)  # the cycle's chunks as buffered (held_bytes())
    chunks: list[int] = field(default_factory=list)  # chunks per cycle
    ms: dict[str, list[float]] = field(default_factory=dict)  # step -> thread CPU ms per cycle
    per_measurement: dict[str, int] = field(default_factory=dict)
    line_object_bytes: float = 0.0  # mean sys.getsizeof of one encoded line (one bytes object per point)
    batch_chunks: int = 0  # one full batch, as PointBuffer.take(BATCH) hands it out
    batch_points: int = 0
    batch_body: int = 0  # its multi-member gzip body
    batch_raw: int = 0  # the body decompressed
    batch_join_us: float = 0.0  # b"".join of its chunk bodies, thread CPU
    batch_intact: bool = False  # the body decompresses to exactly its points' lines
    pods_running_s: float = 0.0

    def add(self, step: str, ms: float) -> None:
        self.ms.setdefault(step, []).append(ms)

    def per_point_held(self) -> float:
        """Bytes one buffered point costs: the cycle's chunks as held, over its points."""
        return statistics.median(self.held_bytes) / statistics.median(self.points)


BUILD = "build = snapshot_points + encode_all"
CHUNKS = "chunks: cut into batches + gzip level 1 (InfluxSink._chunks)"
WORKER = "the worker's whole call (InfluxSink._chunks, real encoder)"


class NoWriter:
    """The sink's Writer, never called: the bench only uses InfluxSink._chunks."""

    @property
    def target(self) -> str:
        return "nowhere (sink_bench)"

    async def write(self, gzipped: bytes) -> Any:
        raise AssertionError("sink_bench does not write")

    async def close(self) -> None:
        return None


class Sinks:
    """Two InfluxSinks with the agent's batch and buffer sizes, used for their _chunks only: one
    with the real encoder (the worker's whole call), one whose encoder hands over lines already
    encoded (the chunking alone)."""

    def __init__(self) -> None:
        from kubeletapi.clock import RealClock  # noqa: PLC0415
        from kubeletapi.sinks.sink import InfluxSink  # noqa: PLC0415

        self.lines: list[bytes] = []
        self.whole = InfluxSink(NoWriter(), RealClock(), EFFECTIVE_BATCH, BUFFER)
        self.chunker = InfluxSink(NoWriter(), RealClock(), EFFECTIVE_BATCH, BUFFER, encode=lambda _snap: self.lines)


def held_bytes(chunk: Any) -> int:
    """What one buffered Chunk costs: its gzip member (a bytes object), the Chunk and its attribute
    dict, the `points` int, and a slot in the buffer's deque (malloc's own overhead not counted)."""
    return (sys.getsizeof(chunk.body) + sys.getsizeof(chunk) + sys.getsizeof(vars(chunk))
            + sys.getsizeof(chunk.points) + 8)


def cpu_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.thread_time()
    result = fn()
    return (time.thread_time() - start) * 1000, result


def sampled(snap: Any) -> int:
    return 0 if snap is None else sum(1 for p in snap.pods for c in p.containers if c.stats is not None)


def latest(housekeeper: Any) -> Any:
    snap = housekeeper.latest()
    assert snap is not None
    return snap


def measure_cycle(snap: Any, out: Build, sinks: Sinks) -> tuple[list[bytes], list[Any]]:
    """The sink's work on one Snapshot, step by step, in this thread; the encoded lines and the chunks."""
    from kubeletapi.sinks.lineprotocol import encode_all  # noqa: PLC0415
    from kubeletapi.sinks.telegraf import snapshot_points  # noqa: PLC0415
    from kubeletapi.stats.summary import full_summary  # noqa: PLC0415

    ms, _ = cpu_ms(lambda: full_summary(snap))
    out.add("full_summary (inside snapshot_points)", ms)
    ms, points = cpu_ms(lambda: snapshot_points(snap))
    out.add("snapshot_points", ms)
    ms, lines = cpu_ms(lambda: encode_all(points))
    out.add("encode_all", ms)
    out.add(BUILD, out.ms["snapshot_points"][-1] + ms)
    sinks.lines = lines
    ms, chunks = cpu_ms(lambda: sinks.chunker._chunks(snap))
    out.add(CHUNKS, ms)
    ms, whole = cpu_ms(lambda: sinks.whole._chunks(snap))
    out.add(WORKER, ms)
    assert [c.points for c in whole] == [c.points for c in chunks], "the two sinks cut the cycle alike"
    out.points.append(len(lines))
    out.raw_bytes.append(sum(len(line) + 1 for line in lines))
    out.chunk_bytes.append(sum(len(c.body) for c in chunks))
    out.held_bytes.append(sum(held_bytes(c) for c in chunks))
    out.chunks.append(len(chunks))
    out.per_measurement = dict(Counter(p.measurement for p in points))
    return list(lines), chunks


def measure_batch(chunks: list[Any], out: Build) -> None:
    """One full batch, as the sink takes it out of its buffer and sends it: the chunks' bodies
    joined (the write path's only CPU before HTTP), timed; the body checked."""
    from kubeletapi.sinks.buffer import PointBuffer  # noqa: PLC0415

    per_round = sum(c.points for c in chunks)
    rounds = -(-2 * EFFECTIVE_BATCH // per_round)  # enough measured cycles for a full batch, repeated
    buffer = PointBuffer(BUFFER)
    buffer.extend(chunks * rounds)
    batch = buffer.take(EFFECTIVE_BATCH)
    reps, trials = 200, []
    for _ in range(5):
        start = time.thread_time()
        for _ in range(reps):
            body = b"".join(c.body for c in batch)
        trials.append((time.thread_time() - start) / reps * 1e6)
    out.batch_join_us = statistics.median(trials)
    out.batch_chunks = len(batch)
    out.batch_points = sum(c.points for c in batch)
    out.batch_body = len(body)
    raw = gzip.decompress(body)  # every member, as InfluxDB reads a Content-Encoding: gzip body
    out.batch_raw = len(raw)
    out.batch_intact = raw.count(b"\n") == out.batch_points and raw.endswith(b"\n")


def build_run(base: Path, ports: Sequence[int]) -> Build:
    from kubeletapi.cli import configuration  # noqa: PLC0415
    from kubeletapi.kubelet import Kubelet  # noqa: PLC0415

    out = Build()
    kubelet = Kubelet(*configuration(agent_args(base, "1s", ports)))
    loop = LoopThread()
    client = Client(ports[1])
    try:
        loop.run(kubelet.start())
        gc.freeze()  # as the CLI does once the agent has started
        assert kubelet.stats is not None
        housekeeper = kubelet.stats.housekeeper
        sinks = Sinks()
        out.pods_running_s = start_pods(base / "manifests", client, manifest)
        wait(lambda: sampled(housekeeper.latest()) >= 2 * PODS, 60, 0.1, "every container in housekeeping")
        loop.run(housekeeper.refresh_volumes())  # the volumes' usage (else measured once a minute)
        last = latest(housekeeper).generation + 1
        wait(lambda: latest(housekeeper).generation > last, 30, 0.01, "two housekeeping cycles")
        lines: list[bytes] = []
        chunks: list[Any] = []
        for _ in range(BUILD_CYCLES):
            wait(lambda: latest(housekeeper).generation != last, 30, 0.002, "the next cycle")  # noqa: B023
            snap = latest(housekeeper)
            last = snap.generation
            lines, cycle_chunks = measure_cycle(snap, out, sinks)
            chunks += cycle_chunks
        out.line_object_bytes = statistics.mean(sys.getsizeof(line) for line in lines)
        measure_batch(chunks, out)
    finally:
        client.close()
        with contextlib.suppress(Exception):
            loop.run(kubelet.stop())  # the pods keep running: the next agents re-adopt them
        loop.close()
    return out


# --- 2. idle CPU and RSS at 10 s, with and without the sink --------------------------------------
@dataclass
class Idle:
    core: float
    rss_mib: float
    periods: list[float] = field(default_factory=list)  # core of each housekeeping-interval period
    written: int = 0  # points the sink wrote during the window
    retried: int = 0


def idle_run(base: Path, name: str, args: Sequence[str], sink: bool) -> Idle:
    agent = External(base, name, args)
    try:
        client = Client(agent.read_only)
        agent.ready(client)
        before = counts(client) if sink else None
        client.close()  # no requests during the window
        cpu0, t0 = cpu_s(agent.ps), time.perf_counter()
        marks = [(cpu0, t0)]
        for i in range(1, round(IDLE_S / IDLE_PERIOD_S) + 1):
            time.sleep(max(0.0, t0 + i * IDLE_PERIOD_S - time.perf_counter()))
            marks.append((cpu_s(agent.ps), time.perf_counter()))
        core = (marks[-1][0] - cpu0) / (marks[-1][1] - t0)
        periods = [(c1 - c0) / (w1 - w0) for (c0, w0), (c1, w1) in itertools.pairwise(marks)]
        out = Idle(core, agent.rss_mib(), periods)
        if before is not None:
            client = Client(agent.read_only)
            after = counts(client)
            client.close()
            out.written, out.retried = after.written - before.written, after.retried - before.retried
        return out
    finally:
        agent.stop()


# --- 3. the API while influxd is healthy, frozen, stopped ----------------------------------------
class Generations:
    """When each housekeeping cycle became visible: /stats/summary's body (cached per cycle) changed.
    Watched from just before influxd stops until the buffer is full, so the cycles the drop took
    are counted rather than inferred from the gap's length."""

    def __init__(self) -> None:
        self.seen: list[float] = []  # time.time() of each change observed
        self._last = b""

    def see(self, body: bytes) -> None:
        if body != self._last:
            if self._last:
                self.seen.append(time.time())
            self._last = body

    def poll(self, client: Client, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.see(client.get(SUMMARY)[1])
            time.sleep(GEN_POLL_S)

@dataclass
class ApiState:
    name: str
    ms: dict[str, list[float]]
    counts: Counts | None
    seconds: float

    def cell(self, path: str) -> str:
        values = self.ms[path]
        return f"{pct(values, 50):.2f} / {pct(values, 99):.2f} / {max(values):.2f}"


def api_round(name: str, port: int, metrics: bool = True, generations: Generations | None = None) -> ApiState:
    client = Client(port)
    ms: dict[str, list[float]] = {HEALTHZ: [], SUMMARY: []}
    start = time.perf_counter()
    try:
        client.get(HEALTHZ)  # open the connection
        for _ in range(API_REQUESTS):
            for path in (HEALTHZ, SUMMARY):
                elapsed, body, _ = client.get(path)
                ms[path].append(elapsed)
                if generations is not None and path == SUMMARY:
                    generations.see(body)
                time.sleep(API_GAP_S)
        seconds = time.perf_counter() - start
        return ApiState(name, ms, counts(client) if metrics else None, seconds)
    finally:
        client.close()


# --- 4. buffer fill and drain ---------------------------------------------------------------------
@dataclass
class Fill:
    samples: list[tuple[float, int, int, float]] = field(default_factory=list)  # (s, buffered, dropped, rss MiB)
    rss_at_stop: float = 0.0  # agent RSS (MiB) just before influxd was stopped
    buffered_at_stop: int = 0
    full_after_s: float = 0.0  # influxd stopped -> first point dropped
    at_full: Counts | None = None
    restart_ready_s: float = 0.0  # influxd start -> /ping answers
    first_write_s: float = 0.0  # influxd answering -> written_total moves
    drained_s: float = 0.0  # influxd answering -> buffer empty
    drained_points: int = 0
    after: Counts | None = None
    stored: int = 0  # points in InfluxDB
    per_cycle: int = 0  # points of a complete cycle (as stored)
    cycles_stored: int = 0
    gap_cycles: float = 0.0  # cycles that fit in the outage's gap of the stored timeline (spacings - 1)
    cut_cycle_missing: int = 0  # points missing from the stored cycle right after the gap
    seen_in_gap: int = 0  # cycles the bench saw published between the two stored cycles around the gap
    watched_gap: bool = False  # the watch began before the gap did
    lags: list[float] = field(default_factory=list)  # stored cycle's time -> the watch saw it published
    log_lines: Counter[str] = field(default_factory=Counter)  # the sink agent's warnings and errors, digits as #
    short_cycles: list[tuple[int, int]] = field(default_factory=list)  # other incomplete cycles: (position, points)
    spacing_s: float = 0.0

    def slope_mib_per_10k(self) -> tuple[float, float]:
        """RSS growth per 10,000 buffered points over the fill (before any drop): the least-squares
        slope and its standard error, both in MiB."""
        filling = [(b, r) for _, b, d, r in self.samples if d == 0]
        if len(filling) < 3:
            return float("nan"), float("nan")
        xs, ys = [float(b) for b, _ in filling], [r for _, r in filling]
        fit = statistics.linear_regression(xs, ys)
        mean_x = statistics.fmean(xs)
        sxx = sum((x - mean_x) ** 2 for x in xs)
        residual = sum((y - fit.intercept - fit.slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
        se = (residual / (len(xs) - 2) / sxx) ** 0.5 if sxx else float("nan")
        return fit.slope * 10_000, se * 10_000

    def full_rss(self) -> float:
        """The largest RSS sampled while the buffer was full (dropping)."""
        return max((r for _, _, d, r in self.samples if d), default=float("nan"))


def fill(agent: External, client: Client, stopped_at: float, out: Fill, generations: Generations) -> None:
    """Sample every second until the buffer drops points, then FILL_EXTRA_S more."""
    deadline = stopped_at + 400
    full_at = None
    while time.perf_counter() < deadline:
        c = counts(client)
        now = time.perf_counter()
        out.samples.append((now - stopped_at, c.buffered, c.dropped_full, agent.rss_mib()))
        if c.dropped_full and full_at is None:
            full_at = now
            out.full_after_s = now - stopped_at
        if full_at is not None and now - full_at >= FILL_EXTRA_S:
            out.at_full = c
            return
        generations.poll(client, 1.0)
    raise TimeoutError("benchmark: the sink's buffer did not fill")


def drain(influxd: Influxd, client: Client, out: Fill) -> None:
    before = counts(client)
    start = time.perf_counter()
    influxd.start()
    influxd.wait_ready(30)
    ready = time.perf_counter()
    out.restart_ready_s = ready - start
    first = None
    while time.perf_counter() - ready < 120:
        c = counts(client)
        now = time.perf_counter()
        if first is None and c.written > before.written:
            first = now
            out.first_write_s = first - ready
        if first is not None and c.buffered == 0:
            out.drained_s = now - ready
            out.drained_points = c.written - before.written
            return
        time.sleep(0.05)
    raise TimeoutError("benchmark: the sink's buffer did not drain")


LOG_LINE = re.compile(r"^([WE])\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] (.*)$")


NUMBER = re.compile(r"\b[0-9]+\b")


def log_summary(path: Path) -> Counter[str]:
    """Warning and error lines of an agent's log (klog format), numbers replaced by #, counted."""
    out: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        match = LOG_LINE.match(line)
        if match:
            text = NUMBER.sub("#", match[2])[:200]
            out[f"{match[1]}: {text}"] += 1
    return out


def stored_times(influxd: Influxd, db: str) -> Counter[int]:
    """Points stored per timestamp (every point of a cycle carries the cycle's time)."""
    q = "; ".join(f'SELECT "{f}" FROM "{m}"' for m, f in COUNT_FIELD.items())
    per_time: Counter[int] = Counter()
    for result in influxd.query(q, db=db):
        for series in result.get("series", []):
            per_time.update(row[0] for row in series["values"])
    return per_time


def account(influxd: Influxd, db: str, client: Client, out: Fill, generations: Generations) -> None:
    """written_total against what InfluxDB holds; dropped_total against what is missing there."""
    for _ in range(10):  # read the counters on both sides of the query: no write in between
        time.sleep(0.3)
        first = counts(client)
        per_time = stored_times(influxd, db)
        out.after = counts(client)
        if first.written == out.after.written and out.after.buffered == 0:
            break
    out.stored = sum(per_time.values())
    times = sorted(per_time)
    out.per_cycle = max(per_time.values())
    out.cycles_stored = len(times)
    gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(times)]
    median = statistics.median(gaps)
    out.spacing_s = statistics.mean(g for g in gaps if g < 1.5 * median)  # what a gap is made of
    # Whole cycles missing: gaps of more than 1.5 spacings (the oldest points go first, so only the
    # outage leaves one); the cut cycle: the stored cycle right after that gap holds only its newest points.
    cut = set()
    for i, gap in enumerate(gaps):
        if gap > 1.5 * median:
            out.gap_cycles += gap / out.spacing_s - 1
            out.cut_cycle_missing += out.per_cycle - per_time[times[i + 1]]
            cut.add(times[i + 1])
            # Cycles published between the two stored ones: a cycle shows within GEN_LAG_S of its time.
            before, after = times[i] / 1e9 + GEN_LAG_S, times[i + 1] / 1e9
            out.seen_in_gap += sum(1 for t in generations.seen if before < t < after)
            out.watched_gap = bool(generations.seen) and generations.seen[0] <= before
    # How late the watch saw the stored cycles it could see (the gap's count assumes < GEN_LAG_S).
    seen = generations.seen
    for t in (t / 1e9 for t in times):
        if seen and seen[0] - 0.05 <= t <= seen[-1] - 1.5:
            out.lags.append(min(g - t for g in seen if g >= t))
    out.short_cycles = [(i + 1, per_time[t]) for i, t in enumerate(times) if per_time[t] < out.per_cycle
                        and t not in cut]


# --- the run --------------------------------------------------------------------------------------
@dataclass
class Results:
    build: Build | None = None
    idle_off: Idle | None = None
    idle_on: Idle | None = None
    api: list[ApiState] = field(default_factory=list)
    frozen_drain_s: float = 0.0
    fill: Fill = field(default_factory=Fill)
    influxd_version: str = ""
    loads: list[str] = field(default_factory=list)
    seconds: float = 0.0
    commit: str = ""


def outage(agent: External, influxd: Influxd, res: Results) -> None:
    """Parts 3 and 4 on one agent with the sink: healthy, frozen, stopped, buffer full, restarted."""
    client = Client(agent.read_only)
    try:
        agent.ready(client)
        wait(lambda: counts(client).written > 0, 30, 0.1, "the sink writing")
        print("   influxd healthy", flush=True)
        res.api.append(api_round("influxd healthy", agent.read_only))
        print("   influxd frozen (SIGSTOP)", flush=True)
        assert influxd.pid is not None
        os.kill(influxd.pid, signal.SIGSTOP)
        try:
            res.api.append(api_round("influxd frozen (SIGSTOP)", agent.read_only))
        finally:
            os.kill(influxd.pid, signal.SIGCONT)
        resumed = time.perf_counter()
        wait(lambda: counts(client).buffered == 0, 90, 0.05, "the buffer drained after SIGCONT")
        res.frozen_drain_s = time.perf_counter() - resumed
        generations = Generations()
        generations.poll(client, 2.5)  # the last cycles written before the stop
        res.fill.rss_at_stop, res.fill.buffered_at_stop = agent.rss_mib(), counts(client).buffered
        print("   influxd stopped", flush=True)
        assert influxd.pid is not None
        os.kill(influxd.pid, signal.SIGTERM)  # watching the cycles while it shuts down
        deadline = time.perf_counter() + 15
        while influxd.running and time.perf_counter() < deadline:
            generations.poll(client, GEN_POLL_S)
        influxd.stop()  # SIGKILL if it has not exited
        stopped_at = time.perf_counter()
        res.api.append(api_round("influxd stopped (refused)", agent.read_only, generations=generations))
        print("4. buffer: filling", flush=True)
        fill(agent, client, stopped_at, res.fill, generations)
        print("   influxd restarted: draining", flush=True)
        drain(influxd, client, res.fill)
        account(influxd, DB, client, res.fill, generations)
        res.fill.log_lines = log_summary(agent.log)
    finally:
        client.close()


def sink_flags(influxd: Influxd, db: str) -> list[str]:
    return ["--influxdb-url", influxd.url, "--influxdb-database", db, "--influxdb-batch-size", str(BATCH),
            "--influxdb-buffer-size", str(BUFFER)]


def run(res: Results) -> None:
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sink-bench-") as tmp, Influxd(Path(tmp) / "influxd") as influxd:
        base = Path(tmp)
        (base / "manifests").mkdir()
        ports = free_ports(3)
        influxd.start()
        influxd.wait_ready(30)
        version = subprocess.run([influxd.binary, "version"], capture_output=True, text=True, check=False)
        res.influxd_version = version.stdout.strip()
        agent: External | None = None
        try:
            print("1. build cost (in-process, 1 s cycles)", flush=True)
            res.build = build_run(base, ports)
            print("2. idle CPU at 10 s: without the sink", flush=True)
            res.idle_off = idle_run(base, "idle-off", agent_args(base, "10s", ports), sink=False)
            print("   with the sink", flush=True)
            res.idle_on = idle_run(base, "idle-on", agent_args(base, "10s", ports, *sink_flags(influxd, "k8s_idle")),
                                   sink=True)
            print("3. API at 1 s cycles: baseline without the sink", flush=True)
            baseline = External(base, "api-off", agent_args(base, "1s", ports))
            try:
                client = Client(baseline.read_only)
                baseline.ready(client)
                client.close()
                res.api.append(api_round("no sink (baseline)", baseline.read_only, metrics=False))
            finally:
                baseline.stop()
            agent = External(base, "api-on", agent_args(base, "1s", ports, *sink_flags(influxd, DB)))
            outage(agent, influxd, res)
        finally:
            if agent is not None and agent.proc.poll() is None:
                stop_pods(base / "manifests", agent.read_only)
                agent.stop()
            purge(agent_args(base, "1s", ports))
    res.seconds = time.perf_counter() - start


# --- results --------------------------------------------------------------------------------------
def p50_99(values: Sequence[float], digits: int = 2) -> str:
    return f"{pct(values, 50):.{digits}f} / {pct(values, 99):.{digits}f}"


def write_results(res: Results) -> None:
    b, f = res.build, res.fill
    assert b is not None and res.idle_off is not None and res.idle_on is not None
    assert f.at_full is not None and f.after is not None
    send_ms = [x + y for x, y in zip(b.ms[BUILD], b.ms[CHUNKS], strict=True)]
    expected_core = pct(send_ms, 50) / 1000 / 10
    diff_core = res.idle_on.core - res.idle_off.core
    points = statistics.median(b.points)
    per_point = b.per_point_held()
    slope, slope_se = f.slope_mib_per_10k()
    held_full = f.at_full.buffered * per_point / 2**20  # what the full buffer holds, by the chunk sizes
    # The buffer drops whole chunks, oldest first, and a cycle is one chunk when it fits in a batch
    # (else chunks of EFFECTIVE_BATCH points and a remainder): what is missing must be whole cycles,
    # plus (only for a cycle larger than a batch) whole leading chunks of the first cycle after the
    # gap; and as many whole cycles as were published in the gap.
    missing = f.after.dropped_full + f.after.dropped_rejected
    cut = f.cut_cycle_missing
    whole, rest = divmod(missing - cut, f.per_cycle)
    cut_ok = cut % EFFECTIVE_BATCH == 0  # 0 when a cycle fits in a batch (cut < per_cycle <= batch)
    dropped_ok = (rest == 0 and cut_ok and f.watched_gap and whole == f.seen_in_gap
                  and max(f.lags, default=9) < GEN_LAG_S)
    step_rows = [f"| {step} | {p50_99(values)} | {max(values):.2f} |" for step, values in b.ms.items()]
    per_m = ", ".join(f"{m} {n}" for m, n in b.per_measurement.items())
    cycle_chunks = statistics.median(b.chunks)
    granularity = (f"a cycle of {f.per_cycle} points is one chunk (batch {EFFECTIVE_BATCH:,}), so the drops are "
                   "whole cycles" if f.per_cycle <= EFFECTIVE_BATCH else
                   f"a cycle of {f.per_cycle} points is {-(-f.per_cycle // EFFECTIVE_BATCH)} chunks (batch "
                   f"{EFFECTIVE_BATCH:,}), so the drops are whole cycles plus leading chunks of one")
    dropped_cell = (f"{missing:,} = {whole} x {f.per_cycle}"
                    + (f" + {cut:,} (leading chunks of the first cycle after the gap)" if cut else "")
                    + (f" + {rest} (not whole cycles)" if rest else ""))
    after_gap = (f"the first cycle stored after the gap is complete ({f.per_cycle} points)" if cut == 0 else
                 f"the first cycle stored after the gap holds {f.per_cycle - cut} of its {f.per_cycle} points "
                 f"({cut:,} missing{'' if cut_ok else ', not whole chunks'})")
    lines = [
        f"## {SECTION}, {dt.date.today().isoformat()}",
        "",
        f"Machine: {machine()}. Load average (1/5/15 min) before: {res.loads[0]}; after: {res.loads[1]}. "
        f"kubeletapi at {res.commit}. {res.influxd_version or 'influxd'} on loopback (tests/ecosystem/influxd.py). "
        "`python bench/sink_bench.py` (as root) reproduces it "
        f"({res.seconds / 60:.1f} minutes).",
        "",
        f"Method. {PODS} static pods of 2 `sleep 3600` containers and one emptyDir each, process runtime, "
        "started once and re-adopted by each following agent (containers outlive the agent). "
        f"Build cost: the agent in-process (CLI event loop, gc.freeze()), --housekeeping-interval 1s, "
        f"volume usage measured once the pods run; for {BUILD_CYCLES} consecutive cycles the published "
        "Snapshot is turned into what the sink buffers, in the bench thread, by the sink's own code: "
        "snapshot_points, encode_all, then InfluxSink._chunks (a sink whose writer is never called, its encoder "
        f"handing over the lines just encoded) cuts the lines into chunks of at most {EFFECTIVE_BATCH:,} points "
        "and gzips each at level 1, as the sink's worker thread does; thread CPU time per step, and of the "
        "worker's whole call (_chunks with the real encoder) as a check. Bytes as buffered: each chunk's gzip "
        "member plus its Chunk object, the object's attribute dict, its points int and a deque slot "
        "(sys.getsizeof; malloc's own overhead not counted). Write path: a full batch as PointBuffer.take hands it "
        "out of the measured chunks, joined into one multi-member gzip body as the sink's _write_batch does "
        "(b\"\".join of the chunk bodies: the only CPU between the buffer and HTTP; retries resend the same "
        "bytes), checked to decompress to its points' lines. Idle cost: `python -m kubeletapi` as a subprocess "
        "at the default --housekeeping-interval "
        f"10s, without the sink and then with the sink writing to the healthy influxd; agent CPU (psutil) "
        f"over {IDLE_S:.0f} s with no requests, RSS at the end. API: a subprocess agent at 1 s cycles, "
        f"{API_REQUESTS} /healthz and {API_REQUESTS} /stats/summary requests per state, sequential on one "
        f"keep-alive connection to the read-only port, alternating, {API_GAP_S * 1000:.0f} ms apart (they "
        "spread over ~12 cycles); latency = request sent to last body byte; first an agent without the "
        "sink (baseline), then one agent with the sink while influxd is healthy, frozen with SIGSTOP "
        f"(connections accepted, no answer: each write waits --influxdb-timeout {TIMEOUT_S:.0f}s; SIGCONT "
        "after) and stopped (connection refused). Buffer: the same agent, influxd left stopped until "
        f"the buffer (--influxdb-buffer-size {BUFFER:,}{', the default' if BUFFER == 50_000 else ''}; batches of "
        f"{EFFECTIVE_BATCH:,}) drops points, then "
        "restarted; agent RSS just before the stop, then RSS and buffered points sampled every second (growth = "
        "least-squares slope over the fill, with its standard error), set against the bytes the buffered chunks "
        "take (per point as buffered, from the build cost). Accounting: written_total against the points stored "
        "in InfluxDB (read with the counters unchanged on both sides of the query); dropped_total against what "
        "is missing there: the buffer drops whole chunks, oldest first, and "
        f"{granularity}; the first cycle stored after the gap must be complete"
        f"{'' if f.per_cycle <= EFFECTIVE_BATCH else ' but for whole leading chunks'}, and as many whole "
        "cycles must be missing as the bench saw published in the gap "
        f"(/stats/summary, cached per cycle, polled every {GEN_POLL_S * 1000:.0f} ms or less from before the "
        "stop until the buffer was full: a changed body is a new cycle).",
        "",
        "| one housekeeping cycle (in-process) | value |",
        "|---|---:|",
        f"| points per cycle | {points:,.0f} ({per_m}) |",
        f"| line protocol per cycle, raw / as buffered chunks (gzip level 1) | "
        f"{statistics.median(b.raw_bytes) / 1024:,.1f} / {statistics.median(b.chunk_bytes) / 1024:,.1f} KiB (ratio "
        f"{statistics.median(b.raw_bytes) / statistics.median(b.chunk_bytes):.1f}), {cycle_chunks:.0f} "
        f"chunk{'' if cycle_chunks == 1 else 's'} of at most {EFFECTIVE_BATCH:,} points |",
        f"| the cycle's chunks as buffered (gzip members + Chunk objects + deque slots) | "
        f"{statistics.median(b.held_bytes) / 1024:,.1f} KiB |",
        f"| bytes per point: raw line / as buffered / as one bytes object per line (for comparison) | "
        f"{statistics.median(b.raw_bytes) / points:.0f} / {per_point:.1f} / {b.line_object_bytes + 8:.0f} B |",
        f"| one full batch (PointBuffer.take({EFFECTIVE_BATCH:,})): chunks, points; body (raw inside); CPU of "
        f"b\"\".join | {b.batch_chunks}, {b.batch_points:,}; {b.batch_body / 1024:,.1f} KiB ({b.batch_raw / 2**20:.2f} "
        f"MiB), decompresses to its {b.batch_points:,} lines: {_yes(b.batch_intact)}; {b.batch_join_us:.1f} us |",
        "",
        f"| step, thread CPU per cycle ({BUILD_CYCLES} cycles) | p50 / p99 ms | max ms |",
        "|---|---:|---:|",
        *step_rows,
        f"| all the sink's CPU work per cycle (build + chunks; a batch's join adds {b.batch_join_us:.0f} us) | "
        f"{p50_99(send_ms)} | {max(send_ms):.2f} |",
        "",
        f"| agent at --housekeeping-interval 10s ({IDLE_S:.0f} s, no requests) | CPU (+- standard error over "
        f"{IDLE_PERIOD_S:.0f} s periods) | RSS |",
        "|---|---:|---:|",
        f"| without the sink | {res.idle_off.core:.4f} core (+-{standard_error(res.idle_off.periods):.4f}) | "
        f"{res.idle_off.rss_mib:.0f} MiB |",
        f"| with the sink, influxd healthy ({res.idle_on.written:,} points written, {res.idle_on.retried} "
        f"retried) | {res.idle_on.core:.4f} core (+-{standard_error(res.idle_on.periods):.4f}) | "
        f"{res.idle_on.rss_mib:.0f} MiB |",
        f"| difference | {diff_core:+.4f} core | {res.idle_on.rss_mib - res.idle_off.rss_mib:+.0f} MiB |",
        f"| expected from the build cost (p50 per cycle / 10 s; the HTTP write not included) | "
        f"{expected_core:.4f} core | |",
        "",
        "| state (1 s cycles) | /healthz p50 / p99 / max ms | /stats/summary p50 / p99 / max ms | "
        "written | retried | dropped buffer_full | dropped rejected | buffered |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {s.name} ({s.seconds:.0f} s) | {s.cell(HEALTHZ)} | {s.cell(SUMMARY)} | "
          f"{s.counts.row() if s.counts else ' |  |  |  | '} |" for s in res.api),
        "",
        "kubeletapi_influxdb_* are totals since the agent started, read at the end of each state. "
        f"After SIGCONT the buffer was empty again after {res.frozen_drain_s:.1f} s.",
        "",
        "| buffer (influxd stopped, 1 s cycles) | value |",
        "|---|---:|",
        f"| influxd stopped -> first point dropped (buffer full) | {f.full_after_s:.0f} s |",
        f"| agent RSS just before the stop ({f.buffered_at_stop:,} points buffered) / when sampling began "
        f"({f.samples[0][1]:,} buffered, {f.samples[0][0]:.0f} s after the stop) / buffer full (largest while "
        f"dropping) | {f.rss_at_stop:.1f} / {f.samples[0][3]:.1f} / {f.full_rss():.1f} MiB |",
        f"| RSS growth, just before the stop -> buffer full / the full buffer's chunks ({f.at_full.buffered:,} "
        f"points x {per_point:.1f} B) | {f.full_rss() - f.rss_at_stop:+.2f} / {held_full:.2f} MiB |",
        f"| RSS growth per 10,000 buffered points: slope +- standard error over "
        f"{sum(1 for s in f.samples if not s[2])} samples / by the chunk sizes | {slope:.3f} +- {slope_se:.3f} / "
        f"{per_point * 10_000 / 2**20:.3f} MiB |",
        f"| counters when full (+{FILL_EXTRA_S:.0f} s): written / retried / dropped buffer_full / buffered | "
        f"{f.at_full.written:,} / {f.at_full.retried:,} / {f.at_full.dropped_full:,} / {f.at_full.buffered:,} |",
        f"| influxd restarted -> answering /ping | {f.restart_ready_s:.1f} s |",
        f"| answering -> first write lands (the sink's back-off, at most {BACKOFF_MAX_S:.0f} s) | "
        f"{f.first_write_s:.1f} s |",
        f"| answering -> buffer empty ({f.drained_points:,} points written) | {f.drained_s:.1f} s |",
        f"| draining itself (first write -> empty) | {f.drained_s - f.first_write_s:.1f} s |",
        "",
        "| accounting after the drain | agent | InfluxDB | match |",
        "|---|---:|---:|---|",
        f"| points written | {f.after.written:,} | {f.stored:,} stored | {_yes(f.after.written == f.stored)} |",
        f"| points rejected by InfluxDB (dropped, reason rejected) | {f.after.dropped_rejected:,} | | |",
        f"| points dropped (buffer_full + rejected) | {dropped_cell} | {after_gap}; {f.seen_in_gap} cycles were "
        f"seen published in the gap {'' if f.watched_gap else '(not watched from its start) '}(its length is "
        f"{f.gap_cycles:.1f} mean spacings; the watch saw {len(f.lags)} stored cycles published "
        f"{pct(f.lags, 50) if f.lags else 0:.2f} s after their time, at most {max(f.lags, default=0):.2f} s) | "
        f"{_yes(dropped_ok)} |",
        f"| buffered at the end | {f.after.buffered:,} | | |",
        "",
        f"Stored cycles: {f.cycles_stored}, complete ones of {f.per_cycle} points, {f.spacing_s:.3f} s apart on "
        "average (the 1 s interval plus the cycle itself); incomplete ones besides the first after the gap: "
        f"{', '.join(f'cycle {i}: {n} points' for i, n in f.short_cycles) or 'none'}.",
        "",
        "Warnings (W) and errors (E) in the log of the agent with the sink (numbers as #): "
        + ("; ".join(f"`{text}` x {n}" for text, n in f.log_lines.most_common()) or "none") + ".",
        "",
        *notes(res, pct(send_ms, 50), expected_core, diff_core),
        "",
    ]
    section = "\n".join(lines)
    print(section)
    update_section(SECTION, section)


def standard_error(values: Sequence[float]) -> float:
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")


def notes(res: Results, send_p50: float, expected_core: float, diff_core: float) -> list[str]:
    """What the figures say, worded from the figures."""
    b, f = res.build, res.fill
    assert b is not None and res.idle_off is not None and res.idle_on is not None and f.at_full is not None
    noise = 2 * (standard_error(res.idle_off.periods) ** 2 + standard_error(res.idle_on.periods) ** 2) ** 0.5
    resolved = abs(diff_core) > noise
    points = statistics.median(b.points)
    cycles_full = f.at_full.buffered / points
    per_point = b.per_point_held()
    expected_10k = per_point * 10_000 / 2**20
    slope, se = f.slope_mib_per_10k()
    growth = f.full_rss() - f.rss_at_stop
    api = {s.name: s for s in res.api}
    worst = max(res.api, key=lambda s: pct(s.ms[SUMMARY], 99))
    lines = [
        f"Notes. The sink's own CPU is {send_p50:.1f} ms per cycle, {expected_core:.4f} core at 10 s cycles; "
        f"the idle windows measured a difference of {diff_core:+.4f} core with a noise of +-{noise:.4f} core "
        f"(2 standard errors over the {len(res.idle_on.periods)} + {len(res.idle_off.periods)} periods of "
        f"{IDLE_PERIOD_S:.0f} s), so "
        + ("the difference is resolved. " if resolved
           else f"a cost this small is below what {IDLE_S:.0f} s windows resolve. ")
        + f"Of the build, encode_all takes {pct(b.ms['encode_all'], 50):.1f} ms and snapshot_points "
        f"{pct(b.ms['snapshot_points'], 50):.1f} ms, {pct(b.ms['full_summary (inside snapshot_points)'], 50):.1f} "
        "ms of which is the full_summary it builds (the render-ahead of /stats/summary builds the same one "
        f"in the housekeeping thread); cutting and gzipping the cycle into chunks adds {pct(b.ms[CHUNKS], 50):.2f} "
        f"ms (the worker's whole call: {pct(b.ms[WORKER], 50):.1f} ms), and sending a full batch only joins "
        f"bytes ({b.batch_join_us:.0f} us for {b.batch_points:,} points). "
        f"API: the slowest /stats/summary p99 was in state \"{worst.name}\" ({pct(worst.ms[SUMMARY], 99):.2f} ms)",
    ]
    base = api.get("no sink (baseline)")
    if base is not None:
        alike = pct(worst.ms[SUMMARY], 99) <= 1.5 * pct(base.ms[SUMMARY], 99) + 1
        lines[-1] += (f"; without the sink it was {pct(base.ms[SUMMARY], 99):.2f} ms (/healthz "
                      f"{pct(base.ms[HEALTHZ], 99):.2f} ms): "
                      + ("the tails come with the 1 s housekeeping, not with the sink's state. " if alike
                         else "the sink's states have the longer tail. "))
    else:
        lines[-1] += ". "
    if abs(slope - expected_10k) <= 2 * se:
        fit = (f"within two standard errors of the {expected_10k:.3f} MiB the chunks take, "
               + ("and distinguishable from no growth" if abs(slope) > 2 * se
                  else "though not distinguishable from no growth at this resolution"))
    else:
        fit = (f"{'more' if slope > expected_10k else 'less'} than the {expected_10k:.3f} MiB the chunks take "
               "by more than two standard errors: RSS counts the whole process (allocator arenas, the cycles' "
               "transient lines, the failing writes), not the buffer alone")
    lines[-1] += (
        f"Buffer: a point costs ~{per_point:.1f} B as buffered (its share of the cycle's gzip member, Chunk object "
        "and deque slot), so the full buffer "
        f"({f.at_full.buffered:,} points, ~{cycles_full:.0f} cycles at {PODS} pods) holds "
        f"~{f.at_full.buffered * per_point / 2**20:.2f} MiB; the same points as one bytes object per line would "
        f"take ~{(b.line_object_bytes + 8) * f.at_full.buffered / 2**20:.0f} MiB. Measured: RSS went from "
        f"{f.rss_at_stop:.1f} MiB just before the stop to {f.full_rss():.1f} MiB with the buffer full "
        f"({growth:+.2f} MiB), and the fit over the fill gives {slope:.3f} +- {se:.3f} MiB per 10,000 points, "
        f"{fit}. After influxd came back the first "
        f"write waited {f.first_write_s:.1f} s (the sink's back-off: {BACKOFF_INITIAL_S:.0f} s, doubling up to "
        f"{BACKOFF_MAX_S:.0f} s between failed attempts); the buffer then emptied in "
        f"{f.drained_s - f.first_write_s:.1f} s "
        f"({-(-f.drained_points // b.batch_points)} requests of {b.batch_chunks} chunks, {b.batch_points:,} "
        "points, or fewer)."
    )
    return lines


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def commit() -> str:
    """The checked-out commit, and whether the agent's code differs from it."""
    root = Path(__file__).resolve().parent.parent
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "kubeletapi"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"commit {head or 'unknown'}{' (kubeletapi/ modified)' if dirty else ''}"


def main() -> int:
    if os.geteuid() != 0:
        print("sink_bench needs root (the process runtime's cgroups)", file=sys.stderr)
        return 1
    if INFLUXD is None:
        print("influxd is missing (apt-get install influxdb)", file=sys.stderr)
        return 1
    res = Results(loads=[load()], commit=commit())
    run(res)
    res.loads.append(load())
    write_results(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
