"""Wiring of apiserver mode: the API client from --kubeconfig, the node's facts from the
configuration and the machine, the node controller (registration, status, lease), the API
server's pod source, the pod status sync, the static pods' mirror pods, what pods read from the
API server (the ConfigMap and Secret caches, the token manager, the Services for env: `readers`,
handed to the pod wiring; a change they see pokes the pods concerned), the event recorder
(with its own client, as the kubelet's event client: eventRecordQPS and eventBurst), and the pod
startup SLI tracker (`pod_startup`: the pod source, the status sync and the pod wiring's image
pulls report to it).

Built before the pod machinery (which takes the pod source), started after it (the node reports
the runtime's version). Without --kubeconfig none of this exists: the standalone node is
unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence

from kubeletapi.aio import cancel_and_wait
from kubeletapi.api.quantity import Quantity
from kubeletapi.apiclient.client import ApiClient
from kubeletapi.cgroups import cgroup_version
from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import KubeletError
from kubeletapi.events import reasons
from kubeletapi.events.recorder import EventRecorder
from kubeletapi.kubeconfig import Credentials, load_kubeconfig
from kubeletapi.kubelet.pods import ApiReaders, PodWiring
from kubeletapi.node.controller import NodeController
from kubeletapi.node.facts import NodeFacts, hugepages, rootfs_capacity
from kubeletapi.node.images import NodeImages
from kubeletapi.node.startup import NodeStartupTracker, StartupObserver
from kubeletapi.node.status import Pressure
from kubeletapi.nodeinfo import IPAddress
from kubeletapi.pods.apisource import ApiServerSource
from kubeletapi.pods.apistatus import BoundPod, BoundPods, StatusSync
from kubeletapi.pods.mirror import MirrorPods
from kubeletapi.pods.objectcache import ObjectCache
from kubeletapi.pods.services import ServiceEnv
from kubeletapi.pods.startupsli import PodStartupObserver, PodStartupTracker
from kubeletapi.pods.tokens import TokenManager
from kubeletapi.stats.machine import MachineInfo

log = logging.getLogger(__name__)
KUBERNETES_VERSION = "v1.34.4"  # the kubelet whose behaviour this agent reproduces in a cluster
CLIENT_QPS, CLIENT_BURST = 5.0, 10  # client-go's rest.DefaultQPS and DefaultBurst, for a limit of 0
CGROUP_V1_WARNING = "cgroup v1 support is in maintenance mode, please migrate to cgroup v2"


def kubelet_version() -> str:
    """nodeInfo.kubeletVersion: the Kubernetes version reproduced, with kubeletapi's own as build
    metadata (semver ignores it, so version checks see a 1.34 kubelet)."""
    from kubeletapi import __version__  # noqa: PLC0415 - the package's, at call time

    return f"{KUBERNETES_VERSION}+kubeletapi-{__version__}"


class JoinedBoundPods:
    """The status sync's pods: the API's own pods, then the static pods through their mirrors."""

    def __init__(self, *parts: BoundPods) -> None:
        self._parts = parts

    def bound_pods(self) -> list[BoundPod]:
        return [pod for part in self._parts for pod in part.bound_pods()]


class ClusterWiring:
    """Everything that speaks to the API server, when --kubeconfig names one."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, clock: Clock,
                 credentials: Credentials | None = None, startup: StartupObserver | None = None,
                 pod_startup: PodStartupObserver | None = None) -> None:
        assert opts.kubeconfig is not None
        self._startup_observer, self._agent_start = startup, clock.now()  # kubelet_node_startup_*
        # The node's credentials: shared with the certificate wiring, which replaces them.
        kubeconfig = credentials if credentials is not None else Credentials(load_kubeconfig(opts.kubeconfig))
        self.api = ApiClient(kubeconfig, clock, qps=cfg.kube_api_qps, burst=cfg.kube_api_burst)
        self._events_api = ApiClient(kubeconfig, clock, qps=cfg.event_record_qps or CLIENT_QPS,
                                     burst=cfg.event_burst or CLIENT_BURST)
        self.events = EventRecorder(self._events_api, clock, node_name)
        self.events.node_event(reasons.NORMAL, reasons.STARTING, "Starting kubelet.")  # the kubelet's BirthCry
        self.pod_startup = PodStartupTracker(clock, pod_startup)  # kubelet_pod_start_{sli,total}_*
        self.pod_source = ApiServerSource(self.api, node_name, self._node_exists, clock, self.pod_startup)
        self.readers = ApiReaders(
            configmaps=ObjectCache(self.api, "configmaps", "configmap", clock, self._poke),
            secrets=ObjectCache(self.api, "secrets", "secret", clock, self._poke),
            tokens=TokenManager(self.api, clock, lambda uid: self._poke((uid,))),
            services=ServiceEnv(self.api, clock),
            allocatable=self._allocatable,
        )
        self._facts: NodeFacts | None = None
        self.controller: NodeController | None = None
        self.status_sync: StatusSync | None = None
        self.mirrors: MirrorPods | None = None
        self._node_uid_read = ""  # the Node's UID read from the API (registerNode false)
        self.pressure: Callable[[], Pressure] = Pressure  # the eviction manager's, set by the agent
        self._cfg = cfg
        self._opts = opts
        self._node_name = node_name
        self._clock = clock
        self._started = asyncio.Event()
        self._pods: PodWiring | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, pods: PodWiring, machine: MachineInfo, node_ips: Sequence[IPAddress]) -> None:
        self._pods = pods
        cfg = self._cfg
        self._tasks.append(asyncio.create_task(self.events.run(), name="event-recorder"))
        if pods.node.isolated and cgroup_version() == 1:
            self.events.node_event(reasons.WARNING, reasons.CGROUP_V1, CGROUP_V1_WARNING)
        self.mirrors = MirrorPods(self.api, pods.manager, self._node_name, self._node_uid, pods.statuses.get,
                                  self._clock, mirrors_changed=self._mirrors_changed)
        self.status_sync = StatusSync(self.api, JoinedBoundPods(pods.manager, self.mirrors), self._clock,
                                      observer=pods.metrics, startup=self.pod_startup)
        pods.statuses.subscribe(self.status_sync.notify)
        pods.manager.subscribe(self.mirrors.notify)
        self._tasks.append(asyncio.create_task(self.status_sync.run(), name="pod-status-sync"))
        self._tasks.append(asyncio.create_task(self.readers.services.run(), name="services"))
        self._tasks.append(asyncio.create_task(self.mirrors.run(), name="mirror-pods"))
        if cfg.register_node:
            addresses = [("InternalIP", str(ip)) for ip in node_ips] + [("Hostname", self._node_name)]
            facts = NodeFacts(
                name=self._node_name, hostname=self._node_name, addresses=addresses, kubelet_port=cfg.port,
                machine=machine, max_pods=cfg.max_pods, rootfs_bytes=rootfs_capacity(self._opts.root_dir),
                hugepages=hugepages(), kubelet_version=kubelet_version(), labels=dict(self._opts.node_labels),
                taints=[t.to_wire() for t in cfg.register_with_taints],
                kube_reserved=cfg.kube_reserved, system_reserved=cfg.system_reserved,
                eviction_hard=cfg.eviction_hard or {}, runtime_version=pods.runtime_version,
            )
            self._facts = facts
            self.controller = NodeController(
                self.api, facts, self._clock, boot_id=machine.boot_id, not_ready=self._not_ready,
                images=NodeImages(pods.cri, self._clock), update_s=cfg.node_status_update_frequency.seconds,
                report_s=cfg.node_status_report_frequency.seconds, lease_s=cfg.node_lease_duration_seconds,
                events=self.events, pressure=self.pressure,
                pod_cidr=pods.update_pod_cidr if self._opts.network_plugin == "cni" else None,
                startup=NodeStartupTracker(self._clock, self._agent_start, machine.boot_time, self._startup_observer),
            )
            await self.controller.start()
        else:
            log.info("registerNode is false: the node is not registered with %s", self.api.server)
        self._started.set()

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        if self.controller is not None:
            await self.controller.stop()
        await self.readers.configmaps.stop()
        await self.readers.secrets.stop()
        await self.readers.tokens.stop()
        await self.api.close()
        await self._events_api.close()

    def _poke(self, uids: Iterable[str]) -> None:
        """An object or token the pods use changed: sync them now (their volumes follow)."""
        if self._pods is not None:
            for uid in uids:
                self._pods.manager.poke(uid)

    def _allocatable(self) -> dict[str, Quantity]:
        return self._facts.allocatable() if self._facts is not None else {}

    async def _node_exists(self) -> None:
        """The kubelet watches its pods only once its Node exists (registered, or registered by
        someone else when registerNode is false)."""
        await self._started.wait()
        if self.controller is not None:
            await self.controller.registered.wait()

    async def _node_uid(self) -> str:
        """The Node's UID for mirror pods' owner reference ("" while unknown): the registered
        node's, or (registerNode false) read from the API server."""
        if self.controller is not None:
            return self.controller.uid
        if not self._node_uid_read:
            try:
                node = await self.api.get(f"/api/v1/nodes/{self._node_name}")
            except KubeletError as exc:
                log.debug("No mirror pods yet: cannot read node %s: %s", self._node_name, exc)
                return ""
            self._node_uid_read = str((node.get("metadata") or {}).get("uid", ""))
        return self._node_uid_read

    def _mirrors_changed(self) -> None:
        if self.status_sync is not None:
            self.status_sync.notify()

    def _not_ready(self) -> list[str]:
        if self._pods is None:
            return []
        return [reason for reason in (self._pods.pleg.unhealthy(), self._pods.network_error()) if reason]
