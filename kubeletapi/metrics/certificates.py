"""kubelet_certificate_manager_client_*: the client certificate's TTL and renewal errors, read at
scrape time from the certificate manager (names, types and help of the kubelet's
cmd/kubelet/app/server.go and pkg/kubelet/certificate/kubelet.go).

component-base counters carry no `_total` suffix, so the renewal-error counter's sample is named
as its family (prometheus_client's own Counter would append `_total`). The serving certificate's
TTL gauge is in metrics/kubelet.py (every node with a secure port has it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from kubeletapi.metrics.spec import MetricSpec

log = logging.getLogger(__name__)


class ClientCertificate(Protocol):
    def ttl(self) -> float: ...
    @property
    def renew_errors(self) -> int: ...


CLIENT_TTL = MetricSpec(
    "kubelet_certificate_manager_client_ttl_seconds",
    "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until "
    "certificate expiry (negative if already expired). If client certificate is invalid or unused, the value "
    "will be +INF.",
    "gauge",
)
CLIENT_RENEW_ERRORS = MetricSpec(
    "kubelet_certificate_manager_client_expiration_renew_errors", "Counter of certificate renewal errors.",
    "counter",
)
TABLE: list[tuple[MetricSpec, Callable[[ClientCertificate], float]]] = [
    (CLIENT_TTL, lambda c: c.ttl()),
    (CLIENT_RENEW_ERRORS, lambda c: c.renew_errors),
]


class ClientCertificateCollector(Collector):
    """The client certificate's families from `manager`, read once per scrape; never raises."""

    def __init__(self, manager: ClientCertificate) -> None:
        self._manager = manager

    def describe(self) -> list[Metric]:
        return [Metric(spec.name, spec.documentation, spec.kind) for spec, _ in TABLE]

    def collect(self) -> list[Metric]:
        out = []
        for spec, read in TABLE:
            family = Metric(spec.name, spec.documentation, spec.kind)
            try:
                family.add_sample(spec.name, {}, float(read(self._manager)))
            except Exception:  # a scrape must never fail
                log.exception("certificate metrics: reading %s failed", spec.name)
                continue
            out.append(family)
        return out
