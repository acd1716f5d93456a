"""kubelet_vs_bench's section of bench/results.md: every figure of both nodes and their ratio."""

from __future__ import annotations

import datetime as dt
import math
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

from benchkit import pct
from stats_bench import machine

Fig = Any  # kubelet_vs_bench.Figures (not imported: that module is the script)


def p(values: Sequence[float], q: float) -> float:
    return pct(values, q) if values else math.nan


def ratio(ours: float, theirs: float) -> str:
    if math.isnan(ours) or math.isnan(theirs) or theirs <= 0:
        return "n/a"
    return f"{ours / theirs:.2f}x"


def verdict(ours: float, theirs: float, at_most: float | None) -> str:
    if at_most is None:
        return ""
    if math.isnan(ours) or math.isnan(theirs) or theirs <= 0:
        return f"<= {at_most:g}x: n/a"
    return f"<= {at_most:g}x: {'yes' if ours <= at_most * theirs else '**no**'}"


class Table:
    def __init__(self, kubelet: Fig, ours: Fig) -> None:
        self.kubelet, self.ours = kubelet, ours
        self.lines = ["| measure | kubelet | kubeletapi | kubeletapi / kubelet | goal |", "|---|---:|---:|---:|---|"]

    def row(self, what: str, get: Callable[[Fig], float], unit: str, digits: int = 1,
            at_most: float | None = None) -> None:
        theirs, ours = get(self.kubelet), get(self.ours)
        fmt = f"{{:.{digits}f}} {unit}".rstrip()
        self.lines.append(f"| {what} | {fmt.format(theirs)} | {fmt.format(ours)} | {ratio(ours, theirs)} | "
                          f"{verdict(ours, theirs, at_most)} |")


def pod_rows(t: Table, counts: tuple[int, int], singles: int) -> None:
    t.row(f"one pod, Running in /pods: p50 ({singles} pods)", lambda f: p(f.single_ms, 50), "ms", 0, 1.0)
    t.row("one pod, Running in /pods: p99", lambda f: p(f.single_ms, 99), "ms", 0)
    t.row("one pod, container started (containerd): p50", lambda f: p(f.single_runtime_ms, 50), "ms", 0, 1.0)
    t.row("one pod, container started (containerd): p99", lambda f: p(f.single_runtime_ms, 99), "ms", 0)
    for n, size in ((counts[0], counts[0] - singles), (counts[1], counts[1] - counts[0])):
        what = f"burst of {size} pods (to {n})"
        t.row(f"{what}, Running in /pods: p50", lambda f, n=n: p(f.bursts[n].pods_ms, 50), "ms", 0)
        t.row(f"{what}, Running in /pods: p99 (last)", lambda f, n=n: p(f.bursts[n].pods_ms, 99), "ms", 0)
        t.row(f"{what}, container started: p50", lambda f, n=n: p(f.bursts[n].runtime_ms, 50), "ms", 0)
        t.row(f"{what}, container started: p99", lambda f, n=n: p(f.bursts[n].runtime_ms, 99), "ms", 0)
        t.row(f"{what}: node CPU until all Running", lambda f, n=n: f.bursts[n].cpu_s, "s", 2)
        t.row(f"{what}: containerd CPU until all Running", lambda f, n=n: f.bursts[n].containerd_s, "s", 2)


