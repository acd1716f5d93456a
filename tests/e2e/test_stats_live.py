"""Stats accuracy on real processes in real cgroups (root only): a container held at 0.5 CPU by its
limit, a container holding 200 MiB, node memory against /proc/meminfo, monotonic node CPU, and the
metrics-server rules on /metrics/resource. Housekeeping runs every second here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubeletapi.stats.node import parse_meminfo
from tests.helpers import Agent
from tests.podtools import container, manifest, running, wait_for, write

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: CPU limits and memory accounting need cgroups"),
]
Mi = 1 << 20
HOG_BYTES = 200 * Mi
SPIN = manifest("spin", container("spin", ["sh", "-c", "while :; do :; done"], """
    resources:
      limits: {cpu: 500m, memory: 64Mi}
"""))
HOG = manifest("hog", container("hog", ["python3", "-c",
                                        f"import time\nx = b'\\x01' * {HOG_BYTES}\ntime.sleep(3600)\n"], """
    resources:
      limits: {memory: 400Mi}
"""))


def summary(agent: Agent, query: str = "") -> dict[str, Any]:
    response = httpx.get(agent.url("read-only", "/stats/summary" + query), timeout=10)
    assert response.status_code == 200, response.text
    doc: dict[str, Any] = response.json()
    return doc


def pod_container(doc: dict[str, Any], pod: str, name: str) -> dict[str, Any] | None:
    for p in doc["pods"]:
        if p["podRef"]["name"] == pod:
            return next((c for c in p["containers"] if c["name"] == name), None)
    return None


def samples(agent: Agent, path: str, name: str) -> dict[tuple[tuple[str, str], ...], tuple[float, float | None]]:
    """series labels -> (value, timestamp in s) of one family, from the read-only port."""
    text = httpx.get(agent.url("read-only", path), timeout=10).text
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                out[tuple(sorted(s.labels.items()))] = (s.value, s.timestamp)
    return out


def labelled(series: dict[tuple[tuple[str, str], ...], Any], **want: str) -> Any:
    found = [v for k, v in series.items() if all((key, val) in k for key, val in want.items())]
    assert len(found) == 1, (want, list(series))
    return found[0]


@pytest.fixture
def stats_agent(start_agent: Callable[..., Agent], tmp_path: Path) -> Agent:
    agent = start_agent("--housekeeping-interval", "1s", manifests=True)
    write(tmp_path / "manifests", "spin.yaml", SPIN)
    write(tmp_path / "manifests", "hog.yaml", HOG)
    wait_for(lambda: running(agent, "spin") and running(agent, "hog"), timeout=30, what="pods running")
    return agent


@pytest.mark.alone  # a CPU-bound pod must get its whole limit: no neighbour may take the cores
def test_cpu_limit_and_memory_are_measured_within_ten_percent(stats_agent: Agent) -> None:
    agent = stats_agent

    def sampled() -> dict[str, Any] | None:
        doc = summary(agent)
        spin = pod_container(doc, "spin-testnode", "spin")
        hog = pod_container(doc, "hog-testnode", "hog")
        ready = spin and "usageNanoCores" in spin.get("cpu", {}) and hog and hog.get("memory", {}).get(
            "workingSetBytes", 0) > HOG_BYTES * 0.9
        return doc if ready else None

    wait_for(sampled, timeout=30, interval=0.5, what="two samples of both containers")
    time.sleep(2)  # past the start-up burst
    rates = []
    for _ in range(5):
        spin = pod_container(summary(agent), "spin-testnode", "spin")
        assert spin is not None
        rates.append(spin["cpu"]["usageNanoCores"])
        time.sleep(1.1)
    mean = sum(rates) / len(rates)
    assert 0.45e9 <= mean <= 0.55e9, rates

    hog = pod_container(summary(agent), "hog-testnode", "hog")
    assert hog is not None
    assert 0.9 * HOG_BYTES <= hog["memory"]["workingSetBytes"] <= 1.1 * HOG_BYTES, hog["memory"]
    assert hog["memory"]["availableBytes"] == 400 * Mi - hog["memory"]["workingSetBytes"]

    # The same figures on /metrics/cadvisor: the counter rises at the limit's rate, the gauge holds.
    name = "container_cpu_usage_seconds_total"
    v1, t1 = labelled(samples(agent, "/metrics/cadvisor", name), container="spin", pod="spin-testnode")
    time.sleep(4)
    v2, t2 = labelled(samples(agent, "/metrics/cadvisor", name), container="spin", pod="spin-testnode")
    assert t1 is not None and t2 is not None and t2 > t1
    assert 0.45 <= (v2 - v1) / (t2 - t1) <= 0.55, (v1, t1, v2, t2)
    ws, _ = labelled(samples(agent, "/metrics/cadvisor", "container_memory_working_set_bytes"),
                     container="hog", pod="hog-testnode")
    assert 0.9 * HOG_BYTES <= ws <= 1.1 * HOG_BYTES


def test_node_memory_matches_meminfo_and_node_cpu_is_monotonic(stats_agent: Agent) -> None:
    agent = stats_agent
    kubelet = agent.kubelet
    assert kubelet.stats is not None
    before = parse_meminfo(Path("/proc/meminfo").read_bytes())
    agent.run(kubelet.stats.housekeeper.collect())  # a cycle now, between two meminfo reads
    after = parse_meminfo(Path("/proc/meminfo").read_bytes())
    snap = kubelet.stats.housekeeper.latest()
    assert snap is not None and snap.node.root is not None
    mem = summary(agent)["node"]["memory"]
    assert mem["availableBytes"] == before.total - mem["workingSetBytes"]  # capacity - working set
    low = min(before.working_set, after.working_set)
    high = max(before.working_set, after.working_set)
    assert low - 32 * Mi <= mem["workingSetBytes"] <= high + 32 * Mi, (mem, before, after)
    assert min(before.usage, after.usage) - 32 * Mi <= mem["usageBytes"] <= max(before.usage, after.usage) + 32 * Mi

    counters = []
    for _ in range(4):
        counters.append(summary(agent)["node"]["cpu"]["usageCoreNanoSeconds"])
        time.sleep(1.1)
    assert counters == sorted(counters) and counters[-1] > counters[0], counters


def test_resource_metrics_follow_metrics_server_rules(stats_agent: Agent) -> None:
    agent = stats_agent
    wait_for(lambda: pod_container(summary(agent), "spin-testnode", "spin"), timeout=10, what="spin sampled")
    first = samples(agent, "/metrics/resource", "container_cpu_usage_seconds_total")
    time.sleep(2.2)
    second = samples(agent, "/metrics/resource", "container_cpu_usage_seconds_total")
    for pod, name in (("spin-testnode", "spin"), ("hog-testnode", "hog")):
        v1, t1 = labelled(first, container=name, pod=pod)
        v2, t2 = labelled(second, container=name, pod=pod)
        assert v1 > 0 and v2 >= v1 and t1 is not None and t2 is not None and t2 > t1  # timestamps advance
    memory = samples(agent, "/metrics/resource", "container_memory_working_set_bytes")
    assert all(value > 0 for value, _ in memory.values())
    starts = samples(agent, "/metrics/resource", "container_start_time_seconds")
    for value, ts in starts.values():
        assert ts is None and value > 1.6e9  # no timestamp, Unix seconds
    node = samples(agent, "/metrics/resource", "node_cpu_usage_seconds_total")
    assert next(iter(node.values()))[0] > 0


def test_volume_log_and_process_figures(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "volumeStatsAggPeriod: 1s\n")
    agent = start_agent("--config", str(config), "--housekeeping-interval", "1s", manifests=True)
    writer = manifest("writer", container("w", ["sh", "-c",
                                                "head -c 3145728 /dev/zero > /cache/blob; echo hello; sleep 3600"], """
        volumeMounts: [{name: cache, mountPath: /cache}]
    """), spec_extra="volumes: [{name: cache, emptyDir: {}}]")
    write(tmp_path / "manifests", "writer.yaml", writer)
    wait_for(lambda: running(agent, "writer"), timeout=30, what="writer running")

    def measured() -> dict[str, Any] | None:
        for pod in summary(agent)["pods"]:
            volumes = pod.get("volume", [])
            if pod["podRef"]["name"] == "writer-testnode" and volumes and volumes[0].get("usedBytes", 0) >= 3 * Mi:
                return pod
        return None

    pod = wait_for(measured, timeout=20, interval=0.5, what="the emptyDir's usage")
    cache = pod["volume"][0]
    assert cache["name"] == "cache" and cache["inodesUsed"] >= 2  # the directory and the file
    assert cache["capacityBytes"] >= cache["availableBytes"] > 0
    logs = pod["containers"][0]["logs"]
    assert logs["usedBytes"] > 0 and logs["inodesUsed"] >= 1
    eph = pod["ephemeral-storage"]
    assert eph["usedBytes"] >= cache["usedBytes"] + logs["usedBytes"]
    assert pod["process_stats"]["process_count"] >= 2  # the container's init, its shell and sleep
