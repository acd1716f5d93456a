"""Wiring of the pod machinery: runtime, PLEG, prober, syncer, manager and sources; and the pod
side of Host (/pods, /runningpods, /containerLogs, /run, /manifests).

pods and prober are siblings that never import each other: the prober reads published pod
statuses and pokes the pod manager through callables made here; the syncer, the status and the
manager consult the prober through protocols they declare.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import psutil

from kubeletapi import __version__
from kubeletapi.aio import cancel_and_wait
from kubeletapi.api.core_v1 import Container, ObjectMeta, Pod, PodList, PodSpec, PodStatus
from kubeletapi.api.quantity import Quantity
from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import InvalidInput, KubeletError, NotFound, Unavailable
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.metrics.runtime import InstrumentedRuntime
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.images import ImageManager
from kubeletapi.pods.loggc import LogGC
from kubeletapi.pods.logrotation import ContainerLogRotator
from kubeletapi.pods.manager import PodManager
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.pleg import PLEG
from kubeletapi.pods.sources import FileSource, PodSource, URLSource
from kubeletapi.pods.sync import PodSyncer
from kubeletapi.pods.volumes import PodVolumes
from kubeletapi.prober import ProbeManager
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.cri import CRIRuntime
from kubeletapi.runtime.interface import Runtime
from kubeletapi.runtime.logoptions import PodLogOptions, require_stream_supported
from kubeletapi.runtime.logs import read_logs
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.streaming import Streamer
from kubeletapi.stats.inventory import ContainerRef, PodRef, VolumeRef

log = logging.getLogger(__name__)
RUN_TIMEOUT_S = 120.0


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


def _isolation() -> bool:
    """Cgroups and namespaces need root and a writable cgroup hierarchy."""
    if os.geteuid() != 0:
        return False
    try:
        return detect().mount_point("memory") is not None or detect().version == 2
    except (OSError, KubeletError):
        return False


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


class PodServices:
    """Everything that runs pods, built from the configuration: the process runtime by default,
    a CRI runtime (containerd) with --container-runtime=remote."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, node_ip: str,
                 clock: Clock, metrics: PodMetrics) -> None:
        isolated = _isolation()
        log_max_size = Quantity.parse(cfg.container_log_max_size).value()
        opts.root_dir.mkdir(parents=True, exist_ok=True)  # the kubelet's root directory (pods, stats' rootFs)
        runtime: Runtime
        streamer: Streamer
        self.runtime_pids: Callable[[], Sequence[int]]
        self.cri: CRIRuntime | None
        if opts.container_runtime == "remote":
            # A CRI runtime isolates every container itself; pods always get a cgroup_parent (a
            # sandbox without one breaks ListPodSandboxStats), created with the pod's limits when root.
            cri = CRIRuntime(cfg.container_runtime_endpoint, cgroups=new_writer(detect()) if isolated else None)
            runtime, streamer, self.cri = cri, cri, cri
            self.runtime_pids = RuntimeProcesses(clock)
            # containerd never rotates: the kubelet's container log manager does (the process
            # runtime's shim rotates by itself).
            self._log_rotator: ContainerLogRotator | None = ContainerLogRotator(
                cri, log_max_size, cfg.container_log_max_files, clock)
            isolated = True
        else:
            process = ProcessRuntime(
                opts.root_dir / "runtime" / "process", shim_path(), clock,
                cgroups=new_writer(detect()) if isolated else None, namespaces=isolated,
                log_max_size=log_max_size,
                log_max_files=cfg.container_log_max_files,
            )
            if not isolated:
                log.warning("not running as root: pods get no cgroups, namespaces or volume mounts")
            runtime, streamer, self.cri = process, process, None
            self._log_rotator = None
            self.runtime_pids = process.shim_pids
        self.node = node_env(cfg, opts, node_name, node_ip, isolated)
        self.streamer = streamer
        self.runtime = InstrumentedRuntime(runtime, metrics)
        self.pleg = PLEG(self.runtime, clock, metrics)
        self.probes = ProbeManager(self.runtime, clock, self._pod_status, self._probe_changed,
                                   user_agent=probe_user_agent())
        images = ImageManager(self.runtime, clock, serialize=cfg.serialize_image_pulls,
                              max_parallel=cfg.max_parallel_image_pulls)
        self._syncer = syncer = PodSyncer(self.runtime, self.node, clock, Backoff(clock), PodVolumes(self.node),
                                          self._publish, metrics, self.probes, images)
        self.sources = self._sources(cfg, node_name, clock)
        self.manager = PodManager(syncer, self.pleg, clock, cfg.max_pods, [name for name, _ in self.sources],
                                  metrics, LogGC(self.node.pod_logs_dir, clock), self.probes)
        self._tasks: list[asyncio.Task[None]] = []
        self._log_monitor_s = cfg.container_log_monitor_interval.seconds or 10.0

    def _publish(self, uid: str, status: Any) -> None:
        self.manager.publish(uid, status)

    def _pod_status(self, uid: str) -> PodStatus | None:
        return self.manager.status(uid)

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
        if self.cri is not None:
            version = await self.cri.check()
            log.info("container runtime %s %s (CRI %s) at %s", version.runtime_name, version.runtime_version,
                     version.runtime_api_version, self.cri.endpoint)
            self._syncer.id_scheme = version.runtime_name
        await self.pleg.relist()  # re-adopted containers are known before the first sync
        if self._log_rotator is not None:
            self._tasks.append(asyncio.create_task(self._log_rotator.run(self._log_monitor_s),
                                                   name="container-log-rotation"))
        for name, source in self.sources:
            self._tasks.append(asyncio.create_task(source.run(self.manager.apply), name=f"source-{name}"))

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        await self.probes.stop()
        await self.manager.stop()
        if self.cri is not None:
            await self.cri.close()

    # --- Host: pods ----------------------------------------------------------------------------
    def pod_list(self) -> dict[str, Any]:
        return PodList(items=self.manager.pods()).to_wire()

    def running_pods(self) -> dict[str, Any]:
        """Pods as the runtime sees them: metadata and running containers' name and image."""
        items = []
        for uid, (sandboxes, containers) in sorted(self.manager.runtime_view().items()):
            running = [c for c in containers if c.state is rt.ContainerState.RUNNING]
            if not running:
                continue
            meta = sandboxes[0].meta if sandboxes else rt.PodMeta("", "", uid)
            items.append(Pod(
                metadata=ObjectMeta(name=meta.name, namespace=meta.namespace, uid=uid),
                spec=PodSpec(containers=[Container(name=c.name, image=c.image) for c in running]),
            ))
        return PodList(items=items).to_wire()

    def manifests(self) -> dict[str, Any]:
        return {"items": [r.to_wire() for r in self.manager.manifests()]}

    async def _instances(self, namespace: str, pod_name: str, container: str) -> tuple[Pod, list[rt.ContainerStatus]]:
        """The pod and its container's instances, newest first, asked of the runtime now (the
        PLEG cache can lag a second behind a container that /pods already shows running)."""
        pod = self.manager.find(namespace, pod_name)
        if pod is None:
            raise NotFound(f'pod "{pod_name}" does not exist\n')
        if container not in {c.name for c in pod.spec.all_containers()}:
            raise NotFound(f'container "{container}" not found in pod "{pod_name}"\n')
        sandboxes = {s.id for s in await self.runtime.list_pod_sandboxes() if s.meta.uid == pod.metadata.uid}
        found = [c for c in await self.runtime.list_containers() if c.sandbox_id in sandboxes and c.name == container]
        return pod, sorted(found, key=lambda c: c.attempt, reverse=True)

    async def container_logs(self, namespace: str, pod_name: str, container: str,
                             opts: PodLogOptions, clock: Clock) -> AsyncIterator[bytes]:
        _, instances = await self._instances(namespace, pod_name, container)
        require_stream_supported(opts)  # after the lookups, before a file is opened (as the kubelet)
        index = 1 if opts.previous else 0
        if len(instances) <= index:
            if opts.previous:
                raise InvalidInput(f'previous terminated container "{container}" in pod "{pod_name}" not found')
            raise InvalidInput(f'container "{container}" in pod "{pod_name}" is waiting to start')
        instance = instances[index]

        async def running() -> bool:
            with contextlib.suppress(KubeletError):
                status = await self.runtime.container_status(instance.id)
                return status.state is rt.ContainerState.RUNNING
            return False

        return read_logs(Path(instance.log_path), opts, clock=clock, container_running=running)

    async def run_in_container(self, namespace: str, pod_name: str, uid: str | None, container: str,
                               cmd: Sequence[str]) -> bytes:
        """The kubelet's RunInContainer: the running container by name, its combined output; a
        non-zero exit is an error. (Unlike the kubelet, a UID that is not the pod's is refused.)"""
        pod = self.manager.find(namespace, pod_name)
        if pod is None or (uid and pod.metadata.uid != uid):
            raise NotFound("pod does not exist")
        sandboxes = {s.id for s in await self.runtime.list_pod_sandboxes() if s.meta.uid == pod.metadata.uid}
        live = [c for c in await self.runtime.list_containers()
                if c.sandbox_id in sandboxes and c.name == container and c.state is rt.ContainerState.RUNNING]
        if not live:
            raise Unavailable(f'container not found ("{container}")')
        result = await self.runtime.exec_sync(live[0].id, cmd, RUN_TIMEOUT_S)
        if result.exit_code != 0:
            stderr = result.stderr.decode(errors="replace")
            raise Unavailable(f"command '{' '.join(cmd)}' exited with {result.exit_code}: {stderr}")
        return result.stdout + result.stderr

    # --- stats Inventory --------------------------------------------------------------------------
    def pods(self) -> list[PodRef]:
        """Pods with a ready sandbox, as the stats provider reports them (sorted by namespace/name)."""
        specs = {p.metadata.uid: p for p in self.manager.pods()}
        out = []
        for uid, (sandboxes, containers) in self.manager.runtime_view().items():
            ready = [s for s in sandboxes if s.state is rt.SandboxState.READY]
            if not ready:
                continue
            sandbox = max(ready, key=lambda s: s.created_at)
            refs = tuple(sorted(
                (self._container_ref(sandbox, c) for c in containers if c.sandbox_id == sandbox.id),
                key=lambda c: (c.name, -c.created_ns),
            ))
            if self.cri is not None and sandbox.cgroup_parent:  # the pause container, for cAdvisor
                refs += (ContainerRef(
                    name="", id=sandbox.id, image=sandbox.image, created_ns=sandbox.created_at,
                    started_ns=sandbox.created_at, running=True, cgroup=f"{sandbox.cgroup_parent}/{sandbox.id}",
                    sandbox=True,
                ),)
            spec = specs.get(uid)
            out.append(PodRef(
                uid=uid, name=sandbox.meta.name, namespace=sandbox.meta.namespace, created_ns=sandbox.created_at,
                cgroup=sandbox.cgroup_parent if self.node.isolated else "",
                log_dir=Path(sandbox.log_directory) if sandbox.log_directory else None,
                containers=refs, volumes=self._volume_refs(spec) if spec is not None else (),
            ))
        return sorted(out, key=lambda p: (p.namespace, p.name, p.uid))

    def _container_ref(self, sandbox: rt.Sandbox, c: rt.ContainerStatus) -> ContainerRef:
        running = c.state is rt.ContainerState.RUNNING
        cgroup = f"{sandbox.cgroup_parent}/{c.id}" if self.node.isolated and sandbox.cgroup_parent else ""
        return ContainerRef(
            name=c.name, id=c.id, image=c.image, created_ns=c.created_at, started_ns=c.started_at,
            running=running, cgroup=cgroup, pid=c.pid if running else 0,
            log_dir=Path(c.log_path).parent if c.log_path else None,
        )

    def _volume_refs(self, pod: Pod) -> tuple[VolumeRef, ...]:
        refs = []
        for volume in pod.spec.volumes or []:
            if volume.empty_dir is not None:
                path = self.node.pod_dir(pod.metadata.uid) / "volumes" / "kubernetes.io~empty-dir" / volume.name
                kind = "emptyDir-memory" if volume.empty_dir.medium == "Memory" else "emptyDir"
                refs.append(VolumeRef(volume.name, path, kind))
            elif volume.host_path is not None:
                refs.append(VolumeRef(volume.name, Path(volume.host_path.path), "hostPath"))
        return tuple(refs)

    def log_dirs(self) -> list[tuple[str, str, str, str, Path]]:
        """(uid, namespace, pod, container, log dir) of every container the runtime has."""
        out = []
        for uid, (sandboxes, containers) in self.manager.runtime_view().items():
            if not sandboxes:
                continue
            meta = sandboxes[0].meta
            for name in sorted({c.name for c in containers}):
                out.append((uid, meta.namespace, meta.name, name, Path(sandboxes[0].log_directory) / name))
        return out
