"""kubelet_evictions and kubelet_eviction_stats_age_seconds (pkg/kubelet/metrics/metrics.go).

The eviction manager reports each eviction and, for every threshold it acts on, how old the
stats were; this collector keeps the counts and renders them per scrape. As component-base vecs,
a family has no lines at all until its first observation, and the counter carries no `_total`.
"""

from __future__ import annotations

import bisect
import math

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from kubeletapi.metrics.certificates import UNSUFFIXED_COUNTER
from kubeletapi.metrics.spec import DEF_BUCKETS, MetricSpec

LABEL = "eviction_signal"
EVICTIONS = MetricSpec("kubelet_evictions", "Cumulative number of pod evictions by eviction signal", "counter",
                       (LABEL,))
STATS_AGE = MetricSpec(
    "kubelet_eviction_stats_age_seconds",
    "Time between when stats are collected, and when pod is evicted based on those stats by eviction signal",
    "histogram", (LABEL,),
)


class _Histogram:
    def __init__(self) -> None:
        self.counts = [0] * (len(DEF_BUCKETS) + 1)  # the last one: +Inf
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(DEF_BUCKETS, value)] += 1
        self.total += value


class EvictionMetrics(Collector):
    """The eviction manager's observer (eviction.manager.EvictionObserver) and the two families."""

    def __init__(self) -> None:
        self._evictions: dict[str, int] = {}
        self._ages: dict[str, _Histogram] = {}

    def evicted(self, signal: str) -> None:
        self._evictions[signal] = self._evictions.get(signal, 0) + 1

    def stats_age(self, signal: str, seconds: float) -> None:
        self._ages.setdefault(signal, _Histogram()).observe(seconds)

    def describe(self) -> list[Metric]:
        return []  # families appear with their first sample, so nothing to check up front

    def collect(self) -> list[Metric]:
        out = []
        if self._evictions:
            family = Metric(EVICTIONS.name, EVICTIONS.documentation, "counter")
            family.type = UNSUFFIXED_COUNTER  # prints "counter", gets no _total
            for signal, count in sorted(self._evictions.items()):
                family.add_sample(EVICTIONS.name, {LABEL: signal}, float(count))
            out.append(family)
        if self._ages:
            family = Metric(STATS_AGE.name, STATS_AGE.documentation, "histogram")
            for signal, hist in sorted(self._ages.items()):
                running = 0
                for bound, count in zip([*DEF_BUCKETS, math.inf], hist.counts, strict=True):
                    running += count
                    le = "+Inf" if bound == math.inf else str(bound)  # the renderer writes Go's form
                    family.add_sample(f"{STATS_AGE.name}_bucket", {LABEL: signal, "le": le}, float(running))
                family.add_sample(f"{STATS_AGE.name}_sum", {LABEL: signal}, hist.total)
                family.add_sample(f"{STATS_AGE.name}_count", {LABEL: signal}, float(running))
            out.append(family)
        return out

