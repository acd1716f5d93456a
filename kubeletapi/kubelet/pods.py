"""Wiring of the pod machinery: runtime, PLEG and pod cache, status store, prober, syncer, manager,
sources, and the pod-side answers Host forwards to (queries, container access, the stats inventory).

pods and prober are siblings that never import each other: the prober reads statuses from the
status store and pokes the pod manager through callables made here; the syncer, the status and
the manager consult the prober through protocols they declare.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from kubeletapi import __version__
from kubeletapi.aio import cancel_and_wait
from kubeletapi.api.quantity import Quantity
from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import KubeletError
from kubeletapi.kubelet.memory import MemoryAdmission, memory_manager
from kubeletapi.kubelet.podnetwork import cri_conflist, process_networks
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.metrics.runtime import InstrumentedRuntime
from kubeletapi.pods.access import ContainerAccess
from kubeletapi.pods.apivolumes import ApiVolumes
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.env import EnvResolver
from kubeletapi.pods.images import ImageManager, PullRecorder
from kubeletapi.pods.inventory import PodInventory
from kubeletapi.pods.logrotation import ContainerLogRotator
from kubeletapi.pods.manager import PodManager
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.objectcache import ObjectCache
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.podevents import PodEvents, PodEventSink
from kubeletapi.pods.pullsecrets import PullCredentials
from kubeletapi.pods.queries import PodQueries
from kubeletapi.pods.services import ServiceEnv
from kubeletapi.pods.sources import FileSource, PodSource, URLSource
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.submission import SOURCE as SUBMITTED
from kubeletapi.pods.submission import STATE_FILE, SubmissionSource
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.tokens import TokenManager
from kubeletapi.pods.volumes import PodVolumes, run_command
from kubeletapi.prober import ProbeManager
from kubeletapi.runtime.interface import Runtime
from kubeletapi.runtime.process.podnet import SandboxNetworks
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.streaming import Streamer

if TYPE_CHECKING:  # --container-runtime=remote only: grpc, protobuf and the CRI client are imported then
    from kubeletapi.runtime.cri import CRIRuntime

log = logging.getLogger(__name__)


def probe_user_agent() -> str:
    """kube-probe/<major>.<minor>, with this agent's version (as kubernetes_build_info reports it)."""
    major, minor = __version__.split(".")[:2]
    return f"kube-probe/{major}.{minor}"


def node_env(cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, node_ip: str, isolated: bool) -> NodeEnv:
    return NodeEnv(
        node_name=node_name, node_ip=node_ip, root_dir=opts.root_dir, pod_logs_dir=Path(cfg.pod_logs_dir),
        isolated=isolated, cgroup_root=cfg.cgroup_root or "/", cgroups_per_qos=cfg.cgroups_per_qos,
        cfs_quota=cfg.cpu_cfs_quota, pod_pids_limit=cfg.pod_pids_limit,
        memory_capacity=psutil.virtual_memory().total, cpu_capacity_milli=(os.cpu_count() or 1) * 1000,
        max_pods=cfg.max_pods,
    )


def _process_networks(pod_cidr: str, opts: NodeOptions, isolated: bool) -> SandboxNetworks | None:
    """The process runtime's pod networks for `pod_cidr`; None (and why, logged) when the agent
    cannot give pods namespaces of their own. At start and when the Node's CIDR arrives."""
    if isolated:
        return process_networks(pod_cidr, opts, shim_path())
    log.warning("not running as root: pods get no network namespaces (pod CIDR %s unused)", pod_cidr)
    return None


def _isolation() -> bool:
    """Cgroups and namespaces need root and a writable cgroup hierarchy."""
    if os.geteuid() != 0:
        return False
    try:
        return detect().mount_point("memory") is not None or detect().version == 2
    except (OSError, KubeletError):
        return False


@dataclass(frozen=True)
class ApiReaders:
    """What pods read from the API server (apiserver mode; ClusterWiring builds them): the
    referenced ConfigMaps and Secrets, service-account tokens, the Services (for env), the
    node's allocatable resources (empty until known: the node's capacity stands in)."""

    configmaps: ObjectCache
    secrets: ObjectCache
    tokens: TokenManager
    services: ServiceEnv
    allocatable: Callable[[], Mapping[str, Quantity]]


class RuntimeProcesses:
    """The CRI runtime's own processes (containerd and its shims) for the summary's `runtime`
    system container, found by name and refreshed at most once a minute."""

    NAMES = ("containerd", "containerd-shim", "containerd-shim-runc-v2", "crio", "conmon")
    REFRESH_S = 60.0

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._pids: list[int] = []
        self._at = float("-inf")

    def __call__(self) -> list[int]:
        now = self._clock.monotonic()
        if now - self._at >= self.REFRESH_S:
            self._pids = [p.pid for p in psutil.process_iter(["name"]) if p.info["name"] in self.NAMES]
            self._at = now
        return self._pids


