"""A collector of counter and gauge families over one value of plain counts, read once per scrape
through a table of (spec, label values, reader) rows: what the sink's and the event recorder's
metrics share."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubeletapi.metrics.spec import MetricSpec

log = logging.getLogger(__name__)

C = TypeVar("C")
Row = tuple[MetricSpec, tuple[str, ...], Callable[[C], int]]


class CountsCollector(Collector, Generic[C]):
    """The table's families from `counts()`; a scrape never fails (`what` names them in the log)."""

    def __init__(self, what: str, table: Sequence[Row[C]], counts: Callable[[], C]) -> None:
        self._what = what
        self._table = table
        self._counts = counts

    def describe(self) -> list[Metric]:
        return list(self._families().values())

    def collect(self) -> list[Metric]:
        families = self._families()
        try:
            counts = self._counts()
        except Exception:  # a scrape must never fail
            log.exception("%s metrics: reading the counts failed", self._what)
            return []
        for spec, labels, value in self._table:
            families[spec.name].add_metric(labels, value(counts))
        return list(families.values())

    def _families(self) -> dict[str, CounterMetricFamily | GaugeMetricFamily]:
        out: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
        for spec, _, _ in self._table:
            if spec.name not in out:
                if spec.kind == "counter":  # the family's name drops _total; its sample keeps it
                    out[spec.name] = CounterMetricFamily(spec.name.removesuffix("_total"), spec.documentation,
                                                         labels=spec.labels)
                else:
                    out[spec.name] = GaugeMetricFamily(spec.name, spec.documentation, labels=spec.labels)
        return out
