"""/metrics/probes: the kubelet's probe metrics registry.

- prober_probe_total{probe_type, result, container, pod, namespace, pod_uid}: one increment per
  probe run that counted (result successful | failed | unknown; an errored run is thrown away,
  as the kubelet's worker does). `[BETA]`, as in current kubelets.
- prober_probe_duration_seconds{probe_type, container, pod, namespace}: default buckets,
  observed for successful (and unknown) runs only, as the kubelet does.
- component-base's process_start_time_seconds (Unix seconds).
A worker's series are removed when it stops (its pod is removed or finished).

ProbeMetrics is the prober's ProbeObserver; the manager reports to it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kubeletapi.metrics.spec import MetricSpec, counter, histogram
from kubeletapi.prober.results import ProbeKey, ProbeRecord, Result

PROCESS_START = MetricSpec("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                           "gauge")
PROBE_TOTAL = MetricSpec(
    "prober_probe_total", "Cumulative number of a liveness, readiness or startup probe for a container by result.",
    "counter", ("probe_type", "result", "container", "pod", "namespace", "pod_uid"), stability="BETA",
)
PROBE_DURATION = MetricSpec(
    "prober_probe_duration_seconds", "Duration in seconds for a probe response.",
    "histogram", ("probe_type", "container", "pod", "namespace"),
)


class _ProcessStart(Collector):
    def __init__(self, start_s: float) -> None:
        self._start_s = start_s

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(PROCESS_START.name, PROCESS_START.documentation, value=self._start_s)


class ProbeMetrics:
    """The /metrics/probes registry's instruments; a ProbeObserver."""

    def __init__(self, registry: CollectorRegistry, process_start_s: float) -> None:
        registry.register(_ProcessStart(process_start_s))
        self.total = counter(PROBE_TOTAL, registry)
        self.duration = histogram(PROBE_DURATION, registry)

    def probe_finished(self, record: ProbeRecord) -> None:
        key = record.key
        kind = key.probe_type.value
        self.total.labels(kind, record.result.value, key.container, key.pod, key.namespace, key.pod_uid).inc()
        if record.result is not Result.FAILURE:
            self.duration.labels(kind, key.container, key.pod, key.namespace).observe(record.duration_s)

    def worker_stopped(self, key: ProbeKey) -> None:
        kind = key.probe_type.value
        for result in Result:
            with contextlib.suppress(KeyError):
                self.total.remove(kind, result.value, key.container, key.pod, key.namespace, key.pod_uid)
        with contextlib.suppress(KeyError):
            self.duration.remove(kind, key.container, key.pod, key.namespace)
