"""The pod lifecycle's kubelet_* instruments (reference section 6.2), as one table.

The pods layer reports through small observer protocols it declares; this module implements
them with prometheus_client instruments on the /metrics registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from kubeletapi.metrics.spec import MetricSpec, counter, gauge, histogram

POD_START_BUCKETS = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200,
                     1800, 2700, 3600)
RUNTIME_OP_BUCKETS = tuple(0.005 * 2.5**i for i in range(14))

RUNNING_PODS = MetricSpec("kubelet_running_pods", "Number of pods that have a running pod sandbox", "gauge")
RUNNING_CONTAINERS = MetricSpec(
    "kubelet_running_containers", "Number of containers currently running", "gauge", ("container_state",)
)
DESIRED_PODS = MetricSpec(
    "kubelet_desired_pods",
    "The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.",
    "gauge", ("static",),
)
ACTIVE_PODS = MetricSpec(
    "kubelet_active_pods",
    "The number of pods the kubelet considers active and which are being considered when admitting new pods. "
    "static is true if the pod is not from the apiserver.",
    "gauge", ("static",),
)
POD_START = MetricSpec(
    "kubelet_pod_start_duration_seconds",
    "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
    "histogram", buckets=POD_START_BUCKETS,
)
POD_WORKER = MetricSpec(
    "kubelet_pod_worker_duration_seconds",
    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
    "histogram", ("operation_type",),
)
PLEG_RELIST = MetricSpec(
    "kubelet_pleg_relist_duration_seconds", "Duration in seconds for relisting pods in PLEG.", "histogram"
)
PLEG_INTERVAL = MetricSpec(
    "kubelet_pleg_relist_interval_seconds", "Interval in seconds between relisting in PLEG.", "histogram"
)
PLEG_LAST_SEEN = MetricSpec(
    "kubelet_pleg_last_seen_seconds", "Timestamp in seconds when PLEG was last seen active.", "gauge"
)
RUNTIME_OPS = MetricSpec(
    "kubelet_runtime_operations_total", "Cumulative number of runtime operations by operation type.",
    "counter", ("operation_type",),
)
RUNTIME_ERRORS = MetricSpec(
    "kubelet_runtime_operations_errors_total", "Cumulative number of runtime operation errors by operation type.",
    "counter", ("operation_type",),
)
RUNTIME_DURATION = MetricSpec(
    "kubelet_runtime_operations_duration_seconds",
    "Duration in seconds of runtime operations. Broken down by operation type.",
    "histogram", ("operation_type",), buckets=RUNTIME_OP_BUCKETS,
)
STARTED_PODS = MetricSpec("kubelet_started_pods_total", "Cumulative number of pods started", "counter")
STARTED_CONTAINERS = MetricSpec(
    "kubelet_started_containers_total", "Cumulative number of containers started", "counter", ("container_type",)
)
RESTARTED_PODS = MetricSpec(
    "kubelet_restarted_pods_total",
    "Number of pods that have been restarted because they were deleted and recreated with the same UID while the "
    "kubelet was watching them (common for static pods, extremely uncommon for API pods)",
    "counter", ("static",),
)
CONTAINERS_PER_POD = MetricSpec(
    "kubelet_containers_per_pod_count", "The number of containers per pod.", "histogram", buckets=(1, 2, 4, 8, 16)
)
MANIFEST_ERRORS = MetricSpec(
    "kubeletapi_static_pod_manifest_errors_total",
    "Static pod manifests rejected (unreadable, invalid, duplicate or over max-pods), by source type. "
    "GET /manifests lists the current ones with their reasons.",
    "counter", ("source",), stability="ALPHA",
)


class PodMetrics:
    """Instruments the pods layer reports to (via its observer protocols)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.running_pods = gauge(RUNNING_PODS, registry)
        self.running_containers = gauge(RUNNING_CONTAINERS, registry)
        self.desired_pods = gauge(DESIRED_PODS, registry)
        self.active_pods = gauge(ACTIVE_PODS, registry)
        self.pod_start = histogram(POD_START, registry)
        self.pod_worker = histogram(POD_WORKER, registry)
        self.pleg_relist = histogram(PLEG_RELIST, registry)
        self.pleg_interval = histogram(PLEG_INTERVAL, registry)
        self.pleg_last_seen = gauge(PLEG_LAST_SEEN, registry)
        self.runtime_ops = counter(RUNTIME_OPS, registry)
        self.runtime_errors = counter(RUNTIME_ERRORS, registry)
        self.runtime_duration = histogram(RUNTIME_DURATION, registry)
        self.started_pods = counter(STARTED_PODS, registry)
        self.started_containers = counter(STARTED_CONTAINERS, registry)
        self.restarted_pods = counter(RESTARTED_PODS, registry)
        self.containers_per_pod = histogram(CONTAINERS_PER_POD, registry)
        self.manifest_errors = counter(MANIFEST_ERRORS, registry)
        # Label sets the kubelet always exposes, so dashboards see zeros rather than absences.
        for state in ("running", "exited", "created", "unknown"):
            self.running_containers.labels(container_state=state).set(0)
        for static in ("true", "false"):
            self.desired_pods.labels(static=static).set(0)
            self.active_pods.labels(static=static).set(0)

    # pleg.RelistObserver
    def relisted(self, duration_s: float, interval_s: float | None, at: float) -> None:
        self.pleg_relist.observe(duration_s)
        if interval_s is not None:
            self.pleg_interval.observe(interval_s)
        self.pleg_last_seen.set(at)

