"""SyncPod and KillPod: bring the runtime in line with one pod's spec, as kuberuntime does.

sync: prepare volumes and the sandbox; run init containers one at a time, in order; then start
or restart app containers per restartPolicy with CrashLoopBackOff; restart a running container
whose spec hash changed; kill a running container whose liveness or startup probe failed (the
probe's terminationGracePeriodSeconds, else the pod's) and restart it unless the policy is Never,
through the same back-off; keep one exited instance per container (lastState, `previous` logs);
publish the pod's status. Before a container is created its image is ensured by its pull policy
(images.ImageManager: ErrImagePull, ImagePullBackOff...). Returns when it wants to run again (a
back-off ending).
kill: preStop hooks, SIGTERM, SIGKILL at the grace period's end (containers in parallel), then
remove containers, sandbox, cgroups and volumes; logs stay for the log GC.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kubeletapi.api.core_v1 import Container, Pod, PodStatus
from kubeletapi.cgroups.resources import QOSClass, pod_cgroup_path, pod_resource_config
from kubeletapi.clock import Clock
from kubeletapi.config.durations import Duration
from kubeletapi.errors import InvalidInput, KubeletError, Unavailable
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.containers import container_config, container_hash, quantities
from kubeletapi.pods.images import ImageManager
from kubeletapi.pods.lifecycle import run_hook
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.qos import qos_class
from kubeletapi.pods.status import CONTAINER_ID_SCHEME, ContainerProbes, PodView, ProbeView, pod_status
from kubeletapi.pods.volumes import PodVolumes, VolumeError
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.interface import Runtime

log = logging.getLogger(__name__)

MIN_GRACE_S = 2.0  # the kubelet's minimumGracePeriodInSeconds
CONFIG_RETRY_S = 10.0
RUNTIME_RETRY_S = 2.0  # the runtime is unreachable: try again soon (it is usually restarting)
HOOK_TIMEOUT_S = 120.0
PROBE_OUTPUT_MAX = 1024  # probe output kept in a terminated state's message
UNHEALTHY = "Unhealthy"  # the kubelet's event reason for probe failures


class SyncObserver(Protocol):
    """Where the syncer reports (the kubelet_* metrics)."""

    def pod_synced(self, operation: str, duration_s: float) -> None: ...

    def pod_started(self, static: bool, containers: int) -> None: ...

    def pod_running(self, seconds_since_seen: float) -> None: ...

    def container_started(self, kind: str) -> None: ...


class Probes(ContainerProbes, Protocol):
    """Probe results the syncer acts on (kubeletapi.prober.ProbeManager)."""

    def failure(self, pod_uid: str, container: str, container_id: str) -> tuple[str, str] | None:
        """("liveness" | "startup", the failing probe's output) when that probe failed."""
        ...


@dataclass
class _PodState:
    first_seen: float
    start_time: dt.datetime | None = None
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)
    status: PodStatus | None = None
    reported_running: bool = False
    synced: bool = False
    # container id -> (reason, message) of an instance killed for a failed probe
    killed: dict[str, tuple[str, str]] = field(default_factory=dict)
    runtime_down: bool = False  # the last sync could not reach the runtime (logged once)


def should_restart(policy: str, exit_code: int) -> bool:
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def backoff_key(uid: str, name: str) -> str:
    return f"{uid}/{name}"


