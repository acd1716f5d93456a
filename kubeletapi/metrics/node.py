"""kubelet_node_startup_*_duration_seconds (pkg/kubelet/metrics/metrics.go): gauges of the node's
startup phases, set by node.startup.NodeStartupTracker; 0 until measured, as the kubelet's."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kubeletapi.metrics.spec import MetricSpec, gauge

NODE_STARTUP = {
    "pre_kubelet": MetricSpec("kubelet_node_startup_pre_kubelet_duration_seconds",
                              "Duration in seconds of node startup before kubelet starts.", "gauge"),
    "pre_registration": MetricSpec("kubelet_node_startup_pre_registration_duration_seconds",
                                   "Duration in seconds of node startup before registration.", "gauge"),
    "registration": MetricSpec("kubelet_node_startup_registration_duration_seconds",
                               "Duration in seconds of node startup during registration.", "gauge"),
    "post_registration": MetricSpec("kubelet_node_startup_post_registration_duration_seconds",
                                    "Duration in seconds of node startup after registration.", "gauge"),
    "total": MetricSpec("kubelet_node_startup_duration_seconds", "Duration in seconds of node startup in total.",
                        "gauge"),
}


class NodeStartupMetrics:
    """node.startup.StartupObserver on the /metrics registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._gauges = {phase: gauge(spec, registry) for phase, spec in NODE_STARTUP.items()}

    def node_startup_phase(self, phase: str, seconds: float) -> None:
        self._gauges[phase].set(seconds)
