"""The kubelet_* instruments of /metrics (names, labels and buckets of pkg/kubelet/metrics/metrics.go)."""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable

from prometheus_client import CollectorRegistry, ProcessCollector

from kubeletapi import __version__
from kubeletapi.metrics.process import ProcessExtrasCollector
from kubeletapi.metrics.spec import MetricSpec, counter, gauge, histogram

HTTP_LABELS = ("method", "path", "server_type", "long_running")
_GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}

NODE_NAME = MetricSpec("kubelet_node_name", "The node's name. The count is always 1.", "gauge", ("node",))
BUILD_INFO = MetricSpec(
    "kubernetes_build_info",
    "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree "
    "state, build date, Go version, and compiler from which Kubernetes was built, and platform on "
    "which it is running.",
    "gauge",
    ("build_date", "compiler", "git_commit", "git_tree_state", "git_version", "go_version", "major",
     "minor", "platform"),
)
HTTP_REQUESTS = MetricSpec(
    "kubelet_http_requests_total", "Number of the http requests received since the server started",
    "counter", HTTP_LABELS,
)
HTTP_DURATION = MetricSpec(
    "kubelet_http_requests_duration_seconds", "Duration in seconds to serve http requests",
    "histogram", HTTP_LABELS,
)
HTTP_INFLIGHT = MetricSpec(
    "kubelet_http_inflight_requests", "Number of the inflight http requests", "gauge", HTTP_LABELS
)
CGROUP_VERSION = MetricSpec("kubelet_cgroup_version", "cgroup version on the hosts.", "gauge")
LOOP_LAG = MetricSpec(
    "kubeletapi_event_loop_lag_seconds",
    "How much later than scheduled the agent's event loop ran a 50 ms heartbeat: time the loop was "
    "held by other work.",
    "histogram", buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
SERVER_CERT_TTL = MetricSpec(
    "kubelet_certificate_manager_server_ttl_seconds",
    "Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in "
    "seconds until certificate expiry (negative if already expired). If serving certificate is "
    "invalid or unused, the value will be +INF.",
    "gauge",
)


class KubeletMetrics:
    """The instruments of the /metrics registry that this layer owns."""

    def __init__(self, registry: CollectorRegistry, node_name: str, cert_ttl: Callable[[], float]) -> None:
        ProcessCollector(registry=registry)
        registry.register(ProcessExtrasCollector())  # client_golang's three more
        gauge(NODE_NAME, registry).labels(node=node_name).set(1)
        major, minor = __version__.split(".")[:2]
        gauge(BUILD_INFO, registry).labels(
            build_date="", compiler=sys.implementation.name, git_commit="", git_tree_state="",
            git_version=f"v{__version__}", go_version=f"python{platform.python_version()}",
            major=major, minor=minor, platform=f"{sys.platform}/{_GOARCH.get(platform.machine(), platform.machine())}",
        ).set(1)
        gauge(SERVER_CERT_TTL, registry).set_function(cert_ttl)
        self.cgroup_version = gauge(CGROUP_VERSION, registry)  # set by the agent once it knows the host
        self.http_requests = counter(HTTP_REQUESTS, registry)
        self.http_duration = histogram(HTTP_DURATION, registry)
        self.http_inflight = gauge(HTTP_INFLIGHT, registry)
        self.loop_lag = histogram(LOOP_LAG, registry)
