"""kubeletapi_influxdb_*: what the InfluxDB sink wrote, retried, dropped and holds, read at scrape time.

The sink keeps plain counts; this collector turns them into families per scrape through a table of
specs (the sink layer and this one do not import each other: the counts are read through the narrow
protocol below, filled in by the composition root).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kubeletapi.metrics.counts import CountsCollector
from kubeletapi.metrics.spec import MetricSpec


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


class SinkCollector(CountsCollector[SinkCounts]):
    """The kubeletapi_influxdb_* families from `counts()`, read once per scrape; never raises."""

    def __init__(self, counts: Callable[[], SinkCounts]) -> None:
        super().__init__("influxdb sink", TABLE, counts)
