"""kubelet_http_* metrics for every request, recorded before routing and authentication.

Label values follow pkg/kubelet/server: `method` is one of the standard methods or "other";
`path` is the first path segment (or `metrics/<x>`) when it is a registered bucket, else
"other"; `long_running` is "true" for exec, attach, portforward and debug. The upstream map
spells "portforward" while the bucket is "portForward", so port-forward reads "false"; we
reproduce that quirk because dashboards are built on the real values.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from prometheus_client import Counter, Gauge, Histogram
from starlette.types import ASGIApp, Receive, Scope, Send

from kubeletapi.metrics.kubelet import KubeletMetrics

METHODS = frozenset({"OPTIONS", "GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "CONNECT"})
LONG_RUNNING = frozenset({"exec", "attach", "portforward", "debug"})
AUTH_NOT_REQUIRED_BUCKETS = (
    "healthz", "pods", "stats", "metrics", "metrics/cadvisor", "metrics/probes", "metrics/resource",
)
DEBUGGING_BUCKETS = (
    "logs", "debug", "run", "exec", "attach", "portForward", "containerLogs", "configz", "runningpods",
)
DEBUGGING_DISABLED_BUCKETS = ("run", "exec", "attach", "portForward", "containerLogs", "runningpods", "pprof", "logs")


def path_bucket(path: str, buckets: frozenset[str]) -> str:
    """The `path` label of a request path."""
    parts = path.lstrip("/").split("/", 2)
    root = f"metrics/{parts[1]}" if parts[0] == "metrics" and len(parts) >= 2 else parts[0]
    return root if root in buckets else "other"


class _Children:
    __slots__ = ("count", "duration", "inflight")

    def __init__(self, count: Counter, duration: Histogram, inflight: Gauge) -> None:
        self.count = count
        self.duration = duration
        self.inflight = inflight


class InstrumentationMiddleware:
    """Outermost middleware of the secure and read-only apps."""

    def __init__(self, app: ASGIApp, metrics: KubeletMetrics, server_type: str, buckets: Iterable[str]) -> None:
        self.app = app
        self._metrics = metrics
        self._server_type = server_type
        self._buckets = frozenset(buckets)
        self._children: dict[tuple[str, str], _Children] = {}

    def _for(self, method: str, path: str) -> _Children:
        method = method if method in METHODS else "other"
        bucket = path_bucket(path, self._buckets)
        key = (method, bucket)
        children = self._children.get(key)
        if children is None:
            labels = (method, bucket, self._server_type, "true" if bucket in LONG_RUNNING else "false")
            m = self._metrics
            children = _Children(
                m.http_requests.labels(*labels), m.http_duration.labels(*labels), m.http_inflight.labels(*labels)
            )
            self._children[key] = children  # bounded: at most |METHODS|+1 x |buckets|+1 entries
        return children

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        children = self._for(scope.get("method", "GET"), scope["path"])
        children.count.inc()
        children.inflight.inc()
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            children.inflight.dec()
            children.duration.observe(time.perf_counter() - start)

