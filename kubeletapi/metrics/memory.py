"""The memory manager's kubelet_* counters (pkg/kubelet/metrics/metrics.go), registered always as
the kubelet registers them; cm.memorymanager reports through its PinningObserver."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kubeletapi.metrics.spec import MetricSpec, counter

PINNING_REQUESTS = MetricSpec("kubelet_memory_manager_pinning_requests_total",
                              "The number of memory pages allocations which required pinning.", "counter")
PINNING_ERRORS = MetricSpec("kubelet_memory_manager_pinning_errors_total",
                            "The number of memory pages allocations which required pinning that failed.", "counter")


class MemoryManagerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._requests = counter(PINNING_REQUESTS, registry)
        self._errors = counter(PINNING_ERRORS, registry)

    def pinning(self, failed: bool) -> None:
        self._requests.inc()
        if failed:
            self._errors.inc()
