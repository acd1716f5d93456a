"""/metrics/probes: the kubelet's probe metrics registry.

For now it holds what the kubelet registers there besides the prober's own families:
component-base's process_start_time_seconds (`[ALPHA]`, value in Unix seconds). The prober
families (prober_probe_total, prober_probe_duration_seconds) join it with the probes.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kubeletapi.metrics.spec import MetricSpec

PROCESS_START = MetricSpec("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                           "gauge")


class _ProcessStart(Collector):
    def __init__(self, start_s: float) -> None:
        self._start_s = start_s

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(PROCESS_START.name, PROCESS_START.documentation, value=self._start_s)


class ProbeMetrics:
    def __init__(self, registry: CollectorRegistry, process_start_s: float) -> None:
        registry.register(_ProcessStart(process_start_s))
