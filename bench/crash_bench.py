"""kill -9 of the agent with 110 pods (issue 13, reliability): idle, and during a burst of starts.

Every container runs a counter (`sh -c 'i=0; while :; do echo $i; i=$((i+1)); sleep 0.1; done # <tag>-<pod>'`),
so its log tells whether one process wrote it (one unbroken sequence 0, 1, 2...) and how many lines
were lost (gaps), and its command line tells how many copies of it run.

- idle: 110 pods running; 5 times: kill -9 the agent, 1 s without an agent, start a new one and
  wait until /pods shows all 110 running again (the re-adoption time).
- burst: 110 manifests written, then an agent started and killed once 1/6 of the containers have
  recorded a start, a new one killed at 2/6, ... 5/6 (5 kills, each in the middle of the burst of
  starts), and a last agent brings every pod up.

Counted for each: kills that fell inside a start (a shim launched, the runtime's record not yet
saying so: the window of defect 3), containers duplicated (more than one counter process per pod),
containers restarted (restartCount, and container ids that changed), log lines written and lost,
logs written by two processes, and, once the manifests are removed and the agent has cleaned up,
the processes and pod cgroups left behind. As root (cgroups and namespaces), state in a temp dir.

`python bench/crash_bench.py` writes its section of bench/results.md; `--before REV` also runs the
burst on the code of git revision REV (exported to a temp dir, its own shim built there), as a row
of its own. BENCH_PODS (default 110) and BENCH_KILLS (default 5) change the sizes; with
--print-only nothing is written.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import itertools
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import agent_args, pct, purge, wait
from ports import free_ports
from results_md import update_section

ROOT = Path(__file__).resolve().parent.parent
PODS = int(os.environ.get("BENCH_PODS", "110"))
KILLS = int(os.environ.get("BENCH_KILLS", "5"))
COUNTER = "i=0; while :; do echo $i; i=$((i+1)); sleep 0.1; done"
SECTION = "Reliability (issue 13): kill -9 of the agent"


@dataclass
class Outcome:
    scenario: str
    kills: int = 0
    interrupted: int = 0  # starts a kill fell into (a shim launched, the record not updated)
    duplicated: int = 0  # pods with more than one counter process, at any check
    restarted: int = 0  # restartCount summed, plus container ids that changed across a restart
    lines: int = 0
    lost: int = 0
    two_writers: int = 0  # log files that are not one increasing sequence
    readopt_s: list[float] = field(default_factory=list)
    left_processes: int = 0  # counter processes
    left_cgroups: int = 0  # pods with a cgroup left (in any hierarchy)


class Node:
    """One agent's flags, state and pods, run from `source` (a checkout of kubeletapi)."""

    def __init__(self, base: Path, source: Path) -> None:
        self.base, self.source = base, source
        self.ports = free_ports(3)
        self.args = agent_args(base, "10s", self.ports)
        self.tag = f"crash{os.getpid()}{base.name[-6:]}"
        self.names = [f"c{i:03d}" for i in range(PODS)]
        self.state = base / "root" / "runtime" / "process" / "containers"
        self.agent: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def url(self, which: int, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[which]}{path}"

    def write_manifests(self) -> None:
        manifests = self.base / "manifests"
        manifests.mkdir(exist_ok=True)
        for name in self.names:
            command = json.dumps(f"{COUNTER} # {self.tag}-{name}")
            body = (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n"
                    f"  - name: c\n    image: busybox:1.36\n    command: [sh, -c, {command}]\n")
            tmp = manifests / f".{name}.tmp"
            tmp.write_text(body)
            tmp.rename(manifests / f"{name}.yaml")

    def start(self) -> None:
        self.runs += 1
        out = (self.base / f"agent-{self.runs}.log").open("wb")
        env = {**os.environ, "PYTHONPATH": str(self.source), "PYTHONUNBUFFERED": "1"}
        self.agent = subprocess.Popen([sys.executable, "-m", "kubeletapi", *self.args], cwd=self.source,
                                      stdout=out, stderr=subprocess.STDOUT, env=env)
        out.close()

    def kill(self) -> None:
        assert self.agent is not None
        self.agent.kill()
        self.agent.wait()
        self.agent = None

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.agent.wait(60)
            if self.agent.poll() is None:
                self.kill()
            self.agent = None

    def pods(self) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(self.url(1, "/pods"), timeout=10) as response:
                return {p["metadata"]["name"].rsplit("-", 1)[0]: p for p in json.load(response)["items"]}
        except OSError:
            return {}

    def all_running(self) -> dict[str, Any] | None:
        pods = self.pods()
        for name in self.names:
            statuses = pods.get(name, {}).get("status", {}).get("containerStatuses") or []
            if not statuses or not all("running" in s["state"] for s in statuses):
                return None
        return pods

    def counters(self) -> dict[str, int]:
        """Pod -> how many counter processes run for it (a counter's fork for `sleep`, caught
        before its exec, is its child, not a copy: left out)."""
        shells = {p.pid: p for p in psutil.process_iter(["cmdline", "ppid"])
                  if (cmd := p.info["cmdline"] or [])[:2] == ["sh", "-c"] and f"# {self.tag}-" in cmd[2]}
        found: dict[str, int] = {}
        for proc in shells.values():
            if proc.info["ppid"] not in shells:
                name = proc.info["cmdline"][2].rsplit("-", 1)[1]
                found[name] = found.get(name, 0) + 1
        return found

    def tagged(self) -> list[int]:
        return [p.pid for p in psutil.process_iter(["cmdline"]) if self.tag in " ".join(p.info["cmdline"] or ())]

    def shims_started(self) -> int:
        return sum(1 for d in self.state.glob("*") if (d / "started").exists() or (d / "exit").exists())

    def unrecorded_starts(self) -> int:
        count = 0
        for d in self.state.glob("*"):
            with contextlib.suppress(OSError, ValueError, KeyError):
                if (d / "shim.pid").exists() and not json.loads((d / "container.json").read_text())["started_at"]:
                    count += 1
        return count


