"""Reliability of the listeners (issue 13): huge request heads and bodies, and idle connections.

Starts `python -m kubeletapi` (no pods) and, while a thread polls the healthz port every 10 ms on
one keep-alive connection, sends on the read-only port (plain HTTP) and the secure port (TLS):
request heads of 2 MiB to 128 MiB (one, 4 at once, 8 at once) and 64 MiB bodies (Content-Length
and chunked). For each: the answer, the time to it, the agent's RSS before and its peak during
(VmHWM, reset through /proc/<pid>/clear_refs: root only), and /healthz latency meanwhile. Then the
agent is restarted with a soft RLIMIT_NOFILE of 1024 and 1,100 connections that send nothing are
opened to the read-only port: descriptors held, /healthz latency, and how long until the agent
closed them (the 30 s header timeout).

`python bench/limits_bench.py` writes the section of bench/results.md; `--src DIR` runs the agent
from another checkout (e.g. one before the fix) and only prints; `--quick` leaves out the 128 MiB
cases and the idle-connection run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import Client, pct, wait
from ports import free_ports
from results_md import update_section

MIB = 1 << 20
CHUNK = b"a" * MIB


class Agent:
    def __init__(self, src: Path | None, base: Path, soft_nofile: int | None = None) -> None:
        self.secure, self.read_only, self.healthz = free_ports(3)
        self.certs = base / "certs"
        env = dict(os.environ)
        if src is not None:
            env["PYTHONPATH"] = str(src)

        def limit() -> None:
            if soft_nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft_nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kubeletapi", "--address", "127.0.0.1", "--port", str(self.secure),
             "--read-only-port", str(self.read_only), "--healthz-port", str(self.healthz),
             "--cert-dir", str(self.certs), "--root-dir", str(base / "root"), "--pod-logs-dir", str(base / "logs"),
             "--hostname-override", "bench", "--node-ip", "127.0.0.1"],
            stderr=(base / "agent.log").open("w"), env=env, cwd=src, preexec_fn=limit,  # noqa: PLW1509
        )
        wait(self._healthy, 30, 0.1, "the agent")

    def _healthy(self) -> bool:
        try:
            return Client(self.healthz).get("/healthz")[1] == b"ok"
        except OSError:
            return False

    def status(self, key: str) -> int:
        """A /proc/<pid>/status value in KiB (VmRSS, VmHWM)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        raise KeyError(key)

    def reset_peak(self) -> None:
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def nofile(self) -> str:
        line = next(x for x in Path(f"/proc/{self.proc.pid}/limits").read_text().splitlines() if "open files" in x)
        return "/".join(line.split()[3:5])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


