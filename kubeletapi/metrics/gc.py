"""Garbage collection's kubelet_* instruments (pkg/kubelet/metrics/metrics.go), as a table.

The 1.34 kubelet has one: kubelet_image_garbage_collected_total{reason} (reason "age": unused
longer than imageMaximumGCAge, "space": freed for the high threshold or the eviction manager).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kubeletapi.metrics.spec import MetricSpec, counter

IMAGE_GARBAGE_COLLECTED = MetricSpec(
    "kubelet_image_garbage_collected_total",
    "Total number of images garbage collected by the kubelet, whether through disk usage or image age.",
    "counter", ("reason",),
)


class GCMetrics:
    """pods.imagegc.ImageGCObserver on the /metrics registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._images = counter(IMAGE_GARBAGE_COLLECTED, registry)

    def image_collected(self, reason: str) -> None:
        self._images.labels(reason=reason).inc()