def ids(pods: dict[str, Any]) -> dict[str, str]:
    return {n: s["containerID"] for n, p in pods.items() for s in p["status"]["containerStatuses"]}


def restarts(pods: dict[str, Any]) -> int:
    return sum(s["restartCount"] for p in pods.values() for s in p["status"]["containerStatuses"])


def running_again(node: Node, timeout: float = 300) -> tuple[float, dict[str, Any]]:
    """Start an agent; seconds until every pod runs in /pods, and the pods."""
    began = time.perf_counter()
    node.start()
    found: dict[str, Any] = {}

    def check() -> bool:
        found.update(node.all_running() or {})
        return bool(found)

    wait(check, timeout, 0.05, "every pod running")
    return time.perf_counter() - began, found


def count_duplicates(node: Node, out: Outcome) -> None:
    out.duplicated = max(out.duplicated, sum(1 for n in node.counters().values() if n > 1))


def read_logs(node: Node, out: Outcome) -> None:
    for log in sorted((node.base / "logs").glob("*/*/*.log")):
        numbers = [int(line.split(" ", 3)[3]) for line in log.read_text().splitlines()]
        out.lines += len(numbers)
        if numbers and any(b <= a for a, b in itertools.pairwise(numbers)):
            out.two_writers += 1
        out.lost += max(numbers, default=-1) + 1 - len(set(numbers))


def clean_up(node: Node, out: Outcome) -> None:
    """Remove the manifests, let the agent remove the pods; count what is left."""
    for path in (node.base / "manifests").glob("*.yaml"):
        path.unlink()
    with contextlib.suppress(TimeoutError):
        wait(lambda: not any(node.state.iterdir()), 300, 0.2, "every container removed")
    time.sleep(1)
    out.left_processes = sum(node.counters().values())
    cgroup_root = node.args[node.args.index("--cgroup-root") + 1].strip("/")
    out.left_cgroups = len({p.name for m in Path("/sys/fs/cgroup").iterdir() if (m / cgroup_root).is_dir()
                            for p in (m / cgroup_root).rglob("pod*") if p.is_dir()})