class HealthzProbe:
    """GET /healthz every 10 ms on one keep-alive connection; latencies in ms (errors count as 30 s)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client = Client(self.port)
        while not self._stop.is_set():
            try:
                self.samples.append(client.get("/healthz")[0])
            except OSError:
                self.samples.append(30_000.0)
                client = Client(self.port)
            time.sleep(0.01)

    def window(self, action: Callable[[], object]) -> tuple[object, list[float]]:
        start = len(self.samples)
        result = action()
        return result, self.samples[start:]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(35)


def connect(agent: Agent, tls: bool) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", agent.secure if tls else agent.read_only), timeout=600)
    if tls:
        ctx = ssl.create_default_context(cafile=str(agent.certs / "ca.crt"))
        return ctx.wrap_socket(sock, server_hostname="127.0.0.1")
    return sock


def send_and_read(sock: socket.socket, head: bytes, size: int, end: bytes) -> str:
    """Send `head`, `size` bytes of filler and `end`; the status line of the answer (or the error)."""
    error = ""
    try:
        sock.sendall(head)
        for _ in range(size // MIB):
            sock.sendall(CHUNK)
        sock.sendall(end)
    except OSError as exc:
        error = type(exc).__name__
    try:
        reply = sock.recv(200)
    except OSError as exc:
        reply = type(exc).__name__.encode()
    sock.close()
    status = reply.split(b"\r\n", 1)[0].decode(errors="replace")
    return status + (f" (sending: {error})" if error else "")


def huge_head(agent: Agent, tls: bool, size: int) -> str:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "
    return send_and_read(connect(agent, tls), head, size, b"\r\n\r\n")


def huge_body(agent: Agent, tls: bool, size: int, chunked: bool) -> str:
    token = (agent.certs / "tokens.csv").read_text().split(",", 1)[0]
    framing = b"Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {size}\r\n".encode()
    head = (b"POST /stats/summary HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            + f"Authorization: Bearer {token}\r\n".encode() + framing + b"\r\n")
    if chunked:
        head += f"{size:x}\r\n".encode()
    return send_and_read(connect(agent, tls), head, size, b"\r\n0\r\n\r\n" if chunked else b"")


def flood(agent: Agent, probe: HealthzProbe, name: str, count: int, attack: Callable[[], str]) -> dict[str, object]:
    rss = agent.status("VmRSS")
    agent.reset_peak()
    start = time.monotonic()
    with ThreadPoolExecutor(count) as pool:
        answers, lat = probe.window(lambda: [f.result() for f in [pool.submit(attack) for _ in range(count)]])
    seconds = time.monotonic() - start
    time.sleep(0.6)  # the refused connections are dropped 0.5 s after their answer
    peak = agent.status("VmHWM")
    row = {"case": name, "answer": sorted(set(answers)), "seconds": seconds,  # type: ignore[arg-type]
           "rss": rss / 1024, "peak": peak / 1024, "after": agent.status("VmRSS") / 1024,
           "hz": (pct(lat, 50), pct(lat, 99), max(lat)) if lat else (0.0, 0.0, 0.0), "n": len(lat)}
    print(row, flush=True)
    return row


def floods(src: Path | None, sizes: list[tuple[int, int]]) -> list[dict[str, object]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(src, Path(tmp))
        probe = HealthzProbe(agent.healthz)
        try:
            for tls in (False, True):
                port = "secure (TLS)" if tls else "read-only"
                for count, mib in sizes:
                    name = f"{port}: {count} x {mib} MiB request head"
                    rows.append(flood(agent, probe, name, count, lambda t=tls, m=mib: huge_head(agent, t, m * MIB)))
                for chunked in (False, True):
                    how = "chunked" if chunked else "Content-Length"
                    rows.append(flood(agent, probe, f"{port}: 64 MiB body ({how}), POST /stats/summary", 1,
                                      lambda t=tls, c=chunked: huge_body(agent, t, 64 * MIB, c)))
        finally:
            probe.stop()
            agent.stop()
    return rows


def fresh_get(port: int) -> str:
    """/healthz on a new connection (5 s timeout)."""
    try:
        conn = Client(port)
        conn.conn.timeout = 5
        return "200 ok" if conn.get("/healthz")[1] == b"ok" else "wrong answer"
    except OSError as exc:
        return f"failed ({type(exc).__name__})"


def idle(src: Path | None, count: int = 1100) -> dict[str, object]:
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent(src, Path(tmp), soft_nofile=1024)
        probe = HealthzProbe(agent.healthz)
        try:
            nofile = agent.nofile()
            before = agent.fds()
            socks, refused = [], 0
            for _ in range(count):
                try:
                    socks.append(socket.create_connection(("127.0.0.1", agent.read_only), timeout=5))
                except OSError:
                    refused += 1
            time.sleep(1)
            held = agent.fds() - before
            _, lat = probe.window(lambda: time.sleep(5))
            during = fresh_get(agent.healthz)
            start = time.monotonic()
            closed = False
            while time.monotonic() - start < 60 and not closed:
                closed = agent.fds() <= before + 5
                time.sleep(0.2)
            closed_after = time.monotonic() - start + 6 if closed else None
            after = fresh_get(agent.read_only)
            for s in socks:
                s.close()
        finally:
            probe.stop()
            agent.stop()
    row = {"nofile": nofile, "opened": len(socks), "refused": refused, "held": held, "during": during,
           "hz": (pct(lat, 50), pct(lat, 99), max(lat)), "closed_after": closed_after, "after": after}
    print(row, flush=True)
    return row


def flood_table(rows: list[dict[str, object]]) -> list[str]:
    lines = ["| case | answer | attacker's connection ended after s | RSS before / peak / after MiB "
             "| /healthz p50 / p99 / max ms (n) |", "|---|---|---:|---:|---:|"]
    for r in rows:
        hz: tuple[float, float, float] = r["hz"]  # type: ignore[assignment]
        answers: list[str] = r["answer"]  # type: ignore[assignment]
        latency = f"{hz[0]:.1f} / {hz[1]:.1f} / {hz[2]:.1f} ({r['n']})" if r["n"] else "none polled (over in < 10 ms)"
        lines.append(f"| {r['case']} | {', '.join(answers)} | {r['seconds']:.2f} | "
                     f"{r['rss']:.0f} / {r['peak']:.0f} / {r['after']:.0f} | {latency} |")
    return lines


def idle_table(row: dict[str, object]) -> list[str]:
    hz: tuple[float, float, float] = row["hz"]  # type: ignore[assignment]
    after = row["closed_after"]
    closed = "not within 66 s" if after is None else f"{after:.1f} s"
    return [
        "| measure | value |",
        "|---|---:|",
        f"| RLIMIT_NOFILE of the agent (soft/hard) | {row['nofile']} |",
        f"| connections opened / refused | {row['opened']} / {row['refused']} |",
        f"| descriptors the agent held for them | {row['held']} |",
        f"| /healthz p50 / p99 / max ms while they were open (5 s, the poller's keep-alive connection) "
        f"| {hz[0]:.1f} / {hz[1]:.1f} / {hz[2]:.1f} |",
        f"| /healthz on a new connection while they were open | {row['during']} |",
        f"| all closed by the agent after (header timeout 30 s) | {closed} |",
        f"| /healthz on a new read-only connection afterwards | {row['after']} |",
    ]


def write(rows: list[dict[str, object]], idle_row: dict[str, object] | None,
          before_rows: list[dict[str, object]], before_idle: dict[str, object] | None) -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"## Reliability (issue 13): request heads, bodies and idle connections, {dt.date.today().isoformat()}",
        "",
        f"Machine: {os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()} "
        f"{platform.release()}, load average {load} at the end (the machine is shared). "
        "`python bench/limits_bench.py --before <checkout before the fix>` (as root) reproduces it. "
        "One `python -m kubeletapi` without pods (uvloop); requests sent from threads of the bench, the "
        "head or body streamed 1 MiB at a time until the agent stops reading; /healthz polled every 10 ms "
        "on one keep-alive connection meanwhile (latency per request, n requests). RSS before each case, "
        "peak RSS during it (VmHWM, reset before each case), RSS after. A refused connection is dropped "
        "0.5 s after its answer, hence the attacker's times.",
        "",
        *flood_table(rows),
    ]
    if idle_row is not None:
        lines += ["", "Idle connections: the agent started with a soft RLIMIT_NOFILE of 1024, then 1,100 "
                  "connections to the read-only port that send nothing.", "", *idle_table(idle_row)]
    if before_rows:
        lines += ["", "Before the fix (the same cases, fewer of them: the large ones took minutes):", "",
                  *flood_table(before_rows)]
    if before_idle is not None:
        lines += ["", *idle_table(before_idle)]
    section = "\n".join(lines) + "\n"
    print(section)
    update_section("Reliability (issue 13): request heads", section)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, help="also run (fewer cases) the agent of this checkout, before the fix")
    parser.add_argument("--quick", action="store_true", help="no 128 MiB cases, no idle-connection run; prints only")
    args = parser.parse_args()
    sizes = [(1, 2), (1, 64), (4, 64)] + ([] if args.quick else [(1, 128), (8, 128)])
    rows = floods(None, sizes)
    idle_row = None if args.quick else idle(None)
    before_rows, before_idle = [], None
    if args.before is not None:
        before_rows = floods(args.before, [(1, 2), (1, 64)])
        before_idle = idle(args.before)
    if not args.quick:
        write(rows, idle_row, before_rows, before_idle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
