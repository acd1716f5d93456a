"""The two nodes of kubelet_vs_bench, behind one interface: the real kubelet (tests/oracle/realkubelet)
and `python -m kubeletapi` as a real process (tests/helpers.AgentProcess), each on a private
containerd of its own; and how their CPU is read.

CPU: a node's own process (all its threads) plus its live children and the children it has reaped
(the kubelet execs nothing here; kubeletapi with the remote runtime starts no helper). Long windows
(idle, bursts, batches of requests) use psutil's cpu_times (clock ticks: 10 ms); single requests use
the sum of the threads' /proc/<pid>/task/*/schedstat run time (nanoseconds).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import http.client
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
from benchkit import Client, wait

from kubeletapi.runtime.cri import CRIRuntime
from tests.cluster.controlplane import binary
from tests.cri import containerd
from tests.cri.cleanup import purge_cri, remove_all_sandboxes
from tests.helpers import AgentProcess, agent_args
from tests.oracle.realkubelet import RealKubelet, Serving

NODE = "testnode"  # both nodes' --hostname-override: static pods are <name>-testnode


def tree(pid: int) -> list[psutil.Process]:
    proc = psutil.Process(pid)
    return [proc, *proc.children(recursive=True)]


def cpu_s(pid: int | None) -> float:
    """User + system CPU of a process, its live children and its reaped ones (ticks)."""
    if pid is None:
        return 0.0
    total = 0.0
    for proc in tree(pid):
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def cpu_ns(pid: int) -> int:
    """Run time of every live thread of a process and its live children (schedstat, ns)."""
    total = 0
    for proc in tree(pid):
        for stat in Path(f"/proc/{proc.pid}/task").glob("*/schedstat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                total += int(stat.read_text().split()[0])
    return total


def rss_mib(pid: int) -> float:
    return sum(p.memory_info().rss for p in tree(pid)) / 2**20


def shims_cpu_s(daemon: containerd.PrivateContainerd) -> float:
    """CPU of the daemon's shims (their argv names its work dir) and of what they reaped (runc)."""
    mark, total = str(daemon.work), 0.0
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        argv = proc.info["cmdline"] or []
        if (proc.info["name"] or "").startswith("containerd-shim") and any(mark in a for a in argv):
            with contextlib.suppress(psutil.Error):
                t = proc.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
    return total


def uss_mib(pid: int) -> float:
    return sum(p.memory_full_info().uss for p in tree(pid)) / 2**20


def host_cgroups() -> int:
    from kubeletapi.cgroups import detect  # noqa: PLC0415

    cpu = next((h.mount_point for h in detect().hierarchies if "cpu" in h.controllers), None)
    return sum(1 for _ in os.walk(cpu)) if cpu is not None else 0