def idle(node: Node) -> Outcome:
    out = Outcome(f"idle: {PODS} pods running")
    node.write_manifests()
    _, pods = running_again(node)
    time.sleep(2)
    for _ in range(KILLS):
        node.kill()
        out.kills += 1
        out.interrupted += node.unrecorded_starts()
        time.sleep(1)
        took, after = running_again(node)
        out.readopt_s.append(took)
        out.restarted += sum(1 for n, cid in ids(after).items() if ids(pods).get(n) != cid)
        count_duplicates(node, out)
        pods = after
        time.sleep(2)
    out.restarted += restarts(pods)
    return out


def burst(node: Node) -> Outcome:
    out = Outcome(f"burst: killed during the starts of {PODS} pods")
    node.write_manifests()
    for k in range(1, KILLS + 1):
        node.start()
        target = PODS * k // (KILLS + 1)
        with contextlib.suppress(TimeoutError):
            wait(lambda t=target: node.shims_started() >= t, 120, 0.002, "the next kill point")
        node.kill()
        out.kills += 1
        out.interrupted += node.unrecorded_starts()
    took, pods = running_again(node)
    out.readopt_s.append(took)
    time.sleep(2)
    count_duplicates(node, out)
    out.restarted += restarts(pods)
    return out


def run(scenario: Callable[[Node], Outcome], source: Path) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="crash-bench-") as tmp:
        node = Node(Path(tmp), source)
        try:
            out = scenario(node)
            time.sleep(1)  # a second writer shows in the logs
            read_logs(node, out)
            clean_up(node, out)
        finally:
            node.stop()
            purge(node.args)
            for pid in node.tagged():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    print(out, flush=True)
    return out


def export(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def row(out: Outcome, label: str) -> str:
    adopt = (f"{pct(out.readopt_s, 50):.1f} / {max(out.readopt_s):.1f} s" if len(out.readopt_s) > 1
             else f"{out.readopt_s[0]:.1f} s")
    return (f"| {label} | {out.kills} | {out.interrupted} | {out.duplicated} | {out.restarted} | "
            f"{out.lines:,} / {out.lost} | {out.two_writers} | {adopt} | {out.left_processes} / {out.left_cgroups} |")


def write_results(rows: list[str], before: str | None, loads: tuple[str, str]) -> str:
    cmd = "python bench/crash_bench.py" + (f" --before {before}" if before else "")
    lines = [
        f"## {SECTION}, {PODS} pods, idle and during a burst of starts, {dt.date.today().isoformat()}",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, as "
        f"{'root (cgroups + namespaces)' if os.geteuid() == 0 else 'non-root'}; load average (1/5/15 min) "
        f"before: {loads[0]}, after: {loads[1]}. `{cmd}` reproduces it. Each container runs a counter (one "
        f"line every 0.1 s); {KILLS} kill -9 per scenario. Idle: 1 s without an agent, then a new one; "
        "re-adopt = new agent started to all pods running in /pods. Burst: the agent killed once "
        f"1/{KILLS + 1}, 2/{KILLS + 1} ... {KILLS}/{KILLS + 1} of the containers recorded a start (a new agent "
        "each time); re-adopt = last agent started to all running. Starts cut by a kill = containers whose "
        "shim ran while the runtime's record said they never started, counted at each kill and summed (the "
        "window of defect 3). Duplicated = pods with more than one counter process; restarted = restartCount plus "
        "container ids changed by a restart; lost = gaps in a log's counter; two writers = a log whose "
        "counter goes back. Left = counter processes, and pods with a cgroup, still there once the manifests "
        "are removed and the agent removed every container.",
        "",
        "| scenario | kills | starts cut by a kill | containers duplicated | restarted | log lines / lost | "
        "logs with two writers | re-adopt p50 / max | left: processes / pod cgroups |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        "",
    ]
    return "\n".join(lines)


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run the burst on the code of this git revision")
    parser.add_argument("--print-only", action="store_true")
    opts = parser.parse_args()
    before_load = load()
    rows = [row(run(idle, ROOT), "idle"), row(run(burst, ROOT), "burst")]
    if opts.before:
        with tempfile.TemporaryDirectory(prefix="crash-bench-src-") as src:
            rows.append(row(run(burst, export(opts.before, Path(src))), f"burst, before the fix ({opts.before})"))
    section = write_results(rows, opts.before, (before_load, load()))
    print(section)
    if not opts.print_only:
        update_section(SECTION, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