class PodSyncer:
    def __init__(
        self,
        runtime: Runtime,
        node: NodeEnv,
        clock: Clock,
        backoff: Backoff,
        volumes: PodVolumes,
        publish: Callable[[str, PodStatus | None], None],
        observer: SyncObserver | None = None,
        probes: Probes | None = None,
        images: ImageManager | None = None,
    ) -> None:
        self._runtime = runtime
        self._node = node
        self._clock = clock
        self._backoff = backoff
        self._volumes = volumes
        self._publish = publish
        self._observer = observer
        self._probes = probes
        self._images = images if images is not None else ImageManager(runtime, clock)
        self._pods: dict[str, _PodState] = {}
        # The scheme of container ids in statuses: the runtime's name (containerd://<id>), set by
        # the wiring once the runtime has answered Version.
        self.id_scheme = CONTAINER_ID_SCHEME

    # --- sync ----------------------------------------------------------------------------------
    async def sync(self, pod: Pod) -> float | None:
        uid = pod.metadata.uid
        state = self._pods.setdefault(uid, _PodState(first_seen=self._clock.now()))
        began = time.perf_counter()
        state.waiting = {}
        try:
            requeue = await self._sync(pod, state)
            await self._report(pod, state)
        except Unavailable as exc:
            self._runtime_down(pod, state, exc)
            return RUNTIME_RETRY_S
        if self._observer is not None:
            self._observer.pod_synced("sync" if state.synced else "create", time.perf_counter() - began)
        state.synced = True
        return requeue

    async def _sync(self, pod: Pod, state: _PodState) -> float | None:
        sandboxes, containers = await self._runtime_view(pod.metadata.uid)
        ready = [s for s in sandboxes if s.state is rt.SandboxState.READY]
        try:
            volumes = self._volumes.setup(pod)
        except VolumeError as exc:
            self._wait_all(pod, state, "ContainerCreating", str(exc))
            return CONFIG_RETRY_S
        if ready:
            sandbox_id, sandbox_attempt = ready[0].id, ready[0].meta.attempt
        else:
            sandbox_attempt = len(sandboxes)
            sandbox_id = await self._runtime.run_pod_sandbox(self._sandbox_config(pod, sandbox_attempt))
            state.start_time = state.start_time or dt.datetime.now(dt.UTC).replace(microsecond=0)
            if self._observer is not None:
                self._observer.pod_started(True, len(pod.spec.all_containers()))
        view = PodView.of(sandboxes, containers)
        ctx = _SyncContext(pod, sandbox_id, view, volumes, state, sandbox_attempt)
        requeue = await self._sync_init(ctx)
        if ctx.init_done:
            requeue = _earliest(requeue, await self._sync_app(ctx))
        await self._gc_instances(view)
        return requeue

    async def _sync_init(self, ctx: _SyncContext) -> float | None:
        policy = ctx.pod.spec.restart_policy or "Always"
        for container in ctx.pod.spec.init_containers:
            latest = ctx.view.latest(container.name)
            if latest is not None and latest.state is rt.ContainerState.EXITED and latest.exit_code == 0:
                continue
            ctx.init_done = False
            for later in ctx.pod.spec.containers:
                ctx.state.waiting.setdefault(later.name, ("PodInitializing", ""))
            if latest is None:
                return await self._start(ctx, container, 0, "init")
            if latest.state is not rt.ContainerState.EXITED or policy == "Never":
                return None
            return await self._restart(ctx, container, latest, "init")
        return None

    async def _sync_app(self, ctx: _SyncContext) -> float | None:
        policy = ctx.pod.spec.restart_policy or "Always"
        requeue: float | None = None
        for container in ctx.pod.spec.containers:
            latest = ctx.view.latest(container.name)
            if latest is None:
                requeue = _earliest(requeue, await self._start(ctx, container, 0, "app"))
            elif latest.state is rt.ContainerState.RUNNING:
                if latest.annotations.get(rt.CONTAINER_HASH) != container_hash(container):
                    log.info("container %s of pod %s changed: restarting it", container.name, ctx.pod.metadata.name)
                    await self._stop(ctx.pod, container, latest, "the container spec changed")
                    requeue = _earliest(requeue, await self._start(ctx, container, latest.attempt + 1, "app"))
                elif (failed := self._probe_failure(ctx.pod, container, latest)) is not None:
                    requeue = _earliest(requeue, await self._kill_unhealthy(ctx, container, latest, *failed))
            elif latest.state is rt.ContainerState.CREATED:
                requeue = _earliest(requeue, await self._start_existing(ctx, container, latest))
            elif should_restart(policy, latest.exit_code) or (latest.id in ctx.state.killed and policy != "Never"):
                requeue = _earliest(requeue, await self._restart(ctx, container, latest, "app"))
        return requeue

    def _probe_failure(self, pod: Pod, container: Container, latest: rt.ContainerStatus) -> tuple[str, str] | None:
        if self._probes is None:
            return None
        return self._probes.failure(pod.metadata.uid, container.name, latest.id)

    async def _kill_unhealthy(
        self, ctx: _SyncContext, container: Container, latest: rt.ContainerStatus, kind: str, output: str
    ) -> float | None:
        """A failed liveness/startup probe: stop the container with the probe's grace period (else
        the pod's), then restart it through the back-off unless the policy is Never (the
        kubelet's computePodActions). Its message, with the probe's output, becomes the
        terminated state's message (the kubelet itself shows reason Error, exit 137 there)."""
        restart = (ctx.pod.spec.restart_policy or "Always") != "Never"
        message = f"Container {container.name} failed {kind} probe"
        if restart:
            message += ", will be restarted"
        if output.strip():
            message += f": {_capped(output.strip())}"
        probe = container.liveness_probe if kind == "liveness" else container.startup_probe
        override = probe.termination_grace_period_seconds if probe is not None else None
        ctx.state.killed[latest.id] = (UNHEALTHY, message)
        await self._stop(ctx.pod, container, latest, message, override)
        if not restart:
            return None
        try:
            stopped = await self._runtime.container_status(latest.id)
        except KubeletError as exc:
            log.warning("cannot read container %s after stopping it: %s", latest.id, exc)
            return CONFIG_RETRY_S
        return await self._restart(ctx, container, stopped, "app")

    async def _restart(
        self, ctx: _SyncContext, container: Container, latest: rt.ContainerStatus, kind: str
    ) -> float | None:
        key = backoff_key(ctx.pod.metadata.uid, container.name)
        remaining = self._backoff.remaining(key, latest.finished_at / 1e9)
        if remaining > 0:
            meta = ctx.pod.metadata
            current = Duration.of_seconds(self._backoff.current(key))
            ctx.state.waiting[container.name] = (
                "CrashLoopBackOff",
                f"back-off {current} restarting failed container={container.name} "
                f"pod={meta.name}_{meta.namespace}({meta.uid})",
            )
            return remaining
        self._backoff.next(key)
        return await self._start(ctx, container, latest.attempt + 1, kind)

    async def _start(self, ctx: _SyncContext, container: Container, attempt: int, kind: str) -> float | None:
        sandbox = self._sandbox_config(ctx.pod, ctx.sandbox_attempt)
        image = await self._images.ensure(ctx.pod.metadata.uid, container.image, container.image_pull_policy, sandbox)
        if not image.ok:  # ErrImagePull, ImagePullBackOff...: retry when the back-off ends
            ctx.state.waiting[container.name] = (image.reason, image.message)
            return image.retry_s if image.retry_s is not None else CONFIG_RETRY_S
        try:
            config = container_config(ctx.pod, container, attempt, kind, self._node, ctx.volumes)
            container_id = await self._runtime.create_container(ctx.sandbox_id, config)
        except InvalidInput as exc:
            ctx.state.waiting[container.name] = ("CreateContainerConfigError", str(exc))
            return CONFIG_RETRY_S
        except KubeletError as exc:
            ctx.state.waiting[container.name] = ("CreateContainerError", str(exc))
            return CONFIG_RETRY_S
        return await self._start_created(ctx, container, container_id, kind)

    async def _start_existing(
        self, ctx: _SyncContext, container: Container, created: rt.ContainerStatus
    ) -> float | None:
        return await self._start_created(ctx, container, created.id, "app")

    async def _start_created(
        self, ctx: _SyncContext, container: Container, container_id: str, kind: str
    ) -> float | None:
        try:
            await self._runtime.start_container(container_id)
        except KubeletError as exc:
            ctx.state.waiting[container.name] = ("RunContainerError", str(exc))
            return CONFIG_RETRY_S
        if self._observer is not None:
            self._observer.container_started("init_container" if kind == "init" else "container")
        hook = container.lifecycle.post_start if container.lifecycle else None
        if hook is not None:
            error = await run_hook(hook, self._runtime, container_id, container, self._node.node_ip, HOOK_TIMEOUT_S)
            if error is not None:
                log.warning("postStart hook of %s/%s failed: %s", ctx.pod.metadata.name, container.name, error)
                await self._runtime.stop_container(container_id, self._grace(ctx.pod))
        return None

    async def _stop(
        self, pod: Pod, container: Container | None, status: rt.ContainerStatus, why: str,
        grace_override: int | None = None,
    ) -> None:
        """preStop (with the grace period), then SIGTERM and SIGKILL at the deadline."""
        grace = self._grace(pod) if grace_override is None else max(float(grace_override), MIN_GRACE_S)
        deadline = time.monotonic() + grace
        hook = container.lifecycle.pre_stop if container is not None and container.lifecycle else None
        if hook is not None and container is not None:
            error = await run_hook(hook, self._runtime, status.id, container, self._node.node_ip, grace)
            if error is not None:
                log.warning("preStop hook of %s/%s failed: %s", pod.metadata.name, container.name, error)
        log.info("stopping container %s of pod %s (%s)", status.name, pod.metadata.name, why)
        await self._runtime.stop_container(status.id, max(deadline - time.monotonic(), 0.0))

    def _grace(self, pod: Pod) -> float:
        grace = pod.spec.termination_grace_period_seconds
        return max(float(30 if grace is None else grace), MIN_GRACE_S)

    async def _gc_instances(self, view: PodView) -> None:
        """Keep the newest instance and one exited instance before it (the kubelet keeps 1)."""
        for instances in view.instances.values():
            for old in instances[2:]:
                if old.state is rt.ContainerState.EXITED:
                    try:
                        await self._runtime.remove_container(old.id)
                    except KubeletError as exc:
                        log.warning("cannot remove old container %s: %s", old.id, exc)

    def _wait_all(self, pod: Pod, state: _PodState, reason: str, message: str) -> None:
        for container in pod.spec.all_containers():
            state.waiting[container.name] = (reason, message)

    def _sandbox_config(self, pod: Pod, attempt: int) -> rt.SandboxConfig:
        meta = pod.metadata
        qos = QOSClass(qos_class(pod))
        parent = ""
        if self._node.isolated:
            parent = pod_cgroup_path(self._node.cgroup_root, qos, meta.uid)
        amounts = [quantities(c) for c in pod.spec.containers]
        inits = [quantities(c) for c in pod.spec.init_containers]
        cfg = pod_resource_config(amounts, inits, qos=qos, pod_pids_limit=self._node.pod_pids_limit,
                                  cfs_quota_enabled=self._node.cfs_quota)
        return rt.SandboxConfig(
            meta=rt.PodMeta(meta.name, meta.namespace, meta.uid, attempt),
            hostname=pod.spec.hostname or meta.name[:63],
            log_directory=str(self._node.pod_log_dir(meta.namespace, meta.name, meta.uid)),
            cgroup_parent=parent,
            resources=rt.Resources(cpu_shares=cfg.cpu_shares, cpu_quota=cfg.cpu_quota, cpu_period=cfg.cpu_period,
                                   memory_limit=cfg.memory_limit, pids_limit=cfg.pids_limit),
            labels={rt.POD_NAME: meta.name, rt.POD_NAMESPACE: meta.namespace, rt.POD_UID: meta.uid},
            annotations=dict(meta.annotations),
        )

    async def _runtime_view(self, uid: str) -> tuple[list[rt.Sandbox], list[rt.ContainerStatus]]:
        sandboxes = [s for s in await self._runtime.list_pod_sandboxes() if s.meta.uid == uid]
        ids = {s.id for s in sandboxes}
        containers = [c for c in await self._runtime.list_containers() if c.sandbox_id in ids]
        return sandboxes, containers

    def _runtime_down(self, pod: Pod, state: _PodState, exc: Unavailable) -> None:
        """The runtime cannot be reached: a pod already reported keeps its last status (its
        containers run on, unseen); a new one shows its containers waiting on the runtime."""
        if not state.runtime_down:
            log.warning("pod %s/%s: waiting on the container runtime: %s", pod.metadata.namespace,
                        pod.metadata.name, exc)
        state.runtime_down = True
        if state.status is not None and state.status.container_statuses:
            return
        self._wait_all(pod, state, "ContainerCreating", str(exc))
        now = dt.datetime.fromtimestamp(self._clock.now(), dt.UTC)
        state.status = pod_status(pod, PodView.of([], []), state.waiting, self._node.node_ip, state.start_time,
                                  state.status, now, scheme=self.id_scheme)
        self._publish(pod.metadata.uid, state.status)

    async def _report(self, pod: Pod, state: _PodState) -> None:
        state.runtime_down = False
        sandboxes, containers = await self._runtime_view(pod.metadata.uid)
        view = PodView.of(sandboxes, containers)
        now = dt.datetime.fromtimestamp(self._clock.now(), dt.UTC)
        present = {c.id for c in containers}
        state.killed = {cid: why for cid, why in state.killed.items() if cid in present}
        probes = ProbeView(pod.metadata.uid, self._probes, state.killed)
        status = pod_status(pod, view, state.waiting, self._node.node_ip, state.start_time, state.status, now, probes,
                            self.id_scheme)
        state.status = status
        self._publish(pod.metadata.uid, status)
        all_running = bool(status.container_statuses) and all(
            s.state.running is not None for s in status.container_statuses
        )
        if all_running and not state.reported_running:
            state.reported_running = True
            if self._observer is not None:
                self._observer.pod_running(self._clock.now() - state.first_seen)

    # --- kill ----------------------------------------------------------------------------------
    async def kill(self, pod: Pod) -> None:
        uid = pod.metadata.uid
        sandboxes, containers = await self._runtime_view(uid)
        specs = {c.name: c for c in pod.spec.all_containers()}
        running = [c for c in containers if c.state is rt.ContainerState.RUNNING]
        await asyncio.gather(*(self._stop(pod, specs.get(c.name), c, "the pod is being removed") for c in running))
        for sandbox in sandboxes:
            await self._runtime.remove_pod_sandbox(sandbox.id)
        self._volumes.teardown(uid)
        self._backoff.forget(f"{uid}/")
        self._images.forget(uid)
        self._pods.pop(uid, None)
        self._publish(uid, None)
        log.info("pod %s/%s (%s) removed", pod.metadata.namespace, pod.metadata.name, uid)

    def forget(self, uid: str) -> None:
        self._pods.pop(uid, None)


@dataclass
class _SyncContext:
    pod: Pod
    sandbox_id: str
    view: PodView
    volumes: dict[str, rt.Mount]
    state: _PodState
    sandbox_attempt: int = 0
    init_done: bool = True


def _capped(output: str) -> str:
    return output if len(output) <= PROBE_OUTPUT_MAX else output[:PROBE_OUTPUT_MAX] + "..."


def _earliest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)

