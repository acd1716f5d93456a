"""The metrics pipeline end to end: metrics-server (the real aggregated API) scrapes every node's
/metrics/resource; `kubectl top` shows every node and pod with the figures each node's
/stats/summary shows; an HPA scales a Deployment on those figures alone.

Two nodes, one per runtime, serve at once: top lists both, and each pod's figures come from the
runtime that runs it. The pods hold known amounts: memory that stays put, CPU capped by a CFS quota,
so both sides measure the same steady thing. The node's own figures move with everything else the
machine does, so a node's top value is compared with the range /stats/summary showed around it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.metricsserver import MetricsServer
from tests.cluster.node import Node
from tests.cri.fixtures import CRIEnv
from tests.podtools import wait_for

# A CPU-bound pod must get its whole limit (kubectl top, the HPA): no neighbour may take the cores.
pytestmark = [pytest.mark.cluster, pytest.mark.e2e, pytest.mark.alone]

TOLERANCE = 0.10  # the issue's: top within 10 % of /stats/summary
MIB = 1 << 20
HOLD_MIB = 48  # memory a pod holds
CPU_LIMIT_M = 200  # a burner's CFS cap: it uses exactly this much, whatever else runs


@pytest.fixture(scope="module")
def metrics_server(control_plane: ControlPlane, fabric: Fabric,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsServer]:
    server = MetricsServer(control_plane, tmp_path_factory.mktemp("metrics-server"), fabric.host)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def runtimes(control_plane: ControlPlane, cluster_cri: CRIEnv, metrics_server: MetricsServer,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Node]]:
    started: dict[str, Node] = {}
    try:
        for runtime in ("process", "containerd"):
            endpoint = cluster_cri.endpoint if runtime == "containerd" else ""
            node = Node(control_plane, tmp_path_factory.mktemp(f"node-{runtime}"), runtime=runtime,
                        cri_endpoint=endpoint)
            started[runtime] = node
            node.start()
        for node in started.values():
            wait_for(node.ready, timeout=30, what=f"{node.name} Ready")
        yield started
    finally:
        for node in started.values():
            node.remove()


# --- pods that hold known amounts ----------------------------------------------------------------
def _holder_command(runtime: str) -> list[str]:
    """Holds HOLD_MIB of memory that counts in the working set, then sleeps."""
    if runtime == "process":  # the host's python: anonymous memory, touched
        return ["python3", "-c", f"import time; b = bytearray({HOLD_MIB * MIB}); time.sleep(3600)"]
    # busybox: a file in the container's /dev/shm (tmpfs, charged to the container's cgroup)
    return ["sh", "-c", f"dd if=/dev/zero of=/dev/shm/hold bs=1M count={HOLD_MIB} && exec sleep 3600"]


def _pod(name: str, node: Node, command: list[str], *, cpu_limit: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.36", "command": command}
    if cpu_limit is not None:
        container["resources"] = {"requests": {"cpu": "100m"}, "limits": {"cpu": cpu_limit}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node.name, "terminationGracePeriodSeconds": 1, "containers": [container]}}


BURN = ["sh", "-c", "while :; do :; done"]


def _summary(plane: ControlPlane, node: Node) -> dict[str, Any]:
    raw = plane.kubectl("get", "--raw", f"/api/v1/nodes/{node.name}/proxy/stats/summary").stdout
    doc: dict[str, Any] = json.loads(raw)
    return doc


def _top(plane: ControlPlane, *args: str) -> list[list[str]]:
    out = plane.kubectl("top", *args, "--no-headers").stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def _cpu_m(value: str) -> float:
    return float(value[:-1]) if value.endswith("m") else float(value) * 1000


def _mem_mib(value: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024}
    for suffix, factor in units.items():
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value) / MIB


def _within(value: float, samples: list[float], unit: float = 1) -> bool:
    """`value` lies within TOLERANCE of the range the samples span, give or take the one `unit`
    (1m, 1Mi) kubectl truncates its figures to."""
    return min(samples) * (1 - TOLERANCE) - unit <= value <= max(samples) * (1 + TOLERANCE) + unit


class Sampler:
    """/stats/summary figures of every node, read every second for a while."""

    def __init__(self, plane: ControlPlane, runtimes: dict[str, Node]) -> None:
        self.plane, self.nodes = plane, runtimes
        self.node_cpu: dict[str, list[float]] = {n.name: [] for n in runtimes.values()}
        self.node_mem: dict[str, list[float]] = {n.name: [] for n in runtimes.values()}
        self.pod_cpu: dict[tuple[str, str], list[float]] = {}
        self.pod_mem: dict[tuple[str, str], list[float]] = {}

    def sample(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                summary = _summary(self.plane, node)
                self.node_cpu[node.name].append(summary["node"]["cpu"]["usageNanoCores"] / 1e6)
                self.node_mem[node.name].append(summary["node"]["memory"]["workingSetBytes"] / MIB)
                for pod in summary["pods"]:
                    # metrics-server's pod figure is the sum of its containers' (a CRI pod's own
                    # cgroup also holds the sandbox's pause process, which it leaves out)
                    key = (pod["podRef"]["namespace"], pod["podRef"]["name"])
                    containers = pod.get("containers") or []
                    cpu = [c["cpu"]["usageNanoCores"] for c in containers if "usageNanoCores" in c.get("cpu", {})]
                    mem = [c["memory"]["workingSetBytes"] for c in containers
                           if "workingSetBytes" in c.get("memory", {})]
                    if containers and len(cpu) == len(containers):
                        self.pod_cpu.setdefault(key, []).append(sum(cpu) / 1e6)
                    if containers and len(mem) == len(containers):
                        self.pod_mem.setdefault(key, []).append(sum(mem) / MIB)
            time.sleep(1)


def _running(plane: ControlPlane, namespace: str, count: int) -> Callable[[], bool]:
    def check() -> bool:
        items = json.loads(plane.kubectl("get", "pods", "-n", namespace, "-o", "json").stdout)["items"]
        return len(items) == count and all(p.get("status", {}).get("phase") == "Running" for p in items)
    return check


def test_kubectl_top_lists_every_node_and_pod_with_the_summary_figures(
        runtimes: dict[str, Node], control_plane: ControlPlane, namespace: str) -> None:
    plane = control_plane
    pods = []
    for runtime, node in runtimes.items():
        pods.append(_pod(f"holder-{runtime}", node, _holder_command(runtime)))
        pods.append(_pod(f"burner-{runtime}", node, BURN, cpu_limit=f"{CPU_LIMIT_M}m"))
    plane.kubectl("apply", "-n", namespace, "-f", "-", input_=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                          "items": pods}))
    wait_for(_running(plane, namespace, len(pods)), timeout=90, interval=0.5, what="pods Running")
    names = {p["metadata"]["name"] for p in pods}

    def every_pod_listed() -> list[list[str]] | None:
        rows = _top(plane, "pods", "-A")
        listed = {row[1] for row in rows if row[0] == namespace}
        return rows if listed == names else None

    # metrics-server needs two scrapes of a pod (one resolution apart) before it has a CPU rate
    wait_for(every_pod_listed, timeout=90, interval=2, what="kubectl top pods -A lists the test's pods")
    sampler = Sampler(plane, runtimes)
    sampler.sample(8)
    top_nodes = {row[0]: row for row in _top(plane, "nodes")}
    top_pods = {row[0]: row for row in _top(plane, "pods", "-n", namespace)}
    sampler.sample(8)

    for node in runtimes.values():
        assert node.name in top_nodes, top_nodes
        _, cpu, _, mem, _ = top_nodes[node.name]
        assert _within(_cpu_m(cpu), sampler.node_cpu[node.name]), (node.name, cpu, sampler.node_cpu[node.name])
        assert _within(_mem_mib(mem), sampler.node_mem[node.name]), (node.name, mem, sampler.node_mem[node.name])
    for name in names:
        _, cpu, mem = top_pods[name]
        cpu_samples, mem_samples = sampler.pod_cpu[(namespace, name)], sampler.pod_mem[(namespace, name)]
        assert _within(_mem_mib(mem), mem_samples), (name, mem, mem_samples)
        if name.startswith("holder"):
            assert _mem_mib(mem) >= HOLD_MIB * (1 - TOLERANCE), (name, mem)
        else:  # the burner runs at its CFS cap on both sides
            assert _within(_cpu_m(cpu), cpu_samples), (name, cpu, cpu_samples)
            assert abs(_cpu_m(cpu) - CPU_LIMIT_M) <= CPU_LIMIT_M * TOLERANCE, (name, cpu)


def _hpa(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
            # the default 5-minute scale-down window would outlast the test
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0,
                                       "policies": [{"type": "Percent", "value": 100, "periodSeconds": 5}]},
                         "scaleUp": {"stabilizationWindowSeconds": 0}},
        },
    }


def _burner_deployment(name: str, node: Node, flag: Path) -> dict[str, Any]:
    """Pods that burn CPU (up to their 200m cap, twice their 100m request) while `flag` exists."""
    script = f"while :; do if [ -e {flag} ]; then while [ -e {flag} ]; do :; done; else sleep 0.5; fi; done"
    pod = _pod(name, node, ["sh", "-c", script], cpu_limit=f"{CPU_LIMIT_M}m")
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": pod["spec"]}}}


def test_an_hpa_scales_on_the_nodes_cpu_figures(runtimes: dict[str, Node], control_plane: ControlPlane,
                                                namespace: str, tmp_path: Path) -> None:
    plane, node = control_plane, runtimes["process"]  # the host's sh sees the flag file the test writes
    flag = tmp_path / "burn"
    docs = [_burner_deployment("burner", node, flag), _hpa("burner")]
    plane.kubectl("apply", "-n", namespace, "-f", "-", input_=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                          "items": docs}))

    def hpa() -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(plane.kubectl("get", "hpa", "burner", "-n", namespace, "-o",
                                                       "json").stdout)
        return doc

    def utilization(at_least: int = 0) -> tuple[int] | None:
        """The HPA's current CPU utilization (a 1-tuple, so that 0 % counts as read), once >= at_least."""
        metrics = hpa().get("status", {}).get("currentMetrics") or []
        values = [m["resource"]["current"].get("averageUtilization") for m in metrics if m.get("type") == "Resource"]
        return (values[0],) if values and values[0] is not None and values[0] >= at_least else None

    (idle,) = wait_for(utilization, timeout=120, interval=2, what="the HPA reads the pods' CPU")
    assert idle < 50, idle
    assert hpa()["spec"].get("minReplicas") == 1 and hpa()["status"].get("currentReplicas") == 1

    flag.touch()
    started = time.monotonic()
    wait_for(lambda: (hpa()["status"].get("desiredReplicas") or 0) >= 2, timeout=150, interval=2,
             what="the HPA scales up under load")
    up = time.monotonic() - started
    wait_for(_running(plane, namespace, 3), timeout=90, interval=1, what="3 replicas Running")
    (busy,) = wait_for(lambda: utilization(at_least=100), timeout=60, interval=2,
                       what="utilization above its target")

    flag.unlink()
    started = time.monotonic()
    wait_for(lambda: hpa()["status"].get("desiredReplicas") == 1, timeout=150, interval=2,
             what="the HPA scales back down when the load stops")
    down = time.monotonic() - started
    conditions = {c["type"]: c for c in hpa()["status"]["conditions"]}
    assert conditions["ScalingActive"]["status"] == "True", conditions
    print(f"HPA: idle {idle}%, busy {busy}%, scaled up after {up:.0f} s, down after {down:.0f} s")
