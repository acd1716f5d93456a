"""/metrics/resource: the kubelet's resource metrics, derived from the CPU-and-memory summary.

Families, HELP texts, stability prefixes, labels and timestamps as the kubelet's
pkg/kubelet/metrics/collectors/resource_metrics.go writes them: each sample carries the time of
the stats it comes from (Unix ms), except container_start_time_seconds; on a summary error only
resource_scrape_error is written, set to 1. (The kubelet also declares scrape_error, deprecated
in 1.29 and so hidden since 1.31: it never writes it.)

One deliberate difference, for metrics-server: a container CPU or working-set sample whose value
is 0 (a container sampled before it ran, or never sampled yet) is left out instead of written as
0. metrics-server drops a whole pod when any of its containers reports 0 CPU or 0 memory; a
missing sample only leaves that container out until the next housekeeping.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubeletapi.api import stats_v1alpha1 as api
from kubeletapi.metrics.exposition import Family, Labels, render

NS_PER_S = 1e9
NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class _Spec:
    name: str
    help: str
    type: str
    stability: str

    def family(self) -> Family:
        return Family(self.name, f"[{self.stability}] {self.help}", self.type)


_SWAP = ". Reported only on non-windows systems"
SPECS = {
    s.name: s
    for s in (
        _Spec("node_cpu_usage_seconds_total", "Cumulative cpu time consumed by the node in core-seconds",
              "counter", "STABLE"),
        _Spec("node_memory_working_set_bytes", "Current working set of the node in bytes", "gauge", "STABLE"),
        _Spec("node_swap_usage_bytes", "Current swap usage of the node in bytes" + _SWAP, "gauge", "ALPHA"),
        _Spec("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds",
              "counter", "STABLE"),
        _Spec("container_memory_working_set_bytes", "Current working set of the container in bytes",
              "gauge", "STABLE"),
        _Spec("container_swap_usage_bytes", "Current amount of the container swap usage in bytes" + _SWAP,
              "gauge", "ALPHA"),
        _Spec("container_swap_limit_bytes", "Current amount of the container swap limit in bytes" + _SWAP,
              "gauge", "ALPHA"),
        _Spec("container_start_time_seconds", "Start time of the container since unix epoch in seconds",
              "gauge", "STABLE"),
        _Spec("pod_cpu_usage_seconds_total", "Cumulative cpu time consumed by the pod in core-seconds",
              "counter", "STABLE"),
        _Spec("pod_memory_working_set_bytes", "Current working set of the pod in bytes", "gauge", "STABLE"),
        _Spec("pod_swap_usage_bytes", "Current amount of the pod swap usage in bytes" + _SWAP, "gauge", "ALPHA"),
        _Spec("resource_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise",
              "gauge", "STABLE"),
    )
}


def _ms(ns: int) -> int:
    return ns // NS_PER_MS


def render_resource(summary: api.Summary | None) -> bytes:
    """The text exposition for a CPU-and-memory summary; None means the summary failed."""
    fam = {name: spec.family() for name, spec in SPECS.items()}
    error = 1 if summary is None else 0
    fam["resource_scrape_error"].add((), error)
    if summary is not None:
        _node(fam, summary.node)
        for pod in summary.pods:
            _pod(fam, pod)
    return render(fam.values())


def _node(fam: dict[str, Family], node: api.NodeStats) -> None:
    if node.cpu is not None and node.cpu.usage_core_nano_seconds is not None:
        fam["node_cpu_usage_seconds_total"].add((), node.cpu.usage_core_nano_seconds / NS_PER_S, _ms(node.cpu.time))
    if node.memory is not None and node.memory.working_set_bytes is not None:
        fam["node_memory_working_set_bytes"].add((), node.memory.working_set_bytes, _ms(node.memory.time))
    if node.swap is not None and node.swap.swap_usage_bytes is not None and node.memory is not None:
        fam["node_swap_usage_bytes"].add((), node.swap.swap_usage_bytes, _ms(node.memory.time))


def _pod(fam: dict[str, Family], pod: api.PodStats) -> None:
    for c in pod.containers:
        labels: Labels = (("container", c.name), ("namespace", pod.namespace), ("pod", pod.name))
        if c.start_time >= 1_000_000_000:  # Go: StartTime.Unix() > 0
            fam["container_start_time_seconds"].add(labels, c.start_time / NS_PER_S)
        if c.cpu is not None and c.cpu.usage_core_nano_seconds:
            fam["container_cpu_usage_seconds_total"].add(labels, c.cpu.usage_core_nano_seconds / NS_PER_S,
                                                         _ms(c.cpu.time))
        if c.memory is not None and c.memory.working_set_bytes:
            fam["container_memory_working_set_bytes"].add(labels, c.memory.working_set_bytes, _ms(c.memory.time))
        if c.swap is not None:
            usage = c.swap.swap_usage_bytes
            if usage is not None:
                fam["container_swap_usage_bytes"].add(labels, usage, _ms(c.swap.time))
            if c.swap.swap_available_bytes is not None:
                fam["container_swap_limit_bytes"].add(labels, c.swap.swap_available_bytes + (usage or 0),
                                                      _ms(c.swap.time))
    labels = (("namespace", pod.namespace), ("pod", pod.name))
    if pod.cpu is not None and pod.cpu.usage_core_nano_seconds is not None:
        fam["pod_cpu_usage_seconds_total"].add(labels, pod.cpu.usage_core_nano_seconds / NS_PER_S, _ms(pod.cpu.time))
    if pod.memory is not None and pod.memory.working_set_bytes is not None:
        fam["pod_memory_working_set_bytes"].add(labels, pod.memory.working_set_bytes, _ms(pod.memory.time))
    if pod.swap is not None and pod.swap.swap_usage_bytes is not None:
        fam["pod_swap_usage_bytes"].add(labels, pod.swap.swap_usage_bytes, _ms(pod.swap.time))