class PySpy:
    """`py-spy record` of a process for `seconds` (--profile; --nonblocking: the target never stops),
    its collapsed stacks summarised by own and by inclusive samples per function."""

    def __init__(self, pid: int, out: Path, seconds: float) -> None:
        self.out = out
        spy = Path(sys.executable).parent / "py-spy"
        self.proc = subprocess.Popen([str(spy), "record", "--pid", str(pid), "--nonblocking", "--rate", "100",
                                      "--format", "raw", "--duration", str(round(seconds)), "--output", str(out)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def summary(self, top: int = 25) -> str:
        self.proc.wait(60)
        own: collections.Counter[str] = collections.Counter()
        inclusive: collections.Counter[str] = collections.Counter()
        total = 0
        for line in self.out.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            frames, n = stack.split(";"), int(count)
            total += n
            own[frames[-1]] += n
            for frame in set(frames):
                inclusive[frame] += n
        rows = [f"{n:6d} {100 * n / max(total, 1):5.1f}%  {frame}" for frame, n in own.most_common(top)]
        rows += ["  inclusive:"] + [f"{n:6d} {100 * n / max(total, 1):5.1f}%  {frame}"
                                    for frame, n in inclusive.most_common(top)]
        return f"{self.out.name}: {total} samples (100/s, busy threads only)\n" + "\n".join(rows)


def memory_map(pid: int, top: int = 25) -> str:
    """RSS by mapping (--profile): the binary and libraries' pages against the anonymous ones."""
    rss: collections.Counter[str] = collections.Counter()
    name = "?"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and not head[0].endswith(":"):
            name = head[5] if len(head) > 5 else "[anonymous]"
        elif head[:1] == ["Rss:"]:
            rss[name] += int(head[1])
    total = sum(rss.values())
    rows = [f"{kib / 1024:7.1f} MiB  {mapping}" for mapping, kib in rss.most_common(top)]
    return f"RSS by mapping, pid {pid}: {total / 1024:.1f} MiB\n" + "\n".join(rows)


LOGS = Path("/tmp/kubelet_vs_bench-logs")  # the last run's node logs, kept for a look afterwards


def keep_log(node: Node) -> None:
    LOGS.mkdir(exist_ok=True)
    source = node.real.log_path if isinstance(node, KubeletNode) else node.work / "agent.log"
    with contextlib.suppress(OSError):
        shutil.copyfile(source, LOGS / f"{node.name}.log")


def daemon_pid(daemon: containerd.PrivateContainerd) -> int | None:
    """The private containerd's PID (its argv names its work dir)."""
    mark = str(daemon.work)
    for proc in psutil.process_iter(["pid", "cmdline"]):
        argv = proc.info["cmdline"] or []
        if argv and Path(argv[0]).name == "containerd" and any(mark in a for a in argv):
            return int(proc.info["pid"])
    return None


class Node:
    """One node: started, restarted (SIGTERM, then started again on the same state) and closed
    (process stopped, every pod removed through CRI, its cgroups and files removed)."""

    name = ""

    def __init__(self, work: Path, daemon: containerd.PrivateContainerd) -> None:
        self.work = work
        self.daemon = daemon
        self.manifests = work / "manifests"
        self.manifests.mkdir(parents=True)
        self.ro_port = self.healthz_port = 0

    @property
    def pid(self) -> int:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def cgroup_args(self) -> list[str]:
        """--root-dir and --cgroup-root, as benchkit.purge reads them."""
        raise NotImplementedError

    def log_tail(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        if self.daemon.running:
            with contextlib.suppress(Exception):
                purge_cri(self.daemon.endpoint, self.cgroup_args())

    def client(self) -> Client:
        return Client(self.ro_port)


class KubeletNode(Node):
    name = "kubelet"

    def __init__(self, work: Path, daemon: containerd.PrivateContainerd, serving: Serving) -> None:
        super().__init__(work, daemon)
        self.real = RealKubelet(Path(binary("kubelet")), work / "kubelet", daemon.endpoint, self.manifests, serving)
        self.ro_port, self.healthz_port = self.real.port("read-only"), self.real.port("healthz")

    @property
    def pid(self) -> int:
        return self.real.pid

    def start(self) -> None:
        self.real.start()

    def stop(self) -> None:
        self.real.stop()

    def cgroup_args(self) -> list[str]:
        return ["--root-dir", str(self.real.root_dir), "--cgroup-root", self.real.cgroup_root]

    def close(self) -> None:
        super().close()
        self.real.remove_cgroups()

    def log_tail(self) -> str:
        return self.real.log_tail()


class OursNode(Node):
    name = "kubeletapi"

    def __init__(self, work: Path, daemon: containerd.PrivateContainerd) -> None:
        super().__init__(work, daemon)
        self.args = agent_args(work, "--container-runtime=remote", "--container-runtime-endpoint", daemon.endpoint,
                               "--pod-manifest-path", str(self.manifests))
        self.ro_port = int(self.args[self.args.index("--read-only-port") + 1])
        self.healthz_port = int(self.args[self.args.index("--healthz-port") + 1])
        self.proc: AgentProcess | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.proc.pid

    def start(self) -> None:
        self.proc = AgentProcess(self.args, log=self.work / "agent.log")
        self.proc.wait_healthy(f"http://127.0.0.1:{self.healthz_port}/healthz", timeout=60)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.stop()

    def cgroup_args(self) -> list[str]:
        return self.args

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.work / "agent.log").read_text(errors="replace").splitlines()[-40:])
        return ""


def remove_pods(node: Node) -> None:
    """Every sandbox of the node's containerd removed (faster than a graceful removal by the node)."""
    asyncio.run(remove_all_sandboxes(node.daemon.endpoint))


def start_times(endpoint: str) -> dict[str, float]:
    """Each container's start time (s since the epoch, ns precision) by its pod's name, from CRI."""
    async def listed() -> dict[str, float]:
        runtime = CRIRuntime(endpoint)
        try:
            return {c.labels.get("io.kubernetes.pod.name", ""): c.started_at / 1e9
                    for c in await runtime.list_containers() if c.started_at}
        finally:
            await runtime.close()
    return asyncio.run(listed())


def running(items: Sequence[dict[str, Any]]) -> set[str]:
    """Pods whose phase is Running and whose every container runs."""
    return {p["metadata"]["name"] for p in items if p.get("status", {}).get("phase") == "Running"
            and all("running" in s.get("state", {}) for s in p["status"].get("containerStatuses") or [{}])}


def summarised(client: Client) -> set[str]:
    """Pods the summary lists with a CPU rate for their container."""
    summary = client.json("/stats/summary")
    return {p["podRef"]["name"] for p in summary.get("pods") or []
            if any(c.get("cpu", {}).get("usageNanoCores") is not None for c in p.get("containers") or [])}


def wait_quietly(predicate: Any, timeout: float, interval: float, what: str) -> None:
    """benchkit.wait, counting a refused or broken connection (a node restarting) as not yet."""
    def safe() -> bool:
        try:
            return bool(predicate())
        except (OSError, RuntimeError, ValueError, http.client.HTTPException):
            return False
    wait(safe, timeout, interval, what)


def remove_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def fresh_get(port: int, path: str) -> Any:
    """One request on a connection of its own (a node restarting breaks kept-alive ones)."""
    client = Client(port)
    try:
        return client.json(path)
    finally:
        client.close()


def sleep_until(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))
