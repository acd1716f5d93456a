"""kill -9 of the agent in the middle of a burst of container starts (issue 13, defect 3).

A real agent (process runtime, as root with cgroups and namespaces when possible) starts a burst
of pods and is SIGKILLed at seeded moments of the burst, several times in a row; a last agent
then brings every pod up. Whatever moment the kill fell on (a sandbox being made, a container
created and not started, a shim launched and not yet read back), every container must run as
exactly one process, its log written by that one process (each log file one unbroken sequence
of the counter), nothing restarted, and once the manifests are gone no process, cgroup or state
record may be left.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import time
import uuid
from pathlib import Path

import psutil
import pytest

from kubeletapi.cgroups import detect
from tests.e2e.test_pods_restart import all_running, flag, pod_list
from tests.helpers import LOOPBACK, AgentProcess, agent_args, purge
from tests.podtools import container, manifest, wait_for, write

pytestmark = pytest.mark.e2e

SEED = 13
PODS = 30
ROUNDS = 6
COUNTER = "i=0; while :; do echo $i; i=$((i+1)); sleep 0.1; done"


def started_shims(state: Path) -> int:
    """Containers whose shim recorded a start (or an exit) in the runtime's state dir."""
    return sum(1 for d in state.glob("*") if (d / "started").exists() or (d / "exit").exists())


def unrecorded_starts(state: Path) -> int:
    """Containers whose shim ran while the runtime's record says the container never started:
    what a kill in the middle of a start leaves (the window of the defect)."""
    count = 0
    for d in state.glob("*"):
        with contextlib.suppress(OSError, ValueError):
            if (d / "shim.pid").exists() and not json.loads((d / "container.json").read_text())["started_at"]:
                count += 1
    return count


def apps(tag: str) -> dict[str, list[int]]:
    """Pod name -> pids of its container's program (`sh -c '<counter> # <tag>-<pod>'`). A shell
    forked by the counter to run `sleep`, caught before its exec, is the counter's child, not a copy."""
    shells = {p.pid: p for p in psutil.process_iter(["cmdline", "ppid"])
              if (cmd := p.info["cmdline"] or [])[:2] == ["sh", "-c"] and f"# {tag}-" in cmd[2]}
    found: dict[str, list[int]] = {}
    for pid, proc in shells.items():
        if proc.info["ppid"] not in shells:
            found.setdefault(proc.info["cmdline"][2].rsplit("-", 1)[1], []).append(pid)
    return found


def processes_with(tag: str) -> list[int]:
    """Every process whose command line carries the tag: programs, shims, inits."""
    return [p.pid for p in psutil.process_iter(["cmdline"]) if tag in " ".join(p.info["cmdline"] or ())]


def counter_breaks(log_dir: Path) -> list[str]:
    """Log files that are not one unbroken counter 0, 1, 2...: two writers, or lost lines."""
    broken = []
    for log in sorted(log_dir.glob("*/*/*.log")):
        numbers = [int(line.split(" ", 3)[3]) for line in log.read_text().splitlines()]
        if numbers != list(range(len(numbers))):
            broken.append(f"{log}: {numbers[:12]}...")
    return broken


def pod_cgroups(cgroup_root: str) -> list[Path]:
    """Pod and container cgroups left under the agent's cgroup root, in every hierarchy."""
    left = []
    for mount in detect().mount_points:
        base = mount / cgroup_root.strip("/")
        left += [p for p in base.rglob("pod*") if p.is_dir()] if base.is_dir() else []
    return left


def kill_during_burst(args: list[str], state: Path, rng: random.Random) -> int:
    """Start an agent and SIGKILL it once `rng` more shims recorded a start (or the burst is
    over); how many starts it left unrecorded."""
    target = started_shims(state) + rng.randint(0, PODS // 4)
    agent = AgentProcess(args)
    try:
        deadline = time.monotonic() + 30
        while started_shims(state) < min(target, PODS) and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.03))
    finally:
        agent.kill()
    return unrecorded_starts(state)


def test_kill_9_during_a_burst_of_starts_never_duplicates_or_leaks(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    manifests, logs = tmp_path / "manifests", tmp_path / "logs"
    state = tmp_path / "root" / "runtime" / "process" / "containers"
    args = agent_args(tmp_path, "--pod-manifest-path", str(manifests))
    tag = uuid.uuid4().hex[:12]
    names = [f"b{i:02d}" for i in range(PODS)]
    for name in names:
        write(manifests, f"{name}.yaml", manifest(name, container("c", ["sh", "-c", f"{COUNTER} # {tag}-{name}"])))
    agent: AgentProcess | None = None
    try:
        interrupted = [kill_during_burst(args, state, rng) for _ in range(ROUNDS)]
        assert sum(interrupted) > 0, "no kill fell inside a start: the test proves nothing"
        agent = AgentProcess(args)
        agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
        pods = wait_for(lambda: all_running(args, names), timeout=60, interval=0.2, what="every pod running")
        time.sleep(0.5)  # a duplicate started by the last agent shows in the process table and logs
        running = apps(tag)
        assert {n: p for n, p in running.items() if len(p) != 1} == {}, "a container runs twice"
        assert sorted(running) == names
        restarts = {n: s["restartCount"] for n in names for s in pods[f"{n}-testnode"]["status"]["containerStatuses"]}
        assert {n: r for n, r in restarts.items() if r} == {}, "a container was restarted"
        assert counter_breaks(logs) == [], "a log was written by two processes, or lost lines"
        for name in names:
            (manifests / f"{name}.yaml").unlink()
        # /pods drops a pod when its manifest goes; the runtime's clean-up follows.
        wait_for(lambda: not pod_list(args), timeout=60, interval=0.2, what="every pod removed")
        wait_for(lambda: not list(state.iterdir()) and not list((state.parent / "sandboxes").iterdir()),
                 timeout=60, interval=0.2, what="every state record removed")
        assert processes_with(tag) == []
        assert pod_cgroups(flag(args, "--cgroup-root")) == []
    finally:
        if agent is not None:
            agent.stop()
        # First what the runtime lost track of (the defect this test is about): purge then finds
        # the cgroups empty and removes them.
        for pid in processes_with(tag):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(AssertionError):
            wait_for(lambda: not processes_with(tag), timeout=10, what="the killed processes to exit")
        purge(args)
