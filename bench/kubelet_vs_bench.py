"""Head to head: the real kubelet and kubeletapi on the same machine, the same containerd build, the
same pods. Writes its section of bench/results.md (not with --quick, a smoke run).

Needs root, containerd, runc, umoci, busybox-static, gcc (`make deb`) and the kubelet binary (`make
cluster-bin`). Two private containerd instances (tests/cri/containerd.py), one per node, both up for
the whole run; the real kubelet (tests/oracle/realkubelet.py: standalone on loopback, cgroupfs, its
own cgroup root, every host side effect undone by its stop()) on the first, `python -m kubeletapi
--container-runtime=remote` as a real process (tests/helpers.AgentProcess) on the second. Both at
their defaults otherwise: 10 s housekeeping, maxPods 110. One node is measured at a time (the other
has no pods and is stopped), kubelet first:

1. pod start: SINGLES pods written one at a time (each waited for), then a burst up to 30 pods;
2. at 30 pods: idle CPU over IDLE_S (nothing asked of the node since it started), scrapes, /healthz;
3. restart (SIGTERM, start on the same state): re-adoption of 30 pods;
4. a burst up to 110 pods; after the restart nothing had asked for stats: idle, scrapes, /healthz;
5. restart: re-adoption of 110 pods, until the summary lists them all again.

Pods: host network, localhost/busybox:latest, `sleep 86400`, grace 1 s. A pod's start latency runs
from the atomic rename of its manifest into the static pod dir to (a) the first /pods response (read-only
port) showing it Running with its container running, polled every 10 ms (one pod) or 100 ms (a burst),
and (b) its container's start time as containerd reports it (CRI ContainerStatus.started_at).

Scrapes (read-only port, one keep-alive connection): `first` = ROUNDS rounds, one per housekeeping
interval, of one request per endpoint (order rotated): the first request of each after a cycle; the
request's CPU (the node's threads' run time while it ran), and the CPU per scrape all in: (CPU over
the rounds - idle rate x their time) / requests, which counts what the node does for its scrapers
between requests too (kubeletapi renders a body ahead in every cycle for 5 minutes after it was asked
for). `warm` = WARM back-to-back requests per endpoint: CPU per request (minus the idle rate).

`--profile` (needs `pip install py-spy` in the venv): kubeletapi alone, py-spy recording its idle
window and its scrapes at 110 pods, and its RSS by mapping; printed, nothing written.

^C or SIGTERM unwinds through every clean-up: pods removed through CRI, cgroup roots, the kubelet's
mounts and kernel tunables (RealKubelet.stop), both containerd, leftovers checked as cri_bench does.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
import vsnodes
import vsreport
from benchkit import Client
from cri_bench import Trash, kill_own_leftovers, leftovers, preflight
from results_md import update_section
from stats_bench import load
from vsnodes import NODE, KubeletNode, Node, OursNode, cpu_ns, cpu_s, daemon_pid, rss_mib

from tests.oracle.pair import node_pki, start_containerds
from tests.oracle.realkubelet import Serving

SECTION = "Head to head with the kubelet (issue 17)"
ENDPOINTS = ("/metrics/cadvisor", "/stats/summary", "/metrics/resource")
INTERVAL_S = 10.0  # both nodes' housekeeping (the kubelet's cAdvisor default, kubeletapi's default)


@dataclass(frozen=True)
class Plan:
    counts: tuple[int, int] = (30, 110)
    singles: int = 8
    idle_s: float = 60.0
    rounds: int = 4
    warm: int = 20
    healthz_s: float = 5.0
    settle_s: float = 20.0  # after pods are Running, before measuring: two housekeeping cycles


QUICK = Plan(counts=(3, 6), singles=2, idle_s=5.0, rounds=1, warm=3, healthz_s=1.0, settle_s=12.0)


def manifest(name: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: bench\nspec:\n  hostNetwork: true\n"
            "  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: localhost/busybox:latest\n"
            "    imagePullPolicy: IfNotPresent\n    command: [sleep, '86400']\n")


@dataclass
class Level:
    """What was measured at one pod count."""

    idle_core: float = 0.0
    idle_containerd_core: float = 0.0
    idle_shims_core: float = 0.0
    rss_idle_mib: float = 0.0
    uss_idle_mib: float = 0.0  # memory only this process has (no shared library or binary pages)
    host_cgroups: int = 0  # cgroups in the host's cpu hierarchy (the kubelet's cAdvisor watches them all)
    rss_after_mib: float = 0.0
    first_ms: dict[str, list[float]] = field(default_factory=dict)  # request latency
    first_cpu_ms: dict[str, list[float]] = field(default_factory=dict)  # request's own CPU
    all_in_cpu_ms: float = 0.0  # per scrape, rounds' CPU minus idle
    all_in_containerd_ms: float = 0.0
    warm_ms: dict[str, list[float]] = field(default_factory=dict)
    warm_cpu_ms: dict[str, float] = field(default_factory=dict)
    warm_containerd_ms: dict[str, float] = field(default_factory=dict)
    healthz_rps: float = 0.0
    healthz_cpu_us: float = 0.0
    readopt: dict[str, float] = field(default_factory=dict)  # stop, healthy, pods Running, summary


@dataclass
class Burst:
    pods_ms: list[float]  # write -> Running in /pods
    runtime_ms: list[float]  # write -> container started (containerd)
    cpu_s: float = 0.0
    containerd_s: float = 0.0


@dataclass
class Figures:
    name: str
    single_ms: list[float] = field(default_factory=list)
    single_runtime_ms: list[float] = field(default_factory=list)
    bursts: dict[int, Burst] = field(default_factory=dict)
    levels: dict[int, Level] = field(default_factory=dict)
    version: str = ""


# --- pod start ------------------------------------------------------------------------------------
def write_pods(node: Node, names: list[str]) -> float:
    """Manifests renamed into the static pod dir at once; the wall time of the renames."""
    tmps = []
    for name in names:
        tmp = node.manifests / f".{name}.tmp"
        tmp.write_text(manifest(name))
        tmps.append(tmp)
    at = time.time()
    for name, tmp in zip(names, tmps, strict=True):
        tmp.rename(node.manifests / f"{name}.yaml")
    return at


def until_running(client: Client, names: list[str], written: float, poll_s: float) -> dict[str, float]:
    """ms from `written` to the /pods response showing each pod Running."""
    pods = {f"{n}-{NODE}" for n in names}
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 120 + len(names)
    while len(seen) < len(pods):
        now_running = vsnodes.running(client.json("/pods")["items"] or []) & pods
        now = time.time()
        for pod in now_running - seen.keys():
            seen[pod] = (now - written) * 1000
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark: {len(seen)} of {len(pods)} pods Running")
        time.sleep(poll_s)
    return seen


def runtime_ms(node: Node, written: dict[str, float]) -> list[float]:
    started = vsnodes.start_times(node.daemon.endpoint)
    return [(started[pod] - at) * 1000 for pod, at in written.items() if pod in started]


def pod_start(node: Node, plan: Plan, out: Figures, client: Client) -> None:
    """SINGLES pods one at a time, then a burst up to the first count."""
    written = {}
    for i in range(plan.singles):
        name = f"s{i:03d}"
        at = write_pods(node, [name])
        out.single_ms += until_running(client, [name], at, 0.01).values()
        written[f"{name}-{NODE}"] = at
    out.single_runtime_ms = runtime_ms(node, written)
    burst(node, [f"b{i:03d}" for i in range(plan.counts[0] - plan.singles)], out, client, plan.counts[0])


def burst(node: Node, names: list[str], out: Figures, client: Client, count: int) -> None:
    cpu0, ctd0 = cpu_s(node.pid), cpu_s(daemon_pid(node.daemon))
    at = write_pods(node, names)
    seen = until_running(client, names, at, 0.1)
    out.bursts[count] = Burst(list(seen.values()), runtime_ms(node, dict.fromkeys(seen, at)),
                              cpu_s(node.pid) - cpu0, cpu_s(daemon_pid(node.daemon)) - ctd0)


# --- one pod count ---------------------------------------------------------------------------------
def idle(node: Node, plan: Plan, level: Level) -> None:
    ctd = daemon_pid(node.daemon)
    cpu0, ctd0, shims0, t0 = cpu_s(node.pid), cpu_s(ctd), vsnodes.shims_cpu_s(node.daemon), time.monotonic()
    time.sleep(plan.idle_s)
    elapsed = time.monotonic() - t0
    level.idle_core = (cpu_s(node.pid) - cpu0) / elapsed
    level.idle_containerd_core = (cpu_s(ctd) - ctd0) / elapsed
    level.idle_shims_core = (vsnodes.shims_cpu_s(node.daemon) - shims0) / elapsed
    level.rss_idle_mib, level.uss_idle_mib = rss_mib(node.pid), vsnodes.uss_mib(node.pid)
    level.host_cgroups = vsnodes.host_cgroups()


def first_scrapes(node: Node, plan: Plan, level: Level, client: Client) -> None:
    """ROUNDS rounds, one per housekeeping interval, of one request per endpoint."""
    ctd = daemon_pid(node.daemon)
    cpu0, ctd0, t0 = cpu_s(node.pid), cpu_s(ctd), time.monotonic()
    for r in range(plan.rounds):
        vsnodes.sleep_until(t0 + (r + 1) * (INTERVAL_S + 0.5))
        order = ENDPOINTS[r % 3:] + ENDPOINTS[:r % 3]
        for path in order:
            ns0 = cpu_ns(node.pid)
            ms = client.get(path)[0]
            level.first_cpu_ms.setdefault(path, []).append((cpu_ns(node.pid) - ns0) / 1e6)
            level.first_ms.setdefault(path, []).append(ms)
    vsnodes.sleep_until(t0 + (plan.rounds + 1) * (INTERVAL_S + 0.5))  # the last round's interval too
    elapsed, scrapes = time.monotonic() - t0, plan.rounds * len(ENDPOINTS)
    level.all_in_cpu_ms = (cpu_s(node.pid) - cpu0 - level.idle_core * elapsed) * 1000 / scrapes
    level.all_in_containerd_ms = (cpu_s(ctd) - ctd0 - level.idle_containerd_core * elapsed) * 1000 / scrapes


def warm_scrapes(node: Node, plan: Plan, level: Level, client: Client) -> None:
    ctd = daemon_pid(node.daemon)
    for path in ENDPOINTS:
        client.get(path)
        cpu0, ctd0, t0 = cpu_ns(node.pid), cpu_s(ctd), time.monotonic()
        level.warm_ms[path] = [client.get(path)[0] for _ in range(plan.warm)]
        elapsed = time.monotonic() - t0
        level.warm_cpu_ms[path] = ((cpu_ns(node.pid) - cpu0) / 1e6 - level.idle_core * elapsed * 1000) / plan.warm
        level.warm_containerd_ms[path] = (cpu_s(ctd) - ctd0 - level.idle_containerd_core * elapsed) * 1000 / plan.warm


def healthz(node: Node, plan: Plan, level: Level) -> None:
    client = Client(node.healthz_port)
    try:
        client.get("/healthz")
        count, cpu0, t0 = 0, cpu_ns(node.pid), time.monotonic()
        while time.monotonic() - t0 < plan.healthz_s:
            client.get("/healthz")
            count += 1
        elapsed = time.monotonic() - t0
        level.healthz_rps = count / elapsed
        level.healthz_cpu_us = ((cpu_ns(node.pid) - cpu0) / 1e3 - level.idle_core * elapsed * 1e6) / count
    finally:
        client.close()


def measure(node: Node, plan: Plan, level: Level, profile: bool = False) -> None:
    """`profile`: py-spy records the idle window and then the scrapes (printed to stderr)."""
    time.sleep(plan.settle_s)
    spy = vsnodes.PySpy(node.pid, vsnodes.LOGS / "idle.txt", plan.idle_s) if profile else None
    idle(node, plan, level)
    if profile:
        print(vsnodes.memory_map(node.pid), file=sys.stderr)
    rounds_s = (plan.rounds + 1) * (INTERVAL_S + 0.5) + 5
    spies = [spy, vsnodes.PySpy(node.pid, vsnodes.LOGS / "scrapes.txt", rounds_s) if profile else None]
    client = node.client()
    try:
        first_scrapes(node, plan, level, client)
        warm_scrapes(node, plan, level, client)
    finally:
        client.close()
    for s in spies:
        if s is not None:
            print(s.summary(), file=sys.stderr)
    healthz(node, plan, level)
    level.rss_after_mib = rss_mib(node.pid)


def restart(node: Node, count: int, level: Level, summary: bool) -> None:
    """SIGTERM, start again; seconds from the start to healthy, to every pod Running in /pods and
    (`summary`) to the summary listing every pod with a CPU rate."""
    pods = {n.stem + f"-{NODE}" for n in node.manifests.glob("*.yaml")}
    assert len(pods) == count
    t0 = time.monotonic()
    node.stop()
    level.readopt["stop"] = time.monotonic() - t0
    t0 = time.monotonic()
    node.start()
    level.readopt["healthy"] = time.monotonic() - t0
    vsnodes.wait_quietly(lambda: vsnodes.running(vsnodes.fresh_get(node.ro_port, "/pods")["items"] or []) >= pods,
                         180, 0.1, f"{node.name}: pods Running after the restart")
    level.readopt["running"] = time.monotonic() - t0
    if summary:
        def listed() -> bool:
            client = node.client()
            try:
                return vsnodes.summarised(client) >= pods
            finally:
                client.close()
        vsnodes.wait_quietly(listed, 180, 0.25, f"{node.name}: summary lists the pods after the restart")
        level.readopt["summary"] = time.monotonic() - t0


# --- one node --------------------------------------------------------------------------------------
def run_node(node: Node, plan: Plan, profile: bool = False) -> Figures:
    out = Figures(node.name)
    low, high = plan.counts
    print(f"{node.name}: start, pod start ...", file=sys.stderr)
    node.start()
    client = node.client()
    try:
        pod_start(node, plan, out, client)
        print(f"{node.name}: {low} pods: idle, scrapes, /healthz, restart ...", file=sys.stderr)
        out.levels[low] = Level()
        measure(node, plan, out.levels[low])
        client.close()
        restart(node, low, out.levels[low], summary=False)
        print(f"{node.name}: burst to {high} pods ...", file=sys.stderr)
        client = node.client()
        burst(node, [f"c{i:03d}" for i in range(high - low)], out, client, high)
        print(f"{node.name}: {high} pods: idle, scrapes, /healthz, restart ...", file=sys.stderr)
        out.levels[high] = Level()
        measure(node, plan, out.levels[high], profile)
        client.close()
        restart(node, high, out.levels[high], summary=True)
    except BaseException:
        print(f"--- {node.name} log (tail) ---\n{node.log_tail()}", file=sys.stderr)
        raise
    finally:
        client.close()
        node.close()
        vsnodes.keep_log(node)
    return out


def with_nodes(plan: Plan, trash: Trash, work: Path, profile: bool) -> list[Figures]:
    pki = node_pki(work)
    undo: list[Callable[[], None]] = []
    try:
        daemons = start_containerds(2, undo)
        trash.work_dirs += [daemon.work for daemon in daemons]
        kubelet = KubeletNode(work / "kubelet", daemons[0], Serving(pki.serving_crt, pki.serving_key, pki.ca_crt))
        ours = OursNode(work / "kubeletapi", daemons[1])
        trash.agent_args += [kubelet.cgroup_args(), ours.cgroup_args()]
        undo += [kubelet.close, ours.close]
        if profile:  # kubeletapi alone: the profiles are its own
            return [run_node(ours, plan, profile)]
        figures = [run_node(kubelet, plan), run_node(ours, plan)]
        figures[0].version, figures[1].version = kubelet_version(), kubeletapi_version()
        return figures
    finally:
        for step in reversed(undo):
            try:
                step()
            except Exception as exc:
                print(f"clean-up step failed: {exc!r}", file=sys.stderr)


def kubelet_version() -> str:
    from tests.cluster.controlplane import binary  # noqa: PLC0415

    return subprocess.run([binary("kubelet"), "--version"], capture_output=True, text=True, check=False).stdout.strip()


def kubeletapi_version() -> str:
    """The commit, and `-dirty` when kubeletapi/ itself (not bench/) has changes."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(Path(__file__).resolve().parent.parent), *argv],
                              capture_output=True, text=True, check=False).stdout.strip()
    dirty = "-dirty" if git("status", "--porcelain", "--", "kubeletapi") else ""
    return f"kubeletapi {git('rev-parse', '--short', 'HEAD') or '?'}{dirty}"


# --- main ------------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 and 6 pods, short windows; "
                        "prints its section, writes nothing")
    parser.add_argument("--profile", action="store_true", help="kubeletapi alone; py-spy records its idle window "
                        "and scrapes at the higher pod count, and its RSS by mapping is printed (writes nothing)")
    opts = parser.parse_args()
    quick = opts.quick
    if not preflight("kubelet_vs_bench"):
        return 1
    plan, trash, loads = (QUICK if quick else Plan()), Trash(), [load()]
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="kvs-", dir="/tmp"))
    try:
        figures = with_nodes(plan, trash, work, opts.profile)
    finally:
        kill_own_leftovers(trash)
        left = leftovers(trash)
        vsnodes.remove_dir(work)
        if left:
            print("kubelet_vs_bench: LEFT BEHIND:\n  " + "\n  ".join(left), file=sys.stderr)
    loads.append(load())
    if opts.profile:
        return 1 if left else 0
    section = vsreport.render(SECTION, plan, figures, loads, time.monotonic() - started, quick, ENDPOINTS,
                              __doc__ or "")
    print(section)
    if not quick and not opts.profile:
        update_section(SECTION, section)
    return 1 if left else 0


if __name__ == "__main__":
    raise SystemExit(main())
