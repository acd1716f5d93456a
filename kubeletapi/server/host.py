"""Host: the only thing route handlers call. The composition root (kubeletapi.kubelet) implements it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Protocol

from prometheus_client.registry import Collector

from kubeletapi.health import HealthCheck
from kubeletapi.node.logfiles import LogAnswer
from kubeletapi.runtime.logoptions import PodLogOptions
from kubeletapi.stats.history import History
from kubeletapi.streaming.targets import ContainerStreams, PodPorts


class Host(Protocol):
    """What the HTTP layer may ask of the node agent."""

    @property
    def node_name(self) -> str:
        """The node's name (hostname-override or the lower-cased hostname)."""
        ...

    @property
    def process_start_unix(self) -> int:
        """When the agent's process started, Unix seconds (the metrics endpoints'
        Process-Start-Time-Unix header, as the kubelet's client_golang handler sends it)."""
        ...

    def health_checks(self) -> Sequence[HealthCheck]:
        """The /healthz checks of the secure and read-only listeners, in order."""
        ...

    def configz(self) -> Mapping[str, Any]:
        """{"kubeletconfig": <effective v1beta1 configuration, secrets redacted>}."""
        ...

    def metrics_registry(self, endpoint: str) -> Collector:
        """The registry behind /metrics (endpoint "metrics") and /metrics/probes ("probes")."""
        ...

    def stats_metrics(self, endpoint: str, gzipped: bool) -> bytes:
        """The text of /metrics/cadvisor ("cadvisor") or /metrics/resource ("resource") from the
        stats cache, gzip-compressed when `gzipped`."""
        ...

    def stats_summary(self, only_cpu_and_memory: bool) -> bytes:
        """The /stats/summary JSON; KubeletError (the kubelet's 500) when it cannot be built."""
        ...

    def stats_history(self) -> History:
        """The last 15 minutes of housekeeping (the web UI's charts) and the last cycle's Summary."""
        ...

    def node_status_view(self) -> Mapping[str, Any]:
        """{"capacity", "allocatable", "conditions"}: the node's status as the kubelet would post
        it (conditions in the kubelet's order; pressure as the eviction manager judges it)."""
        ...

    def pod_list(self) -> Mapping[str, Any]:
        """The v1 PodList of every pod the node manages, with status (wire form)."""
        ...

    def pods_version(self) -> int:
        """A number that changes whenever pod_list() may answer differently (a pod added, removed
        or updated, a status changed): the web UI rebuilds its PodList only then."""
        ...

    def pod_events(self, uid: str) -> Sequence[Mapping[str, Any]]:
        """The pod's recent events as the agent recorded them (events/recent.py), the one seen last
        first: {"type", "reason", "message", "object" (a container's fieldPath, or ""), "count",
        "firstTimestamp", "lastTimestamp"}."""
        ...

    def running_pods(self) -> Mapping[str, Any]:
        """The v1 PodList of pods as the runtime sees them (metadata and running containers)."""
        ...

    def manifests(self) -> Mapping[str, Any]:
        """{"items": [...]}: every static pod manifest, accepted or rejected with its reason."""
        ...

    async def node_logs(self, path: str, query: Sequence[tuple[str, str]], raw_query: str,
                        headers: Mapping[str, str]) -> LogAnswer:
        """/logs/<path> (the path after /logs/): a file, a directory listing or a NodeLogQuery's
        output, as the kubelet's log server answers (node/logviewer.py); `headers` lower-cased."""
        ...

    async def submit_pods(self, body: bytes) -> Mapping[str, Any]:
        """Replace the submitted pods (--enable-pod-submission) with a v1 Pod or PodList; the
        PodList of the pods now defined. InvalidInput (400) when the body is refused: nothing changes."""
        ...

    async def container_logs(
        self, namespace: str, pod: str, container: str, opts: PodLogOptions
    ) -> AsyncIterator[bytes]:
        """The container's log output; NotFound for an unknown pod or container (404), other
        errors (no previous instance, unreadable file) are InvalidInput/Unavailable (400)."""
        ...

    async def run_in_container(
        self, namespace: str, pod: str, uid: str | None, container: str, cmd: Sequence[str]
    ) -> bytes:
        """Run `cmd` in the container; its combined output."""
        ...

    async def container_streams(
        self, namespace: str, pod: str, uid: str | None, container: str
    ) -> ContainerStreams:
        """The running container for /exec and /attach: NotFound `pod does not exist` for an
        unknown pod (404), another KubeletError `container not found ("<name>")` when the pod has
        no such running container (500)."""
        ...

    async def pod_ports(self, namespace: str, pod: str, uid: str | None) -> PodPorts:
        """The pod's network for /portForward: NotFound `pod does not exist`, or `pod not found`
        for another UID (404); another KubeletError when it has no running sandbox (500)."""
        ...

    def streaming_idle_timeout(self) -> float:
        """streamingConnectionIdleTimeout in seconds (0: none)."""
        ...
