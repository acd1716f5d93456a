"""kubelet_certificate_manager_client_*: the client certificate's TTL and renewal errors, read at
scrape time from the certificate manager (names, types and help of the kubelet's
cmd/kubelet/app/server.go and pkg/kubelet/certificate/kubelet.go).

component-base counters carry no `_total` suffix: the renewal-error counter is exposed under the
kubelet's name, sample and HELP/TYPE alike. prometheus_client's text encoder appends `_total` to
the HELP/TYPE name of every family whose type equals "counter"; this family's type is a string
that prints as "counter" without being equal to it (_UnsuffixedCounter), so the encoder leaves
the name alone. The serving certificate's TTL gauge is in metrics/kubelet.py (every node with a
secure port has it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from kubeletapi.metrics.spec import MetricSpec

log = logging.getLogger(__name__)


class _UnsuffixedCounter(str):
    """Prints as "counter"; compares unequal to it, so no `_total` is appended (see above)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return other is self

    def __ne__(self, other: object) -> bool:
        return other is not self

    __hash__ = str.__hash__


UNSUFFIXED_COUNTER = _UnsuffixedCounter("counter")


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
    "kubelet_certificate_manager_client_expiration_renew_errors",
    "Counter of certificate renewal errors.",
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
        return [_family(spec) for spec, _ in TABLE]

    def collect(self) -> list[Metric]:
        out = []
        for spec, read in TABLE:
            family = _family(spec)
            try:
                family.add_sample(spec.name, {}, float(read(self._manager)))
            except Exception:  # a scrape must never fail
                log.exception("certificate metrics: reading %s failed", spec.name)
                continue
            out.append(family)
        return out


def _family(spec: MetricSpec) -> Metric:
    family = Metric(spec.name, spec.documentation, spec.kind)
    if spec.kind == "counter":
        family.type = UNSUFFIXED_COUNTER
    return family
