"""Liveness, readiness and startup probes: workers, handlers (exec, httpGet, tcpSocket, grpc), results."""

from kubeletapi.prober.manager import ProbeManager
from kubeletapi.prober.results import ProbeKey, ProbeObserver, ProbeRecord, ProbeType, Result

__all__ = ["ProbeKey", "ProbeManager", "ProbeObserver", "ProbeRecord", "ProbeType", "Result"]
