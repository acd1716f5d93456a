"""The pod lifecycle's kubelet_* instruments (pkg/kubelet/metrics/metrics.go), as one table.

The pods layer reports through small observer protocols it declares; this module implements
them with prometheus_client instruments on the /metrics registry.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kubeletapi.metrics.spec import MetricSpec, counter, gauge, histogram

log = logging.getLogger(__name__)

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
STARTED_PODS_ERRORS = MetricSpec(
    "kubelet_started_pods_errors_total", "Cumulative number of errors when starting pods", "counter"
)
RUN_SANDBOX_DURATION = MetricSpec(
    "kubelet_run_podsandbox_duration_seconds",
    "Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.",
    "histogram", ("runtime_handler",),
)
RUN_SANDBOX_ERRORS = MetricSpec(
    "kubelet_run_podsandbox_errors_total",
    "Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.",
    "counter", ("runtime_handler",),
)
POD_WORKER_START = MetricSpec(
    "kubelet_pod_worker_start_duration_seconds", "Duration in seconds from kubelet seeing a pod to starting a worker.",
    "histogram",
)
WORKING_PODS = MetricSpec(
    "kubelet_working_pods",
    "Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, "
    "orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from "
    "local configuration or force deleted in the API and consumes resources that are not otherwise visible.",
    "gauge", ("lifecycle", "config", "static"),
)
ORPHANED_RUNTIME_PODS = MetricSpec(
    "kubelet_orphaned_runtime_pods_total",
    "Number of pods that have been detected in the container runtime without being already known to the pod worker. "
    "This typically indicates the kubelet was restarted while a pod was force deleted in the API or in the local "
    "configuration, which is unusual.",
    "counter",
)
POD_STATUS_SYNC = MetricSpec(
    "kubelet_pod_status_sync_duration_seconds",
    "Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until "
    "the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.",
    "histogram", buckets=(0.010, 0.050, 0.100, 0.500, 1, 5, 10, 20, 30, 45, 60),
)
LIFECYCLE_HTTP_FALLBACKS = MetricSpec(
    "kubelet_lifecycle_handler_http_fallbacks_total",
    "The number of times lifecycle handlers successfully fell back to http from https.", "counter",
)
MIRROR_PODS = MetricSpec(
    "kubelet_mirror_pods", "The number of mirror pods the kubelet will try to create (one per admitted static pod)",
    "gauge",
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
        self.started_pods_errors = counter(STARTED_PODS_ERRORS, registry)
        self.run_sandbox_duration = histogram(RUN_SANDBOX_DURATION, registry)
        self.run_sandbox_errors = counter(RUN_SANDBOX_ERRORS, registry)
        self.pod_worker_start = histogram(POD_WORKER_START, registry)
        self.working_pods = gauge(WORKING_PODS, registry)
        self.orphaned_runtime_pods = counter(ORPHANED_RUNTIME_PODS, registry)
        self.mirror_pods = gauge(MIRROR_PODS, registry)
        self.pod_status_sync = histogram(POD_STATUS_SYNC, registry)
        self.lifecycle_http_fallbacks = counter(LIFECYCLE_HTTP_FALLBACKS, registry)
        # Label sets the kubelet always exposes, so dashboards see zeros rather than absences.
        for state in ("running", "exited", "created", "unknown"):
            self.running_containers.labels(container_state=state).set(0)
        for static in ("true", ""):  # the kubelet's labels: "true" for static pods, "" for the others
            self.desired_pods.labels(static=static).set(0)
            self.active_pods.labels(static=static).set(0)
        for static in ("true", ""):  # the kubelet adds 0 to both at every pod cleanup
            self.restarted_pods.labels(static=static)

    # pleg.RelistObserver
    def relisted(self, duration_s: float, interval_s: float | None, at: float) -> None:
        self.pleg_relist.observe(duration_s)
        if interval_s is not None:
            self.pleg_interval.observe(interval_s)
        self.pleg_last_seen.set(at)

    def runtime_counted(self, running_pods: int, containers: Mapping[str, int]) -> None:
        self.running_pods.set(running_pods)
        for state in ("running", "exited", "created", "unknown"):
            self.running_containers.labels(container_state=state).set(containers.get(state, 0))

    # sync.SyncObserver
    def pod_synced(self, operation: str, duration_s: float) -> None:
        self.pod_worker.labels(operation_type=operation).observe(duration_s)

    def pod_started(self) -> None:
        self.started_pods.inc()

    def containers_counted(self, containers: int) -> None:
        self.containers_per_pod.observe(containers)

    def pod_running(self, seconds_since_seen: float) -> None:
        self.pod_start.observe(seconds_since_seen)

    def container_started(self, kind: str) -> None:
        self.started_containers.labels(container_type=kind).inc()

    def pod_worker_started(self, seconds_since_seen: float) -> None:
        self.pod_worker_start.observe(seconds_since_seen)

    def pod_start_failed(self) -> None:
        self.started_pods_errors.inc()

    def lifecycle_http_fallback(self) -> None:
        self.lifecycle_http_fallbacks.inc()

    # apistatus.StatusSyncObserver
    def status_synced(self, duration_s: float) -> None:
        self.pod_status_sync.observe(duration_s)

    # manager.ManagerObserver
    def pods_counted(self, static: bool, desired: int, active: int) -> None:
        self.desired_pods.labels(static=static_label(static)).set(desired)
        self.active_pods.labels(static=static_label(static)).set(active)

    def manifest_rejected(self, source: str) -> None:
        self.manifest_errors.labels(source=source).inc()

    def pod_restarted(self, static: bool) -> None:
        self.restarted_pods.labels(static=static_label(static)).inc()

    def pods_cleaned_up(self, working: Mapping[tuple[str, str, str], int], orphans: int, mirror_pods: int) -> None:
        for (lifecycle, config, static), count in working.items():
            self.working_pods.labels(lifecycle=lifecycle, config=config, static=static).set(count)
        self.orphaned_runtime_pods.inc(orphans)
        self.mirror_pods.set(mirror_pods)


LogDirs = Callable[[], Iterable[tuple[str, str, str, str, Path]]]


class LogUsageCollector(Collector):
    """kubelet_container_log_filesystem_used_bytes{uid,namespace,pod,container}: the bytes of each
    container's log files (all instances and rotations), read at scrape time. Never raises."""

    def __init__(self, log_dirs: LogDirs) -> None:
        self._log_dirs = log_dirs

    def describe(self) -> list[GaugeMetricFamily]:
        return [self._family()]

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("kubelet_container_log_filesystem_used_bytes",
                                 "[ALPHA] Bytes used by the container's logs on the filesystem.",
                                 labels=("uid", "namespace", "pod", "container"))

    def collect(self) -> list[GaugeMetricFamily]:
        family = self._family()
        try:
            for uid, namespace, pod, container, directory in self._log_dirs():
                family.add_metric((uid, namespace, pod, container), _dir_bytes(directory))
        except Exception:  # a scrape must never fail; a partial family is fine
            log.exception("container log usage: listing log directories failed")
        return [family]


