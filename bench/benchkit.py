"""What the benchmarks share: an agent's flags, a keep-alive client, the in-process event loop
the CLI would run, waiting, sampling (a process's CPU, one value per agent cycle), percentiles,
and cleaning up what an agent's runtime left behind."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import psutil


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def wait(predicate: Callable[[], bool], timeout: float, interval: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark: timed out waiting for {what}")
        time.sleep(interval)


def cpu_s(proc: psutil.Process) -> float:
    """The process's CPU seconds so far (user + system)."""
    times = proc.cpu_times()
    return times.user + times.system


def cores(proc: psutil.Process, seconds: float) -> float:
    """The cores the process uses over the next `seconds` (CPU seconds per wall second)."""
    cpu0, t0 = cpu_s(proc), time.monotonic()
    time.sleep(seconds)
    return (cpu_s(proc) - cpu0) / (time.monotonic() - t0)


def next_cycles(current: Callable[[], int], count: int, what: str, interval: float = 0.002) -> Iterator[int]:
    """Yield as each of the next `count` cycles lands (`current()`: a housekeeping generation, an
    eviction cycle count), so the caller samples every cycle once, right after it."""
    last = current()
    for _ in range(count):
        wait(lambda: current() != last, 30, interval, what)  # noqa: B023 - called before `last` changes
        last = current()
        yield last


def agent_args(base: Path, interval: str, ports: Sequence[int], *extra: str) -> list[str]:
    secure, read_only, healthz = ports
    return [
        "--cgroup-root", f"/kubeletapi-bench-{os.getpid()}-{base.name[-8:]}",
        "--address", "127.0.0.1", "--port", str(secure), "--read-only-port", str(read_only),
        "--healthz-bind-address", "127.0.0.1", "--healthz-port", str(healthz),
        "--root-dir", str(base / "root"), "--cert-dir", str(base / "certs"), "--pod-logs-dir", str(base / "logs"),
        "--pod-manifest-path", str(base / "manifests"), "--hostname-override", "benchnode",
        "--node-ip", "127.0.0.1", "--housekeeping-interval", interval, *extra,
    ]


class Client:
    """Sequential HTTP/1.1 keep-alive requests to one loopback port (one connection)."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path: str, gzipped: bool = False) -> tuple[float, bytes, str]:
        """Milliseconds from sending the request to the last body byte, the body as sent, its encoding."""
        headers = {"Accept-Encoding": "gzip" if gzipped else "identity"}
        start = time.perf_counter()
        self.conn.request("GET", path, headers=headers)
        response = self.conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status} {body[:300]!r}")
        return elapsed, body, response.getheader("Content-Encoding") or ""

    def json(self, path: str) -> Any:
        return json.loads(self.get(path)[1])

    def close(self) -> None:
        self.conn.close()


def stop_pods(manifests: Path, port: int) -> None:
    """Remove every manifest and wait for the agent to stop the pods (a fresh connection: the
    measuring one may have broken)."""
    for path in manifests.glob("*.yaml"):
        path.unlink()
    client = Client(port)
    try:
        with contextlib.suppress(OSError, TimeoutError, http.client.HTTPException, RuntimeError):
            wait(lambda: not client.json("/pods")["items"], 180, 0.5, "pods removed")
    finally:
        client.close()


def purge(args: Sequence[str]) -> None:
    """Kill whatever the agent's runtime left (shims, container inits and apps, by PID and by the
    procs of every cgroup under the private root), then remove those cgroups."""
    from kubeletapi.cgroups import detect  # noqa: PLC0415

    root = Path(args[args.index("--root-dir") + 1])
    cgroup_root = args[args.index("--cgroup-root") + 1].strip("/")
    pids: set[int] = set()
    for state in (root / "runtime" / "process" / "containers").glob("*/container.json"):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(state.read_text())
            pids |= {p for p in (record.get("init_pid"), record.get("app_pid"), record.get("shim_pid")) if p}
    bases = [h.mount_point / cgroup_root for h in detect().hierarchies]
    for base in (b for b in bases if b.is_dir()):
        for procs in base.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids |= {int(line) for line in procs.read_text().split()}
    pids -= {0, 1, os.getpid()}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        wait(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                             for p in pids), 10, 0.05, "killed processes to exit")
    for base in (b for b in bases if b.is_dir()):
        for dirpath, _, _ in sorted(os.walk(base), key=lambda e: -len(e[0])):
            with contextlib.suppress(OSError):
                Path(dirpath).rmdir()


class LoopThread:
    """An event loop on a daemon thread for the in-process agent: the loop the CLI runs (uvloop
    when installed), so the figures are the CLI's."""

    def __init__(self) -> None:
        from kubeletapi.cli import _loop_factory  # noqa: PLC0415

        self.loop = (_loop_factory() or asyncio.new_event_loop)()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Any, timeout: float = 60) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()
