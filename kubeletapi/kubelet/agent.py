"""The node agent: builds every component from the configuration, runs them, implements Host.

Start-up order: node identity, PKI, authenticators and authorizer, metrics registries, with
--kubeconfig the cluster wiring (its API pod source and readers go to the pod machinery), the pod
machinery (runtime state re-adopted), apps; then every listener is bound (so a port in use fails
before anything is served), then served, then the pod sources start, then the cluster wiring
(registration, status, lease, the API pods' watch, status sync, mirror pods, events: the node
reports the runtime's version, so the runtime answers first). Stop runs the other way: the
cluster wiring first, so nothing reports a pod the machinery is done with.

With --kubeconfig the certificate wiring comes first (the API clients' credentials). A node that
must bootstrap its client certificate starts the cluster wiring in the background once it has
one: the listeners serve meanwhile. The certificate managers start with the cluster wiring; a
rotated serving certificate goes to the secure listener's ServingContext (new handshakes).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from kubeletapi import nodeinfo
from kubeletapi.aio import cancel_and_wait
from kubeletapi.api.core_v1 import PodList
from kubeletapi.cgroups import cgroup_version
from kubeletapi.clock import Clock, RealClock
from kubeletapi.config import KubeletConfiguration, NodeOptions, redacted
from kubeletapi.config.featuregates import FeatureGates
from kubeletapi.errors import KubeletError, NotSupported
from kubeletapi.events.recent import KeptEvents, RecentEvents
from kubeletapi.health import HealthCheck, LogFlushMonitor, PingCheck, SyncLoopCheck
from kubeletapi.kubelet import streams
from kubeletapi.kubelet.eviction import EvictionWiring
from kubeletapi.kubelet.gc import GCWiring
from kubeletapi.kubelet.nodeview import NodeView
from kubeletapi.kubelet.pods import PodWiring
from kubeletapi.kubelet.security import SecurityWiring, tls_files
from kubeletapi.kubelet.serving import ServingCertificate
from kubeletapi.kubelet.stats import StatsProvider
from kubeletapi.kubelet.syncloop import SyncLoop
from kubeletapi.loopwatch import LoopWatch
from kubeletapi.metrics.certificates import ClientCertificateCollector
from kubeletapi.metrics.events import EventsCollector
from kubeletapi.metrics.kubelet import KubeletMetrics
from kubeletapi.metrics.memory import MemoryManagerMetrics
from kubeletapi.metrics.node import NodeStartupMetrics
from kubeletapi.metrics.pods import LogUsageCollector, PodMetrics, VolumeCountsCollector, VolumeStatMetrics
from kubeletapi.metrics.podstartup import PodStartupMetrics
from kubeletapi.metrics.probes import ProbeMetrics
from kubeletapi.metrics.sinks import SinkCollector
from kubeletapi.metrics.spec import new_registry
from kubeletapi.node.logfiles import LogAnswer
from kubeletapi.node.logviewer import NodeLogViewer
from kubeletapi.node.status import Pressure
from kubeletapi.pkifiles import NodePKI
from kubeletapi.runtime.logoptions import PodLogOptions
from kubeletapi.server.app import create_app, create_healthz_app, create_ui_app
from kubeletapi.server.auth import Security
from kubeletapi.server.limits import Limits
from kubeletapi.server.listeners import Listener, ListenerSpec
from kubeletapi.stats.collect import own_start_ns
from kubeletapi.stats.history import History
from kubeletapi.streaming.targets import ContainerStreams, PodPorts

if TYPE_CHECKING:  # apiserver mode only: imported by start() when there is a --kubeconfig
    from kubeletapi.kubelet.certificates import CertificateWiring
    from kubeletapi.kubelet.cluster import ClusterWiring

log = logging.getLogger(__name__)


class Kubelet:
    """One node agent: call start(), then stop()."""

    def __init__(
        self, cfg: KubeletConfiguration, opts: NodeOptions, clock: Clock | None = None, limits: Limits | None = None
    ) -> None:
        self.cfg = cfg.model_copy(deep=True)  # effective values (generated TLS files) are filled in
        self.opts = opts
        self.clock: Clock = clock or RealClock()
        self.limits = limits or Limits()  # what a connection may cost every listener (tests shorten it)
        self._node_name = nodeinfo.node_name(opts.hostname_override)
        self.node_ips = nodeinfo.node_ips(opts.node_ip)
        self.pki: NodePKI | None = None
        self.listeners: dict[str, Listener] = {}
        self.pods: PodWiring | None = None
        self.recent_events = RecentEvents(self.clock)  # each pod's last events, for the web UI
        self._pods_version = 0  # bumped on every pod or status change (the web UI's PodList)
        self._security = SecurityWiring(self.cfg, opts, self.clock)
        self._tasks: list[asyncio.Task[None]] = []
        self._sync = SyncLoop(self.clock)
        self._configz: dict[str, Any] | None = None
        self._serving = ServingCertificate(self.clock)
        # Real time on purpose: the flush thread waits in real time, whatever clock runs the loops.
        self._log_monitor = LogFlushMonitor(RealClock())
        self._registries: dict[str, CollectorRegistry] = {"metrics": new_registry(), "probes": new_registry()}
        self._metrics = KubeletMetrics(self._registries["metrics"], self._node_name, self._serving.ttl)
        if (version := cgroup_version()) > 0:
            self._metrics.cgroup_version.set(version)
        # Real time too: the loop's lag is real, whatever clock the loops run on.
        self._loop_watch = LoopWatch(RealClock(), self._metrics.loop_lag.observe)
        self._checks: list[HealthCheck] = [
            PingCheck(),
            self._log_monitor,
            SyncLoopCheck(self.clock, cfg.sync_frequency.seconds, lambda: self._sync.entry,
                          [self._sources_not_ready, self._loop_watch.check]),
        ]
        self.stats: StatsProvider | None = None
        self.gc: GCWiring | None = None  # gc.reclaim: the eviction manager's node-level reclaim
        self.eviction: EvictionWiring | None = None
        self.cluster: ClusterWiring | None = None
        self.certs: CertificateWiring | None = None
        self._process_start: int | None = None
        self._log_viewer: NodeLogViewer | None = None
        self._ui_node: NodeView | None = None

    # --- Host ---------------------------------------------------------------------------------
    @property
    def node_name(self) -> str:
        return self._node_name

    @property
    def process_start_unix(self) -> int:
        if self._process_start is None:
            self._process_start = own_start_ns() // 1_000_000_000
        return self._process_start

    def health_checks(self) -> Sequence[HealthCheck]:
        return self._checks

    def configz(self) -> Mapping[str, Any]:
        if self._configz is None:  # the configuration is fixed once the listeners are up
            self._configz = {"kubeletconfig": redacted(self.cfg)}
        return self._configz

    def metrics_registry(self, endpoint: str) -> CollectorRegistry:
        return self._registries[endpoint]

    def stats_metrics(self, endpoint: str, gzipped: bool) -> bytes:
        return self._stats().metrics(endpoint, gzipped)

    def stats_summary(self, only_cpu_and_memory: bool) -> bytes:
        return self._stats().summary(only_cpu_and_memory)

    def stats_history(self) -> History:
        return self._stats().history

    def node_status_view(self) -> Mapping[str, Any]:
        return self._node_view().view(self._not_ready_reasons())

    def pod_list(self) -> Mapping[str, Any]:
        return PodList(items=self._pods().manager.pods()).to_wire()

    def _pods_changed(self) -> None:
        self._pods_version += 1

    def pods_version(self) -> int:
        return self._pods_version

    def pod_events(self, uid: str) -> Sequence[Mapping[str, Any]]:
        return [event.view() for event in self.recent_events.for_pod(uid)]

    def running_pods(self) -> Mapping[str, Any]:
        return self._pods().queries.running_pods()

    def manifests(self) -> Mapping[str, Any]:
        return {"items": [r.to_wire() for r in self._pods().manager.manifests()]}

    async def node_logs(self, path: str, query: Sequence[tuple[str, str]], raw_query: str,
                        headers: Mapping[str, str]) -> LogAnswer:
        if self._log_viewer is None:
            query_on = bool(self.cfg.enable_system_log_query) and FeatureGates(self.cfg.feature_gates).enabled(
                "NodeLogQuery")
            self._log_viewer = NodeLogViewer(self.opts.node_log_dir, query_on)
        return await asyncio.to_thread(self._log_viewer.answer, path, query, raw_query, headers)

    async def submit_pods(self, body: bytes) -> Mapping[str, Any]:
        submitted = self._pods().submission
        if submitted is None:
            raise NotSupported("pod submission is off (--enable-pod-submission)")
        return PodList(items=await submitted.submit(body)).to_wire()

    async def container_logs(
        self, namespace: str, pod: str, container: str, opts: PodLogOptions
    ) -> AsyncIterator[bytes]:
        return await self._pods().access.logs(namespace, pod, container, opts)

    async def run_in_container(
        self, namespace: str, pod: str, uid: str | None, container: str, cmd: Sequence[str]
    ) -> bytes:
        return await self._pods().access.run(namespace, pod, uid, container, cmd)

    async def container_streams(
        self, namespace: str, pod: str, uid: str | None, container: str
    ) -> ContainerStreams:
        pods = self._pods()
        return streams.container_streams(pods.queries, pods.streamer, namespace, pod, uid, container)

    async def pod_ports(self, namespace: str, pod: str, uid: str | None) -> PodPorts:
        pods = self._pods()
        return streams.pod_ports(pods.queries, pods.streamer, namespace, pod, uid)

    def streaming_idle_timeout(self) -> float:
        return self.cfg.streaming_connection_idle_timeout.seconds

    def pressure(self) -> Pressure:
        """The node's MemoryPressure, DiskPressure and PIDPressure as the eviction manager sees them."""
        return self.eviction.pressure() if self.eviction is not None else Pressure()

    def _not_ready_reasons(self) -> list[str]:
        """What keeps the node NotReady, as the node controller reads it (kubelet/cluster.py)."""
        pods = self._pods()
        return [reason for reason in (pods.pleg.unhealthy(), pods.network_error()) if reason]

    def _node_view(self) -> NodeView:
        if self._ui_node is None:
            self._ui_node = NodeView(self.cfg, self.opts, self.node_name, self._stats().collector.machine,
                                     self.clock, self.pressure)
        return self._ui_node

    def _sources_not_ready(self) -> str | None:
        return "the agent is starting" if self.pods is None else self.pods.manager.sources_not_ready()

    def _pods(self) -> PodWiring:
        assert self.pods is not None, "the agent is not started"
        return self.pods

    def _stats(self) -> StatsProvider:
        assert self.stats is not None, "the agent is not started"
        return self.stats

    # --- lifecycle ----------------------------------------------------------------------------
    def _build(self) -> None:
        """Every part, wired; nothing started yet."""
        registry = self._registries["metrics"]
        metrics = PodMetrics(registry)
        startup = NodeStartupMetrics(registry)  # 0 until a registration measures it
        pod_startup = PodStartupMetrics(registry)  # the first network pod's gauge: 0 until measured
        if self.opts.kubeconfig is not None:
            self._build_cluster(startup, pod_startup)
        api_sources = [("api", self.cluster.pod_source)] if self.cluster is not None else []
        # Pod events are kept for the web UI, then posted when there is an API server.
        kept = KeptEvents(self.recent_events, self.cluster.events if self.cluster is not None else None)
        cluster = self.cluster
        self.pods = PodWiring(self.cfg, self.opts, self.node_name, str(self.node_ips[0]), self.clock, metrics,
                              api_sources, api=cluster.readers if cluster is not None else None,
                              events=kept, image_pulls=cluster.pod_startup if cluster is not None else None)
        manager = self.pods.manager
        manager.subscribe(lambda: self.recent_events.forget(manager.known))
        manager.subscribe(self._pods_changed)
        self.pods.statuses.subscribe(self._pods_changed)
        self.pods.memory.observe(MemoryManagerMetrics(registry))
        registry.register(LogUsageCollector(self.pods.inventory.log_dirs))
        registry.register(VolumeCountsCollector(self.pods.volumes.counts))
        self.stats = StatsProvider(self.cfg, self.opts, self.node_name, self.clock, self.pods)
        self.stats.collector.volumes.observe(VolumeStatMetrics(registry))
        if self.stats.sink is not None:
            registry.register(SinkCollector(self.stats.sink.counts))
        self.gc = GCWiring(self.cfg, self.opts, self.clock, self.pods, self.stats, registry,
                           self.cluster.events if self.cluster is not None else None)
        self.eviction = EvictionWiring(self.cfg, self.pods.manager, self.stats.housekeeper, self.clock,
                                       events=kept,
                                       reclaimers=[self.gc.reclaim])
        registry.register(self.eviction.metrics)
        if self.cluster is not None:
            self.cluster.pressure = self.eviction.pressure
            events = self.cluster.events
            registry.register(EventsCollector(lambda: events.counts))
        self.pods.probes.add_observer(
            ProbeMetrics(self._registries["probes"], self.stats.collector.cfg.agent_start_ns / 1e9))

    def _build_cluster(self, startup: NodeStartupMetrics, pod_startup: PodStartupMetrics) -> None:
        """Apiserver mode's parts: credentials (bootstrap, rotation) and the cluster wiring."""
        # apiserver mode's modules (API client, httpx, certificates, cryptography, node controller,
        # mirror pods) are imported only here: a standalone node never maps them.
        from kubeletapi.kubelet.certificates import CertificateWiring  # noqa: PLC0415
        from kubeletapi.kubelet.cluster import ClusterWiring  # noqa: PLC0415

        self.certs = CertificateWiring(self.cfg, self.opts, self.node_name, self.node_ips, self.clock)
        self._serving.issued = self.certs.serving
        self._security.use_credentials(self.certs.credentials)
        self.cluster = ClusterWiring(self.cfg, self.opts, self.node_name, self.clock, self.certs.credentials, startup,
                                     pod_startup)
        if self.certs.client is not None:
            self._registries["metrics"].register(ClientCertificateCollector(self.certs.client))

    async def start(self) -> None:
        """Build, bind and serve everything; on failure nothing is left running."""
        try:
            self._build()
            assert self.pods is not None and self.eviction is not None  # built just now
            assert self.stats is not None and self.gc is not None
            for spec in self._listener_specs():
                self.listeners[spec.name] = Listener(spec)
            for listener in self.listeners.values():
                await listener.start()
            await self.pods.start()
            self.eviction.start()
            await self.stats.start()
            self.gc.start()
            if self.certs is not None and self.certs.joined:
                await self._start_cluster()
            elif self.certs is not None:
                self._tasks.append(asyncio.create_task(self._join(), name="bootstrap"))
        except BaseException:
            await self.stop()
            raise
        self.add_sync_handler(self.pods.manager.housekeeping)
        self._log_monitor.start()
        self._tasks.append(asyncio.create_task(self._sync.run(), name="sync-loop"))
        self._tasks.append(asyncio.create_task(self._loop_watch.run(), name="loop-watch"))
        log.info("kubeletapi started on node %s", self.node_name)

    async def stop(self) -> None:
        """Stop serving and syncing; containers keep running (a new agent re-adopts them).

        Every part is stopped even when one fails (a start that failed half-way leaves parts
        half-built): the listeners' sockets are always closed; the first failure is raised after."""
        failures: list[BaseException] = []

        async def step(stop: Callable[[], Awaitable[object]] | None) -> None:
            if stop is None:
                return
            try:
                await stop()
            except Exception as exc:  # raised below, once the other parts have stopped
                log.error("Stopping the agent: %s", exc, exc_info=exc)
                failures.append(exc)

        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        for part in (self.certs, self.cluster, self.eviction, self.gc, self.stats, self.pods):
            await step(part.stop if part is not None else None)
        for result in await asyncio.gather(*(listener.stop() for listener in self.listeners.values()),
                                           return_exceptions=True):
            if isinstance(result, BaseException):
                failures.append(result)
        self._log_monitor.stop()
        await step(self._security.close)
        if failures:
            raise failures[0]

    def port(self, name: str) -> int:
        return self.listeners[name].port

    async def _start_cluster(self) -> None:
        assert self.cluster is not None and self.certs is not None and self.pods is not None
        assert self.stats is not None
        await self.cluster.start(self.pods, self.stats.collector.machine, self.node_ips)
        self.certs.start(self.cluster.api, self._serving.rotated)

    async def _join(self) -> None:
        """Bootstrap the client certificate, then join: registration, pods, status."""
        assert self.certs is not None
        await self.certs.join()
        try:
            await self._start_cluster()
        except KubeletError as exc:
            log.error("Cannot start the node's API machinery after the bootstrap: %s", exc)

    # --- wiring -------------------------------------------------------------------------------
    def _listener_specs(self) -> list[ListenerSpec]:
        cfg = self.cfg
        tls = tls_files(cfg, self.opts, self.node_name, self.node_ips, self.server_url(), self.clock)
        self.pki = tls.pki
        metrics = self._metrics
        self._serving.track(tls.cert, tls.key)
        specs = []
        if cfg.enable_server:
            security = Security(self._security.authenticator(tls), self._security.authorizer(), self.node_name)
            app = create_app(self, "secure", metrics, security, cfg.enable_debugging_handlers,
                             self.opts.enable_pod_submission, cfg.enable_system_log_handler)
            serving = self._serving.serve(tls.cert, tls.key, tls.client_ca, cfg.tls_min_version,
                                          cfg.tls_cipher_suites)
            specs.append(ListenerSpec("secure", cfg.address, cfg.port, app, limits=self.limits, ssl_source=serving))
        if cfg.read_only_port > 0:
            app = create_app(self, "readonly", metrics)
            specs.append(ListenerSpec("read-only", cfg.address, cfg.read_only_port, app, limits=self.limits))
        if cfg.healthz_port > 0:
            specs.append(ListenerSpec("healthz", cfg.healthz_bind_address, cfg.healthz_port,
                                      create_healthz_app(self), limits=self.limits))
        if self.opts.ui_port > 0:
            specs.append(ListenerSpec("ui", cfg.address, self.opts.ui_port, create_ui_app(self), limits=self.limits))
        return specs

    def server_url(self) -> str:
        """https://<address>:<port> for clients on this host (loopback for a wildcard address)."""
        addr = ipaddress.ip_address(self.cfg.address)
        if addr.is_unspecified:
            addr = ipaddress.ip_address("::1" if addr.version == 6 else "127.0.0.1")
        host = f"[{addr}]" if addr.version == 6 else str(addr)
        return f"https://{host}:{self.cfg.port}"

    def add_sync_handler(self, handler: Callable[[], Awaitable[None]]) -> None:
        """Run `handler` on every sync-loop iteration (the pod manager's housekeeping)."""
        self._sync.add_handler(handler)