class PodWiring:
    """Everything that runs pods, built from the configuration: the process runtime by default,
    a CRI runtime (containerd) with --container-runtime=remote."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, node_ip: str,
                 clock: Clock, metrics: PodMetrics, extra_sources: Sequence[tuple[str, PodSource]] = (),
                 api: ApiReaders | None = None, events: PodEventSink | None = None,
                 image_pulls: PullRecorder | None = None) -> None:
        isolated = _isolation()
        log_max_size = Quantity.parse(cfg.container_log_max_size).value()
        opts.root_dir.mkdir(parents=True, exist_ok=True)  # the kubelet's root directory (pods, stats' rootFs)
        runtime: Runtime
        streamer: Streamer
        runtime_pids: Callable[[], Sequence[int]]
        self.cri: CRIRuntime | None
        self._process: ProcessRuntime | None
        if opts.container_runtime == "remote":
            # A CRI runtime isolates every container itself; pods always get a cgroup_parent (a
            # sandbox without one breaks ListPodSandboxStats), created with the pod's limits when root.
            from kubeletapi.runtime.cri import CRIRuntime  # noqa: PLC0415 - see TYPE_CHECKING above

            cri = CRIRuntime(cfg.container_runtime_endpoint, cgroups=new_writer(detect()) if isolated else None)
            runtime, streamer, self.cri = cri, cri, cri
            self._process = None
            if cfg.pod_cidr:
                cri_conflist(cfg.pod_cidr, opts)  # the runtime's CNI reads it; the CIDR follows at start
            runtime_pids = RuntimeProcesses(clock)
            # containerd never rotates: the kubelet's container log manager does (the process
            # runtime's shim rotates by itself).
            self._log_rotator: ContainerLogRotator | None = ContainerLogRotator(
                cri, log_max_size, cfg.container_log_max_files, clock)
            isolated = True
        else:
            networks = _process_networks(cfg.pod_cidr, opts, isolated) if cfg.pod_cidr else None
            process = ProcessRuntime(
                opts.root_dir / "runtime" / "process", shim_path(), clock,
                cgroups=new_writer(detect()) if isolated else None, namespaces=isolated,
                log_max_size=log_max_size,
                log_max_files=cfg.container_log_max_files,
                network=networks,
            )
            self._process = process
            if not isolated:
                log.warning("not running as root: pods get no cgroups, namespaces or volume mounts")
            runtime, streamer, self.cri = process, process, None
            self._log_rotator = None
            runtime_pids = process.shim_pids
        self.node = node_env(cfg, opts, node_name, node_ip, isolated)
        self.streamer = streamer
        self.metrics = metrics
        self.runtime = InstrumentedRuntime(runtime, metrics)
        self.pleg = PLEG(self.runtime, clock, metrics)
        self.statuses = StatusStore()
        self.probes = ProbeManager(self.runtime, clock, self.statuses.get, self._probe_changed,
                                   user_agent=probe_user_agent(), events=events)
        pod_events = PodEvents(events)  # without an API server: no events (NullRecorder)
        images = ImageManager(self.runtime, clock, serialize=cfg.serialize_image_pulls,
                              max_parallel=cfg.max_parallel_image_pulls,
                              credentials=PullCredentials(api.secrets) if api is not None else None,
                              pulls=image_pulls)
        self.volumes = volumes = PodVolumes(self.node, api=self._api_volumes(api, clock))
        self.memory = memory_manager(cfg, opts, self.node.memory_capacity,
                                     lambda: self.manager.sources_not_ready() is None)
        self._syncer = syncer = PodSyncer(self.runtime, self.node, clock, Backoff(clock), volumes,
                                          self.pleg, self.statuses, metrics, self.probes, images,
                                          self._env(api), pod_events, self.network_error, self.memory)
        self.submission = SubmissionSource(node_name, clock, opts.root_dir / STATE_FILE) \
            if opts.enable_pod_submission else None
        self.sources = [*self._sources(cfg, node_name, clock), *self._submitted(), *extra_sources]
        self.manager = PodManager(syncer, self.pleg, self.statuses, clock, cfg.max_pods,
                                  [name for name, _ in self.sources], metrics, self.probes, pod_events)
        self.queries = PodQueries(self.manager, self.pleg.cache)
        self.access = ContainerAccess(self.queries, self.runtime, clock)
        self.inventory = PodInventory(self.pleg.cache, self.manager, self.node, runtime_pids,
                                      pause_containers=self.cri is not None)
        self._tasks: list[asyncio.Task[None]] = []
        self.runtime_version = ""
        self._opts, self._pod_cidr = opts, cfg.pod_cidr
        # apiserver mode with --network-plugin=cni: the pod network waits for the Node's podCIDR
        self._awaits_cidr = opts.network_plugin == "cni" and api is not None
        self._log_monitor_s = cfg.container_log_monitor_interval.seconds or 10.0

    def _admit_memory(self) -> None:
        """The memory manager admits new pods and gives back what stopped pods held. Added at start,
        after any handler the composition root added since construction: the kubelet asks its
        eviction handler before the topology/memory manager's."""
        self.manager.add_admitter(MemoryAdmission(self.memory))
        self.manager.subscribe(lambda: self.memory.release(self.manager.holding_resources()))

    def _submitted(self) -> list[tuple[str, PodSource]]:
        return [(SUBMITTED, self.submission)] if self.submission is not None else []

    def _api_volumes(self, api: ApiReaders | None, clock: Clock) -> ApiVolumes | None:
        if api is None:
            return None
        return ApiVolumes(self.node, api.configmaps, api.secrets, api.tokens, self._allocatable(api), clock,
                          run_command)

    def _env(self, api: ApiReaders | None) -> EnvResolver:
        if api is None:
            return EnvResolver(self.node)
        return EnvResolver(self.node, api.configmaps, api.secrets, api.services, self._allocatable(api))

    def _allocatable(self, api: ApiReaders) -> Callable[[], Mapping[str, Quantity]]:
        """The node's allocatable resources once known, its capacity until then."""
        node = self.node
        return lambda: api.allocatable() or node.capacity()

    def _probe_changed(self, uid: str) -> None:
        self.manager.poke(uid)

    @staticmethod
    def _sources(cfg: KubeletConfiguration, node: str, clock: Clock) -> list[tuple[str, PodSource]]:
        sources: list[tuple[str, PodSource]] = []
        if cfg.static_pod_path:
            sources.append(("file", FileSource(Path(cfg.static_pod_path), node, clock,
                                               cfg.file_check_frequency.seconds)))
        if cfg.static_pod_url:
            sources.append(("http", URLSource(cfg.static_pod_url, cfg.static_pod_url_header, node, clock,
                                              cfg.http_check_frequency.seconds)))
        return sources

    async def start(self) -> None:
        await self.start_runtime()
        if self._log_rotator is not None:
            self._tasks.append(asyncio.create_task(self._log_rotator.run(self._log_monitor_s),
                                                   name="container-log-rotation"))
        self._admit_memory()  # before any source delivers a pod
        for name, source in self.sources:
            self._tasks.append(asyncio.create_task(source.run(self.manager.apply), name=f"source-{name}"))

    async def start_runtime(self) -> None:
        """The runtime checked and its pods listed, no loop started (what --runonce needs)."""
        if self.cri is not None:
            version = await self.cri.check()
            log.info("container runtime %s %s (CRI %s) at %s", version.runtime_name, version.runtime_version,
                     version.runtime_api_version, self.cri.endpoint)
            self._syncer.id_scheme = version.runtime_name
            if self._pod_cidr:
                await self.cri.update_pod_cidr(self._pod_cidr)
        else:
            version = await self.runtime.version()
        if self._process is not None:
            await self._process.start_networks()  # before the relist: stale namespaces are gone
        # nodeInfo.containerRuntimeVersion: <type>://<version>, the type as container IDs carry it.
        self.runtime_version = f"{self._syncer.id_scheme}://{version.runtime_version}"
        await self.pleg.relist()  # re-adopted containers are known before the first sync

    def network_error(self) -> str | None:
        """Why the pod network is not ready (the runtime's NetworkReady=false), else None: with
        --network-plugin=cni in apiserver mode, until the Node's podCIDR is known."""
        if self._awaits_cidr and not self._pod_cidr:
            return ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                    "message:the Node has no spec.podCIDR yet")
        return None

    async def update_pod_cidr(self, pod_cidr: str) -> None:
        """The Node's pod CIDR (apiserver mode): from now on pods that are not hostNetwork get their
        own network. The first CIDR is used; a later change is logged and ignored (the pods running
        keep their addresses). Dual-stack: the first CIDR."""
        first = pod_cidr.split(",", maxsplit=1)[0]
        if self._pod_cidr:
            if first != self._pod_cidr:
                log.warning("the Node's pod CIDR is now %s; this node keeps %s until it restarts", first,
                            self._pod_cidr)
            return
        try:
            if self.cri is not None:
                cri_conflist(first, self._opts)
                await self.cri.update_pod_cidr(first)
            elif self._process is not None:
                networks = _process_networks(first, self._opts, self.node.isolated)
                if networks is not None:
                    self._process.use_network(networks)
                    await self._process.start_networks()
        except KubeletError as exc:
            log.error("pod network %s cannot be set up: %s", first, exc)
            return
        self._pod_cidr = first

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        await self.probes.stop()
        await self.manager.stop()
        if self.cri is not None:
            await self.cri.close()