def level_rows(t: Table, n: int, endpoints: Sequence[str]) -> None:
    def lv(f: Fig) -> Any:
        return f.levels[n]

    t.row(f"**{n} pods**: idle CPU (core)", lambda f: lv(f).idle_core * 100, "% core", 2, 1.0)
    t.row(f"{n} pods: containerd idle CPU", lambda f: lv(f).idle_containerd_core * 100, "% core", 2)
    t.row(f"{n} pods: the containerd shims' idle CPU (with the runc they ran)",
          lambda f: lv(f).idle_shims_core * 100, "% core", 2)
    t.row(f"{n} pods: idle CPU, node + containerd + shims",
          lambda f: (lv(f).idle_core + lv(f).idle_containerd_core + lv(f).idle_shims_core) * 100, "% core", 2, 1.0)
    t.row(f"{n} pods: RSS, idle", lambda f: lv(f).rss_idle_mib, "MiB", 0, 1.0)
    t.row(f"{n} pods: RSS, after the scrapes", lambda f: lv(f).rss_after_mib, "MiB", 0, 1.0)
    t.row(f"{n} pods: USS (private memory), idle", lambda f: lv(f).uss_idle_mib, "MiB", 0)
    t.row(f"{n} pods: cgroups on the host (cpu hierarchy) during the idle window", lambda f: lv(f).host_cgroups, "", 0)
    t.row(f"{n} pods: CPU per scrape, all in (one scraper of the 3 endpoints per cycle)",
          lambda f: lv(f).all_in_cpu_ms, "ms", 1, 0.5)
    t.row(f"{n} pods: containerd CPU per scrape, all in", lambda f: lv(f).all_in_containerd_ms, "ms", 1)
    for path in endpoints:
        t.row(f"{n} pods: {path} first after a cycle, request CPU p50",
              lambda f, path=path: p(lv(f).first_cpu_ms.get(path, []), 50), "ms", 2, 0.5)
        t.row(f"{n} pods: {path} first after a cycle, latency p50",
              lambda f, path=path: p(lv(f).first_ms.get(path, []), 50), "ms", 1)
        t.row(f"{n} pods: {path} warm, CPU per request",
              lambda f, path=path: lv(f).warm_cpu_ms.get(path, math.nan), "ms", 2, 0.5)
        t.row(f"{n} pods: {path} warm, latency p50 / p99",
              lambda f, path=path: p(lv(f).warm_ms.get(path, []), 50), "ms", 1)
        t.row(f"{n} pods: {path} warm, containerd CPU per request",
              lambda f, path=path: lv(f).warm_containerd_ms.get(path, math.nan), "ms", 2)
    t.row(f"{n} pods: /healthz requests per second (one keep-alive client)", lambda f: lv(f).healthz_rps, "/s", 0)
    t.row(f"{n} pods: /healthz CPU per request", lambda f: lv(f).healthz_cpu_us, "us", 0)
    t.row(f"{n} pods: restart: SIGTERM to exit", lambda f: lv(f).readopt.get("stop", math.nan), "s", 2)
    t.row(f"{n} pods: restart: start to /healthz ok", lambda f: lv(f).readopt.get("healthy", math.nan), "s", 2)
    t.row(f"{n} pods: restart: start to every pod Running in /pods",
          lambda f: lv(f).readopt.get("running", math.nan), "s", 2)
    if any("summary" in f.levels[n].readopt for f in (t.kubelet, t.ours)):
        t.row(f"{n} pods: restart: start to the summary listing every pod with a CPU rate",
              lambda f: lv(f).readopt.get("summary", math.nan), "s", 1)


def versions(kubelet: Fig, ours: Fig) -> str:
    def first_line(*argv: str) -> str:
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
        text = (out.stdout or out.stderr).strip()
        return text.splitlines()[0] if text else "?"
    return (f"{kubelet.version}; {ours.version}; {first_line('containerd', '--version')}; "
            f"{first_line('runc', '--version')}")


def render(section: str, plan: Any, figures: list[Fig], loads: Sequence[str], took_s: float, quick: bool,
           endpoints: Sequence[str], method: str) -> str:
    """`method`: the script's docstring (its paragraphs 2 to 5 describe the method)."""
    kubelet, ours = figures
    table = Table(kubelet, ours)
    pod_rows(table, plan.counts, plan.singles)
    for n in plan.counts:
        level_rows(table, n, endpoints)
    paragraphs = [" ".join(para.split()) for para in method.split("\n\n")[1:5]]
    head = [
        f"## {section}{' (QUICK smoke run)' if quick else ''}, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"Machine: {machine()}. {versions(kubelet, ours)}. Load average (1/5/15 min) before: {loads[0]}; after: "
        f"{loads[1]}. The run took {took_s / 60:.1f} min. `python bench/kubelet_vs_bench.py` (as root) reproduces "
        "it (`--quick`: a smoke run that writes nothing).",
        "",
        "Method. " + " ".join(paragraphs),
        f"Idle: {plan.idle_s:g} s; first-after-a-cycle rounds: {plan.rounds}; warm requests per endpoint: "
        f"{plan.warm}; /healthz: {plan.healthz_s:g} s. CPU of the kubelet: its process (all threads); of "
        "kubeletapi: the agent process and its children (none with the remote runtime); containerd's daemon "
        "is measured apart (not its shims).",
        "",
    ]
    return "\n".join([*head, *table.lines, ""])
