"""Metric tables: one spec per instrument, built onto a registry in one loop.

HELP texts carry the Kubernetes stability prefix (`[ALPHA] `, `[STABLE] `) exactly as the
kubelet's component-base metrics print them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

Kind = Literal["counter", "gauge", "histogram"]
DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    help: str
    kind: Kind
    labels: Sequence[str] = ()
    stability: str = "ALPHA"
    buckets: Sequence[float] = DEF_BUCKETS

    @property
    def documentation(self) -> str:
        return f"[{self.stability}] {self.help}"


def new_registry() -> CollectorRegistry:
    """A fresh registry. The kubelet exposes no `_created` series, so neither do we."""
    disable_created_metrics()  # type: ignore[no-untyped-call]
    return CollectorRegistry(auto_describe=True)


def counter(spec: MetricSpec, registry: CollectorRegistry) -> Counter:
    if spec.kind != "counter":
        raise ValueError(f"{spec.name} is a {spec.kind}")
    return Counter(spec.name, spec.documentation, spec.labels, registry=registry)


def gauge(spec: MetricSpec, registry: CollectorRegistry) -> Gauge:
    if spec.kind != "gauge":
        raise ValueError(f"{spec.name} is a {spec.kind}")
    return Gauge(spec.name, spec.documentation, spec.labels, registry=registry)


def histogram(spec: MetricSpec, registry: CollectorRegistry) -> Histogram:
    if spec.kind != "histogram":
        raise ValueError(f"{spec.name} is a {spec.kind}")
    return Histogram(spec.name, spec.documentation, spec.labels, registry=registry, buckets=spec.buckets)
