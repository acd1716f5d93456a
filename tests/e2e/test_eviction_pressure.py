"""Real memory, disk and PID pressure on a real agent: a pod that allocates memory, fills a small
loop-mounted filesystem (the root and pod logs directory) or forks; thresholds are set relative to
what is free when the test starts, so only the pod can cross them (margins of hundreds of MiB or
processes for whatever else the machine does meanwhile).

The pods here are static (a manifest directory): the kubelet reports the pressure (the node's
conditions) but never evicts a static pod (IsCriticalPod), and neither does the agent; eviction
of API pods under real memory pressure is tests/cluster/test_eviction.py. Housekeeping runs every
second (--housekeeping-interval), and so does the eviction manager, which works on each Snapshot.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from kubeletapi.stats.node import node_memory, rlimit
from tests.helpers import Agent
from tests.loopfs import loop_filesystem
from tests.podtools import container, manifest, pods, running, wait_for, write

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and loop mounts need root")]
Mi = 2**20
FAST = ("--housekeeping-interval", "1s", "--eviction-pressure-transition-period", "1s")


def pressures(agent: Agent) -> dict[str, dict[str, str]]:
    """The node's pressure conditions as its node view (the web UI's) shows them, by type, without times."""
    view = agent.kubelet.node_status_view()["conditions"]
    return {c["type"]: {k: c[k] for k in ("type", "status", "reason", "message")} for c in view if c["type"] != "Ready"}


def conditions(agent: Agent) -> dict[str, str]:
    return {kind: c["status"] for kind, c in pressures(agent).items()}


def under(agent: Agent, kind: str) -> bool:
    return conditions(agent)[kind] == "True"


def memory_available() -> int:
    """memory.available as the agent computes it: capacity - the root's working set."""
    mem = node_memory()
    return mem.total - mem.working_set


def assert_not_evicted(agent: Agent, name: str) -> None:
    """A static pod is critical: still running, not Failed, and no eviction was counted."""
    assert running(agent, name) is not None
    assert "kubelet_evictions" not in httpx.get(agent.url("read-only", "/metrics"), timeout=10).text


@pytest.mark.alone  # the threshold is set from what is free on the machine now
def test_memory_pressure_from_a_pod_that_allocates(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    threshold = memory_available() - 512 * Mi  # the hog takes 1Gi: crossed by 512Mi, only by it
    agent = start_agent("--eviction-hard", f"memory.available<{threshold // Mi}Mi", *FAST, manifests=True)
    assert conditions(agent) == {"MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False"}
    hog = "import time\nb = b'x' * (1 << 30)\ntime.sleep(600)"  # 1GiB, every page written
    write(tmp_path / "manifests", "hog.yaml", manifest("hog", container("hog", ["python3", "-c", hog])))
    wait_for(lambda: under(agent, "MemoryPressure"), timeout=30, what="MemoryPressure")
    condition = pressures(agent)["MemoryPressure"]
    assert condition == {"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory",
                         "message": "kubelet has insufficient memory available"}
    assert not under(agent, "DiskPressure") and not under(agent, "PIDPressure")
    assert_not_evicted(agent, "hog")
    (tmp_path / "manifests" / "hog.yaml").unlink()  # the memory comes back: the condition clears
    wait_for(lambda: not under(agent, "MemoryPressure"), timeout=30, what="no MemoryPressure")


@pytest.fixture
def loop_root(tmp_path: Path) -> Iterator[Path]:
    """A 64 MiB ext4 filesystem mounted (loop) on what agent_args makes the root directory; unmounted
    after the agent (request it before start_agent)."""
    with loop_filesystem(tmp_path / "disk.img", tmp_path / "root", 64 * Mi) as root:
        yield root


def test_disk_pressure_on_a_small_filesystem_filled_by_a_pod(loop_root: Path, start_agent: Callable[..., Agent],
                                                             tmp_path: Path) -> None:
    free = os.statvfs(loop_root)
    threshold = free.f_bavail * free.f_frsize - 16 * Mi  # the pod writes 32Mi: crossed by 16Mi
    agent = start_agent("--eviction-hard", f"nodefs.available<{threshold // 1024}Ki", "--pod-logs-dir",
                        str(loop_root / "logs"), *FAST, manifests=True)
    fill = "dd if=/dev/urandom of=/scratch/fill bs=1M count=32 2>&1; echo filled; sleep 600"
    write(tmp_path / "manifests", "fill.yaml", manifest(
        "fill", container("fill", ["sh", "-c", fill], "volumeMounts:\n- {name: scratch, mountPath: /scratch}"),
        "volumes:\n- {name: scratch, emptyDir: {}}"))
    wait_for(lambda: under(agent, "DiskPressure"), timeout=30, what="DiskPressure")
    assert not under(agent, "MemoryPressure") and not under(agent, "PIDPressure")
    condition = pressures(agent)["DiskPressure"]
    assert (condition["reason"], condition["message"]) == ("KubeletHasDiskPressure", "kubelet has disk pressure")
    assert_not_evicted(agent, "fill")
    logs = list((loop_root / "logs").glob("default_fill-testnode_*/fill/0.log"))
    assert logs and "filled" in logs[0].read_text()  # the pod's logs are on the small filesystem too
    (tmp_path / "manifests" / "fill.yaml").unlink()  # the emptyDir goes with the pod
    wait_for(lambda: not under(agent, "DiskPressure"), timeout=30, what="no DiskPressure")


@pytest.mark.alone  # the threshold is set from the machine's process count now
def test_pid_pressure_from_a_pod_that_forks(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    limits = rlimit()
    assert limits.maxpid is not None and limits.curproc is not None
    threshold = limits.maxpid - limits.curproc - 300  # the pod forks 800: crossed by 500, only by it
    agent = start_agent("--eviction-hard", f"pid.available<{threshold}", *FAST, manifests=True)
    forks = "for i in $(seq 800); do sleep 600 & done; echo forked; wait"
    write(tmp_path / "manifests", "forks.yaml", manifest("forks", container("forks", ["sh", "-c", forks])))
    pod = wait_for(lambda: running(agent, "forks"), what="forks running")
    main = _app_pid(agent, pod)
    children: list[int] = []
    try:
        wait_for(lambda: under(agent, "PIDPressure"), timeout=30, what="PIDPressure")
        children = wait_for(lambda: len(found := [p.pid for p in psutil.Process(main).children()]) >= 800 and found,
                            what="800 children")  # pressure came part way through the forks
        condition = pressures(agent)["PIDPressure"]
        assert (condition["reason"], condition["message"]) == (
            "KubeletHasInsufficientPID", "kubelet has insufficient PID available")
        assert_not_evicted(agent, "forks")
        (tmp_path / "manifests" / "forks.yaml").unlink()
        wait_for(lambda: "forks-testnode" not in pods(agent), timeout=30, what="forks removed")
        wait_for(lambda: not under(agent, "PIDPressure"), timeout=30, what="no PIDPressure")
    finally:
        for pid in children:  # the pod's kill took them; anything left goes by PID
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _app_pid(agent: Agent, pod: dict[str, object]) -> int:
    """The container's main process, from the process runtime's record of it."""
    status = pod["status"]
    assert isinstance(status, dict)
    cid = status["containerStatuses"][0]["containerID"].removeprefix("process://")
    root = Path(agent.args[agent.args.index("--root-dir") + 1])
    record = json.loads((root / "runtime" / "process" / "containers" / cid / "container.json").read_text())
    return int(record["app_pid"])
