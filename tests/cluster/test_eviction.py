"""Eviction of API pods under real pressure.

Memory: a BestEffort pod allocates 1 GiB past a memory.available threshold set 512 MiB below what
was available when the test started. The node reports MemoryPressure, evicts that pod (Failed,
Evicted, the kubelet's message and events) and not the Burstable pod within its request; while
the pressure lasts, a new BestEffort pod is refused and a Burstable one admitted, as the kubelet's
eviction admission decides.

Disk: the node's root and pod logs directory are a 64 MiB loop-mounted ext4 filesystem; a pod
logs about 30 MiB past a nodefs.available threshold 16 MiB below what was free. The pod that uses
the disk is evicted first; while DiskPressure lasts every new pod is refused. (Its logs stay after
it is killed, as a dead container's do, until container GC removes them, here as node-level reclaim
once the garbage collectors are wired: until then the pressure lasts and the idle pod goes next.)
(Logs, not an emptyDir: a volume's use is measured when it appears and then every
volumeStatsAggPeriod, a minute, as in the kubelet; logs every housekeeping cycle.)"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeletapi.stats.node import node_memory
from tests.cluster.conftest import NODE_LEVEL
from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.loopfs import loop_filesystem
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]
Mi = 2**20
HOG = "import time\nb = b'x' * (1 << 30)\ntime.sleep(600)"


def _pod(name: str, node: str, command: list[str], requests: dict[str, str] | None = None) -> str:
    container: dict[str, Any] = {"name": name, "image": "busybox:1.36", "command": command}
    if requests:
        container["resources"] = {"requests": requests}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"nodeName": node, "containers": [container], "terminationGracePeriodSeconds": 30}})


def _get(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    found = json.loads(plane.kubectl("get", "pod", name, "-n", namespace, "-o", "json").stdout)
    assert isinstance(found, dict)
    return found


def _phase(plane: ControlPlane, namespace: str, name: str, phase: str) -> dict[str, Any] | None:
    pod = _get(plane, namespace, name)
    return pod if pod.get("status", {}).get("phase") == phase else None


@NODE_LEVEL
@pytest.mark.alone  # the threshold is set from what is free on the machine now
def test_a_best_effort_pod_is_evicted_under_real_memory_pressure(node: Node, control_plane: ControlPlane,
                                                                  namespace: str) -> None:
    mem = node_memory()
    threshold = (mem.total - mem.working_set - 512 * Mi) // Mi
    node.args += ["--eviction-hard", f"memory.available<{threshold}Mi", "--housekeeping-interval", "1s",
                  "--eviction-pressure-transition-period", "2m"]
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    apply = control_plane.kubectl
    apply("apply", "-n", namespace, "-f", "-", input_=_pod("calm", node.name, ["sleep", "600"], {"memory": "2Gi"}))
    wait_for(lambda: _phase(control_plane, namespace, "calm", "Running"), timeout=30, what="calm Running")
    apply("apply", "-n", namespace, "-f", "-", input_=_pod("hog", node.name, ["python3", "-c", HOG]))
    pod = wait_for(lambda: _phase(control_plane, namespace, "hog", "Failed"), timeout=60, interval=0.5,
                   what="hog evicted")
    status = pod["status"]
    assert status["reason"] == "Evicted"
    prefix = f"The node was low on resource: memory. Threshold quantity: {threshold}Mi, available: "
    assert status["message"].startswith(prefix), status["message"]
    assert "Container hog was using " in status["message"]
    assert status["message"].endswith(", request is 0, has larger consumption of memory. ")
    (target,) = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == ("True", "TerminationByKubelet",
                                                                       status["message"])
    assert "terminated" in status["containerStatuses"][0]["state"]
    # the Node status is computed every nodeStatusUpdateFrequency (10s): the condition follows
    pressure = wait_for(lambda: (c := node.condition("MemoryPressure")) is not None and c["status"] == "True" and c,
                        timeout=30, interval=0.5, what="MemoryPressure on the Node")
    assert (pressure["reason"], pressure["message"]) == ("KubeletHasInsufficientMemory",
                                                        "kubelet has insufficient memory available")
    assert _phase(control_plane, namespace, "calm", "Running") is not None  # within its request: stays

    # MemoryPressure holds for the transition period: BestEffort refused, Burstable admitted
    apply("apply", "-n", namespace, "-f", "-", input_=_pod("late", node.name, ["sleep", "600"]))
    apply("apply", "-n", namespace, "-f", "-", input_=_pod("sized", node.name, ["sleep", "600"], {"memory": "64Mi"}))
    late = wait_for(lambda: _phase(control_plane, namespace, "late", "Failed"), timeout=30, what="late refused")
    assert (late["status"]["reason"], late["status"]["message"]) == (
        "Evicted", "Pod was rejected: The node had condition: [MemoryPressure]. ")
    wait_for(lambda: _phase(control_plane, namespace, "sized", "Running"), timeout=30, what="sized Running")

    events = json.loads(apply("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    evicted = [e for e in events if e["reason"] == "Evicted" and e["involvedObject"]["name"] == "hog"]
    assert evicted and evicted[0]["type"] == "Warning" and evicted[0]["message"] == status["message"]
    node_events = json.loads(apply("get", "events", "-n", "default", "-o", "json",
                                   "--field-selector", f"involvedObject.name={node.name}").stdout)["items"]
    assert ("Warning", "Attempting to reclaim memory") in {
        (e["type"], e["message"]) for e in node_events if e["reason"] == "EvictionThresholdMet"}
    metrics = httpx.get(f"http://{node.address}:{node.flag('--read-only-port')}/metrics", timeout=10).text
    assert 'kubelet_evictions{eviction_signal="memory.available"} 1\n' in metrics
    assert 'kubelet_eviction_stats_age_seconds_count{eviction_signal="memory.available"} 1\n' in metrics


@pytest.fixture
def loop_root(tmp_path: Path) -> Iterator[Path]:
    """The node's root directory (agent_args: <tmp>/root) on a 64 MiB filesystem; unmounted after
    the node is removed (request it before `node`)."""
    with loop_filesystem(tmp_path / "disk.img", tmp_path / "root", 64 * Mi) as root:
        yield root


@NODE_LEVEL
def test_the_pod_filling_the_disk_is_evicted(loop_root: Path, node: Node, control_plane: ControlPlane,
                                             namespace: str) -> None:
    stat = os.statvfs(loop_root)
    threshold_ki = (stat.f_bavail * stat.f_frsize - 16 * Mi) // 1024  # the pod logs ~30 MiB: crossed by ~14
    node.args += ["--eviction-hard", f"nodefs.available<{threshold_ki}Ki", "--housekeeping-interval", "1s",
                  "--eviction-pressure-transition-period", "2m", "--pod-logs-dir", str(loop_root / "logs")]
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    apply = control_plane.kubectl
    apply("apply", "-n", namespace, "-f", "-", input_=_pod("idle", node.name, ["sleep", "600"]))
    wait_for(lambda: _phase(control_plane, namespace, "idle", "Running"), timeout=30, what="idle Running")
    fill = "head -c 16777216 /dev/urandom | base64; sleep 600"  # 21 MiB of text, ~30 MiB as CRI log lines
    apply("apply", "-n", namespace, "-f", "-", input_=_pod("fill", node.name, ["sh", "-c", fill]))
    pod = wait_for(lambda: _phase(control_plane, namespace, "fill", "Failed"), timeout=60, interval=0.5,
                   what="fill evicted")
    status = pod["status"]
    assert status["reason"] == "Evicted"
    assert status["message"].startswith(f"The node was low on resource: ephemeral-storage. Threshold quantity: "
                                        f"{threshold_ki}Ki, available: "), status["message"]
    apply("apply", "-n", namespace, "-f", "-", input_=_pod("sized", node.name, ["sleep", "600"], {"memory": "64Mi"}))
    sized = wait_for(lambda: _phase(control_plane, namespace, "sized", "Failed"), timeout=30, what="sized refused")
    assert (sized["status"]["reason"], sized["status"]["message"]) == (
        "Evicted", "Pod was rejected: The node had condition: [DiskPressure]. ")
    wait_for(lambda: (c := node.condition("DiskPressure")) is not None and c["status"] == "True",
             timeout=30, interval=0.5, what="DiskPressure on the Node")
    events = json.loads(apply("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    evicted = [e for e in events if e["reason"] == "Evicted" and e["involvedObject"]["name"] in ("fill", "idle")]
    # event names end in the hex Unix nanoseconds of their creation (the kubelet's recorder)
    first = min(evicted, key=lambda e: int(e["metadata"]["name"].rsplit(".", 1)[1], 16))
    assert first["involvedObject"]["name"] == "fill" and first["message"] == status["message"]
    metrics = httpx.get(f"http://{node.address}:{node.flag('--read-only-port')}/metrics", timeout=10).text
    assert re.search(r'\nkubelet_evictions\{eviction_signal="nodefs.available"\} [12]\n', metrics), metrics[-2000:]