def _dir_bytes(directory: Path) -> int:
    total = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    return total



VOLUME_STAT_DURATION = MetricSpec(
    "kubelet_volume_metric_collection_duration_seconds", "Duration in seconds to calculate volume stats",
    "histogram", ("metric_source",),
)


class VolumeStatMetrics:
    """stats.hostfs.VolumeStatObserver on the /metrics registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._duration = histogram(VOLUME_STAT_DURATION, registry)

    def volume_measured(self, source: str, seconds: float) -> None:
        self._duration.labels(metric_source=source).observe(seconds)


VolumeCounts = Callable[[], Mapping[tuple[str, str], int]]


class VolumeCountsCollector(Collector):
    """volume_manager_total_volumes{plugin_name,state}: the volumes the pods ask for
    (desired_state_of_world) and those set up (actual_state_of_world), per plugin, read at scrape
    time from the pods layer's count. Never raises."""

    def __init__(self, counts: VolumeCounts) -> None:
        self._counts = counts

    def describe(self) -> list[GaugeMetricFamily]:
        return [self._family()]

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("volume_manager_total_volumes", "[ALPHA] Number of volumes in Volume Manager",
                                 labels=("plugin_name", "state"))

    def collect(self) -> list[GaugeMetricFamily]:
        family = self._family()
        try:
            for (plugin, state), count in sorted(self._counts().items()):
                family.add_metric((plugin, state), count)
        except Exception:  # a scrape must never fail
            log.exception("volume counts failed")
        return [family]


def static_label(static: bool) -> str:
    """The kubelet's `static` label of its pod counts: "true" for static pods, "" for the others."""
    return "true" if static else ""
