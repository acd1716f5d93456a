"""The agent's memory and module footprint right after start, per configuration.

Starts `python -m kubeletapi` as a real process (tests/helpers.AgentProcess) with no pods in three
configurations: standalone with the process runtime; standalone with --container-runtime=remote
against a private containerd (tests/cri/containerd.py; root, `make deb`); apiserver mode
(--kubeconfig to tests/apiserver_double.py, which answers the node's registration 404: the
cluster wiring is built and keeps retrying). Each is started REPEAT times, each time on a fresh
root and cert dir and then once more on the files that start left (a restart), and measured
once /healthz answers and SETTLE_S have passed: RSS and USS
(psutil's memory_full_info) and the resident pages of the big shared objects it mapped
(/proc/PID/smaps). `modules`: how many modules a process building the Kubelet from the same flags
has imported once started (tests/importprobe.py, as tests/e2e/test_cli_imports.py uses it). Prints the
medians; with --markdown, the table as bench/results.md shows it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests: the agent process, the API double

from tests.apiserver_double import APIServerDouble
from tests.helpers import LOOPBACK, AgentProcess, agent_args, purge

ROOT = Path(__file__).resolve().parent.parent
REPEAT = 3
SETTLE_S = 3.0
LIBS = ("grpc", "cryptography", "pydantic_core", "libcrypto", "libssl", "libpython", "uvloop")


def measure(args: list[str], tmp: Path) -> dict[str, float]:
    agent = AgentProcess(args, log=tmp / "agent.log")
    try:
        agent.wait_healthy(f"http://{LOOPBACK}:{args[args.index('--healthz-port') + 1]}/healthz", timeout=60)
        time.sleep(SETTLE_S)
        proc = psutil.Process(agent.proc.pid)
        mem = proc.memory_full_info()
        mapped = _mapped_libs(agent.proc.pid)
    finally:
        agent.stop()
    return {"rss": mem.rss / 2**20, "uss": mem.uss / 2**20, **mapped}


def _mapped_libs(pid: int) -> dict[str, float]:
    """RSS (MiB) of the mapped files whose path names one of LIBS, from /proc/PID/smaps."""
    out = dict.fromkeys(LIBS, 0.0)
    current: str | None = None
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(maxsplit=5)
        if "-" in first[0] and len(first) >= 5:
            path = first[5] if len(first) == 6 else ""
            current = next((lib for lib in LIBS if lib in path.rsplit("/", 1)[-1] or f"/{lib}/" in path), None)
        elif current is not None and first[0] == "Rss:":
            out[current] += int(first[1]) / 1024
    return out


def modules(args: list[str]) -> int:
    """How many modules an agent started with these flags has imported (tests/importprobe.py)."""
    try:
        out = subprocess.run([sys.executable, "-m", "tests.importprobe", *args], capture_output=True, text=True,
                             check=True, timeout=120, cwd=ROOT)
    finally:
        purge(args)
    return len(json.loads(out.stdout))


@contextmanager
def standalone(tmp: Path) -> Iterator[list[str]]:
    yield []


@contextmanager
def cri(tmp: Path) -> Iterator[list[str]]:
    from tests.cri import containerd, images  # noqa: PLC0415 - only this configuration needs them

    daemon = containerd.PrivateContainerd()
    daemon.start()
    try:
        daemon.import_images(images.build_all())
        yield ["--container-runtime=remote", f"--container-runtime-endpoint={daemon.endpoint}"]
    finally:
        daemon.stop()


@contextmanager
def apiserver(tmp: Path) -> Iterator[list[str]]:
    double = APIServerDouble(tmp, {}, set())
    try:
        yield ["--kubeconfig", str(double.kubeconfig)]
    finally:
        double.close()


CONFIGS: dict[str, Callable[[Path], Any]] = {
    "standalone, process runtime": standalone,
    "standalone, CRI (containerd)": cri,
    "apiserver mode (--kubeconfig), process runtime": apiserver,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--only", choices=list(CONFIGS), action="append")
    ns = ap.parse_args()
    rows = []
    for name, config in CONFIGS.items():
        if ns.only and name not in ns.only:
            continue
        runs: dict[str, list[dict[str, float]]] = {"first start": [], "restart": []}
        counts: dict[str, int] = {}
        with tempfile.TemporaryDirectory(prefix="kfoot-") as d, config(Path(d)) as extra:
            probe = agent_args(Path(d) / "probe", *extra)
            counts = {"first start": modules(probe), "restart": modules(probe)}
            for i in range(REPEAT):
                run_dir = Path(d) / f"run{i}"
                run_dir.mkdir()
                args = agent_args(run_dir, *extra)
                try:
                    for measured in runs.values():  # a first start on fresh dirs, then a restart on its files
                        measured.append(measure(args, run_dir))
                finally:
                    purge(args)
        for start, measured in runs.items():
            med = {k: statistics.median(r[k] for r in measured) for k in measured[0]}
            rows.append((f"{name}, {start}", counts[start], med))
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    if ns.markdown:
        print(f"Load average after: {load}. Medians of {REPEAT} starts, {SETTLE_S:.0f} s after /healthz answered.\n")
        print("| configuration | modules | RSS | USS | " + " | ".join(LIBS) + " |")
        print("|---|---:|---:|---:|" + "---:|" * len(LIBS))
    for name, count, med in rows:
        libs = " | ".join(f"{med[lib]:.1f}" for lib in LIBS)
        if ns.markdown:
            print(f"| {name} | {count} | {med['rss']:.1f} MiB | {med['uss']:.1f} MiB | {libs} |")
        else:
            print(f"{name}: {count} modules, RSS {med['rss']:.1f} MiB, USS {med['uss']:.1f} MiB; mapped RSS (MiB) "
                  + ", ".join(f"{lib} {med[lib]:.1f}" for lib in LIBS))
    if not ns.markdown:
        print(f"load average: {load}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
