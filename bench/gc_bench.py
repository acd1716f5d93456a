"""Container GC of 1,000 dead containers (issue 18), on the process runtime.

100 pods, each with one container that has exited 10 times (attempts 0-9, real shims running
`true`, each with its log file): 1,000 dead containers. Two passes of ContainerGC.garbage_collect
with the kubelet's default policy, each on a fresh set:

- live pods: each container keeps its two newest instances (what the status reads): 800 removed;
- gone pods (no source defines them, their sandboxes stopped as a removed pod's are): every
  container, the 100 sandboxes and the 100 log directories removed.

Measured: the pass's wall time and the agent process's CPU time during it, and the decision alone
(containergc.select over the 1,000, median of 200 runs). Not root-dependent: the runtime runs
without cgroups or namespaces (GC's cost is the runtime's records, files and logs, not cgroups).

`python bench/gc_bench.py` writes its section of bench/results.md (--print-only: nothing written);
BENCH_PODS and BENCH_INSTANCES change the sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import itertools
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kubeletapi.clock import RealClock
from kubeletapi.pods.containergc import ContainerGC, Dead, GCPolicy, select
from kubeletapi.pods.loggc import LogGC
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_md import update_section

PODS = int(os.environ.get("BENCH_PODS", "100"))
INSTANCES = int(os.environ.get("BENCH_INSTANCES", "10"))
SECTION = "Container GC (issue 18)"


class Pods:
    def __init__(self, known: set[str]) -> None:
        self._known = known

    def known(self, uid: str) -> bool:
        return uid in self._known

    def sources_not_ready(self) -> str | None:
        return None


async def _pod(runtime: ProcessRuntime, logs: Path, index: int) -> str:
    uid = f"bench{index:05d}"
    sandbox = await runtime.run_pod_sandbox(rt.SandboxConfig(
        meta=rt.PodMeta(f"p{index}", "default", uid), hostname="p", log_directory=str(logs / f"default_p{index}_{uid}"),
        cgroup_parent=""))
    for attempt in range(INSTANCES):
        cid = await runtime.create_container(sandbox, rt.ContainerConfig(
            name="c", attempt=attempt, image="busybox", command=("true",), log_path=f"c/{attempt}.log",
            labels={rt.POD_UID: uid, rt.CONTAINER_NAME: "c"}))
        await runtime.start_container(cid)
    return uid


async def _setup(base: Path) -> tuple[ProcessRuntime, Path, set[str], float]:
    runtime = ProcessRuntime(base / "state", shim_path(), RealClock())
    logs = base / "logs"
    t0 = time.monotonic()
    uids: set[str] = set()
    for start in range(0, PODS, 10):
        uids |= set(await asyncio.gather(*(_pod(runtime, logs, i) for i in range(start, min(start + 10, PODS)))))
    await _all_exited(runtime)
    return runtime, logs, uids, time.monotonic() - t0


async def _all_exited(runtime: ProcessRuntime) -> None:
    """Polled: the runtime has no exit notification to wait on."""
    for _ in itertools.count():
        if all(c.state is rt.ContainerState.EXITED for c in await runtime.list_containers()):
            return
        await asyncio.sleep(0.05)


async def _pass(live: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="gcbench-") as tmp:
        runtime, logs, uids, setup_s = await _setup(Path(tmp))
        if not live:  # as a removed pod's: killed, its sandbox stopped
            for sandbox in await runtime.list_pod_sandboxes():
                await runtime.stop_pod_sandbox(sandbox.id)
        dead = len(await runtime.list_containers())
        gc = ContainerGC(runtime, Pods(uids if live else set()), GCPolicy(), RealClock(),
                         LogGC(logs, RealClock(), retention_s=0))
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = await gc.garbage_collect()
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        left = len(await runtime.list_containers())
        for sandbox in await runtime.list_pod_sandboxes():
            await runtime.remove_pod_sandbox(sandbox.id)
    return {"dead": dead, "removed": result.containers, "left": left, "sandboxes": result.sandboxes,
            "log_dirs": result.log_dirs, "wall_s": wall, "cpu_s": cpu, "setup_s": setup_s}


def _select_time() -> float:
    now = time.time_ns()
    dead = [Dead(f"c{p}-{a}", f"u{p}", "c", now - (INSTANCES - a) * 10**9, a)
            for p in range(PODS) for a in range(INSTANCES)]
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        select(dead, GCPolicy(), now, lambda uid: False, True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _section(rows: dict[str, dict[str, float]], select_s: float, load: float) -> str:
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    lines = [
        f"## {SECTION}, {PODS * INSTANCES} dead containers, {today}", "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, process runtime without cgroups. "
        f"{PODS} pods x 1 container x {INSTANCES} exited instances (real shims, one log file each); one "
        "ContainerGC pass with the kubelet's default policy (minAge 0, 1 per container, no total limit); "
        f"wall and CPU time of the pass (load average {load:.1f} when it started: other work shares the "
        "cores, the CPU time is the steadier figure). `python bench/gc_bench.py` reproduces it.", "",
        "| pods | dead before | removed | left | sandboxes removed | log dirs removed | pass wall | pass CPU | "
        "per container |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        per = r["wall_s"] / r["removed"] * 1000 if r["removed"] else 0.0
        lines.append(f"| {name} | {r['dead']:.0f} | {r['removed']:.0f} | {r['left']:.0f} | {r['sandboxes']:.0f} | "
                     f"{r['log_dirs']:.0f} | {r['wall_s'] * 1000:.0f} ms | {r['cpu_s'] * 1000:.0f} ms | "
                     f"{per:.2f} ms |")
    lines += ["", f"The decision alone (containergc.select over the {PODS * INSTANCES}): "
                  f"{select_s * 1000:.2f} ms (median of 200)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print-only", action="store_true")
    ns = parser.parse_args()
    load = os.getloadavg()[0]
    rows = {"gone (no source defines them)": asyncio.run(_pass(live=False)),
            "live (the status keeps 2 each)": asyncio.run(_pass(live=True))}
    body = _section(rows, _select_time(), load)
    print(body)
    if not ns.print_only:
        update_section(SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
