"""The pod startup SLI's families (pkg/kubelet/metrics/metrics.go), set by
pods.startupsli.PodStartupTracker.

The two histograms are component-base vecs with no labels: no lines at all until the first
observation (a standalone kubelet, whose pods are all static, never shows them); they are put on
the registry then. The gauge is registered from the start, so it shows its 0 until the node's
first pod without hostNetwork is measured.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from kubeletapi.metrics.pods import POD_START_BUCKETS
from kubeletapi.metrics.spec import MetricSpec, gauge, histogram

_SUFFIX = ("excluding time to pull images and run init containers, measured from pod creation timestamp to when "
           "all its containers are reported as started and observed via watch")
POD_START_SLI = MetricSpec(
    "kubelet_pod_start_sli_duration_seconds", f"Duration in seconds to start a pod, {_SUFFIX}",
    "histogram", buckets=POD_START_BUCKETS,
)
POD_START_TOTAL = MetricSpec(
    "kubelet_pod_start_total_duration_seconds",
    "Duration in seconds to start a pod since creation, including time to pull images and run init containers, "
    "measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
    "histogram", buckets=POD_START_BUCKETS,
)
FIRST_NETWORK_POD_START_SLI = MetricSpec(
    "kubelet_first_network_pod_start_sli_duration_seconds",
    f"Duration in seconds to start the first network pod, {_SUFFIX}", "gauge", stability="INTERNAL",
)


class PodStartupMetrics:
    """pods.startupsli.PodStartupObserver on the /metrics registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._first_network = gauge(FIRST_NETWORK_POD_START_SLI, registry)
        self._histograms: tuple[Histogram, Histogram] | None = None  # registered at the first pod

    def pod_startup_observed(self, sli_s: float, total_s: float, first_network: bool) -> None:
        sli, total = self._registered()
        sli.observe(sli_s)
        total.observe(total_s)
        if first_network:
            self._first_network.set(sli_s)

    def _registered(self) -> tuple[Histogram, Histogram]:
        if self._histograms is None:
            self._histograms = (histogram(POD_START_SLI, self._registry), histogram(POD_START_TOTAL, self._registry))
        return self._histograms
