"""Host: the only thing route handlers call. The composition root (kubelet.py) implements it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from prometheus_client.registry import Collector

from kubeletapi.health import HealthCheck


class Host(Protocol):
    """What the HTTP layer may ask of the node agent."""

    @property
    def node_name(self) -> str:
        """The node's name (hostname-override or the lower-cased hostname)."""
        ...

    def health_checks(self) -> Sequence[HealthCheck]:
        """The /healthz checks of the secure and read-only listeners, in order."""
        ...

    def configz(self) -> Mapping[str, Any]:
        """{"kubeletconfig": <effective v1beta1 configuration, secrets redacted>}."""
        ...

    def metrics_registry(self, endpoint: str) -> Collector:
        """The registry behind /metrics (endpoint "metrics") and later /metrics/<x>."""
        ...
