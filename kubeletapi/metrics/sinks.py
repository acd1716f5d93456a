"""kubeletapi_influxdb_*: what the InfluxDB sink wrote, retried, dropped and holds, read at scrape time.

The sink keeps plain counts; this collector turns them into families per scrape through a table of
specs (the sink layer and this one do not import each other: the counts are read through the narrow
protocol below, filled in by the composition root).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubeletapi.metrics.spec import MetricSpec

log = logging.getLogger(__name__)


class SinkCounts(Protocol):
    @property
    def written(self) -> int: ...
    @property
    def retried(self) -> int: ...
    @property
    def dropped_buffer_full(self) -> int: ...
    @property
    def dropped_rejected(self) -> int: ...
    @property
    def buffered(self) -> int: ...


WRITTEN = MetricSpec("kubeletapi_influxdb_points_written_total", "Points the InfluxDB sink wrote.", "counter")
RETRIED = MetricSpec(
    "kubeletapi_influxdb_points_retried_total",
    "Points of failed InfluxDB writes kept to be sent again (counted once per failed attempt).", "counter",
)
DROPPED = MetricSpec(
    "kubeletapi_influxdb_points_dropped_total",
    "Points the InfluxDB sink gave up on: buffer_full (the oldest, for want of room) or rejected "
    "(InfluxDB refused them: bad points or too large a batch).", "counter", ("reason",),
)
BUFFERED = MetricSpec("kubeletapi_influxdb_buffered_points", "Points waiting to be written to InfluxDB.", "gauge")

# (spec, label values, value) per series.
TABLE: list[tuple[MetricSpec, tuple[str, ...], Callable[[SinkCounts], int]]] = [
    (WRITTEN, (), lambda c: c.written),
    (RETRIED, (), lambda c: c.retried),
    (DROPPED, ("buffer_full",), lambda c: c.dropped_buffer_full),
    (DROPPED, ("rejected",), lambda c: c.dropped_rejected),
    (BUFFERED, (), lambda c: c.buffered),
]


class SinkCollector(Collector):
    """The kubeletapi_influxdb_* families from `counts()`, read once per scrape; never raises."""

    def __init__(self, counts: Callable[[], SinkCounts]) -> None:
        self._counts = counts

    def describe(self) -> list[Metric]:
        return list(_families().values())

    def collect(self) -> list[Metric]:
        families = _families()
        try:
            counts = self._counts()
        except Exception:  # a scrape must never fail
            log.exception("influxdb sink metrics: reading the counts failed")
            return []
        for spec, labels, value in TABLE:
            families[spec.name].add_metric(labels, value(counts))
        return list(families.values())


def _families() -> dict[str, CounterMetricFamily | GaugeMetricFamily]:
    out: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
    for spec, _, _ in TABLE:
        if spec.name not in out:
            if spec.kind == "counter":  # the family's name drops _total; its sample keeps it
                out[spec.name] = CounterMetricFamily(spec.name.removesuffix("_total"), spec.documentation,
                                                     labels=spec.labels)
            else:
                out[spec.name] = GaugeMetricFamily(spec.name, spec.documentation, labels=spec.labels)
    return out
