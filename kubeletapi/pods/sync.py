"""SyncPod and KillPod: bring the runtime in line with one pod's spec, as kuberuntime does.

sync: prepare volumes and the sandbox; run init containers one at a time, in order; then start
or restart app containers per restartPolicy with CrashLoopBackOff; restart a running container
whose spec hash changed; kill a running container whose liveness or startup probe failed (the
probe's terminationGracePeriodSeconds, else the pod's) and restart it unless the policy is Never,
through the same back-off; keep one exited instance per container (lastState, `previous` logs);
write the pod's status to the status store. Starting one container (its image, creation, start,
postStart hook, CrashLoopBackOff) is starting.py's; what a sync knows of the pod, syncstate.py's.
Returns when it wants to run again (a back-off ending).
What the runtime has comes from the pod cache (PodRecords): a sync that changed the runtime
marks it, and its status, and the next sync, read a record listed after that mark, so a change
is never missed and a container never started twice; a sync that changed nothing lists nothing.
The pod's QoS class and resources are computed once per sync (cm.resources.pod_resources).
kill: stop every running container (stopping.py: preStop, SIGTERM, SIGKILL at the grace period's
end; in parallel), write the pod's final status (terminal for an API pod), then remove
containers, sandbox, cgroups and volumes; logs stay for the log GC.
Events are the kubelet's, at the points kuberuntime records them (podevents.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import Protocol

from kubeletapi.api.core_v1 import Container, Pod, PodStatus
from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError, Unavailable
from kubeletapi.pods.backoff import Backoff
from kubeletapi.pods.containers import container_hash
from kubeletapi.pods.env import EnvResolver
from kubeletapi.pods.images import ImageManager
from kubeletapi.pods.node import NodeEnv
from kubeletapi.pods.podcache import PodRecord
from kubeletapi.pods.podevents import PodEvents
from kubeletapi.pods.starting import ContainerStarter, EnvSource, MemoryAffinity, StartObserver
from kubeletapi.pods.static import config_seen, is_static
from kubeletapi.pods.status import CONTAINER_ID_SCHEME, ContainerProbes, PodView, ProbeView, pod_status
from kubeletapi.pods.statusstore import StatusStore
from kubeletapi.pods.stopping import ContainerStopper
from kubeletapi.pods.syncstate import CONFIG_RETRY_S, PodSyncState, SyncContext
from kubeletapi.pods.volumes import PodVolumes, VolumeError
from kubeletapi.runtime import types as rt
from kubeletapi.runtime.interface import Runtime

log = logging.getLogger(__name__)

NETWORK_RETRY_S = 1.0  # the pod network is not ready yet (the Node has no podCIDR yet)
RUNTIME_RETRY_S = 2.0  # the runtime is unreachable: try again soon (it is usually restarting)
PROBE_OUTPUT_MAX = 1024  # probe output kept in a terminated state's message
UNHEALTHY = "Unhealthy"  # the kubelet's event reason for probe failures


class SyncObserver(StartObserver, Protocol):
    """Where the syncer reports (the kubelet_* metrics)."""

    def pod_synced(self, operation: str, duration_s: float) -> None: ...

    def pod_started(self) -> None:
        """A sandbox is about to be created (kubelet_started_pods_total counts attempts, as the kubelet's)."""

    def containers_counted(self, containers: int) -> None:
        """A pod's first sync: its spec.containers (kubelet_containers_per_pod_count)."""

    def pod_running(self, seconds_since_seen: float) -> None: ...

    def pod_worker_started(self, seconds_since_seen: float) -> None: ...

    def pod_start_failed(self) -> None: ...

    def lifecycle_http_fallback(self) -> None: ...


class PodRecords(Protocol):
    """The pod cache as a sync reads it (pleg.PLEG)."""

    def mark(self) -> int:
        """A sequence number newer than every listing begun so far."""
        ...

    async def pod_record(self, uid: str, newer_than: int) -> PodRecord:
        """The pod's sandboxes and containers as listed after `newer_than`."""
        ...


class Probes(ContainerProbes, Protocol):
    """Probe results the syncer acts on (kubeletapi.prober.ProbeManager)."""

    def failure(self, pod_uid: str, container: str, container_id: str) -> tuple[str, str] | None:
        """("liveness" | "startup", the failing probe's output) when that probe failed."""
        ...


def should_restart(policy: str, exit_code: int) -> bool:
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


class PodSyncer:
    def __init__(
        self,
        runtime: Runtime,
        node: NodeEnv,
        clock: Clock,
        backoff: Backoff,
        volumes: PodVolumes,
        records: PodRecords,
        statuses: StatusStore,
        observer: SyncObserver | None = None,
        probes: Probes | None = None,
        images: ImageManager | None = None,
        env: EnvSource | None = None,
        events: PodEvents | None = None,
        network_error: Callable[[], str | None] | None = None,
        memory: MemoryAffinity | None = None,
    ) -> None:
        self._runtime = runtime
        # Why the pod network is not ready (None: it is, or pods use the node's): a pod that is not
        # hostNetwork waits for it, as the kubelet's syncPod does (NetworkNotReady).
        self._network_error = network_error or (lambda: None)
        self._node = node
        self._clock = clock
        self._volumes = volumes
        self._records = records
        self._statuses = statuses
        self._observer = observer
        self._probes = probes
        self._events = events or PodEvents()
        images = images if images is not None else ImageManager(runtime, clock)
        env = env if env is not None else EnvResolver(node)
        self._starter = ContainerStarter(runtime, node, backoff, images, env, self._events, observer, memory,
                                         on_http_fallback=self._hook_fell_back)
        self._stopper = ContainerStopper(runtime, clock, node.node_ip, self._events, pod_ip=self._published_ip,
                                         on_http_fallback=self._hook_fell_back)
        self._pods: dict[str, PodSyncState] = {}
        # uid -> how the next kill's final status is to be changed (an eviction's, set_final_status)
        self._final_adjust: dict[str, Callable[[PodStatus], PodStatus]] = {}
        # The scheme of container ids in statuses: the runtime's name (containerd://<id>), set by
        # the wiring once the runtime has answered Version.
        self.id_scheme = CONTAINER_ID_SCHEME

    # --- sync ----------------------------------------------------------------------------------
    async def sync(self, pod: Pod) -> float | None:
        uid = pod.metadata.uid
        if uid not in self._pods and self._observer is not None:  # the worker's first sync
            self._observer.containers_counted(len(pod.spec.containers))
            if (seen := config_seen(pod)) is not None:
                self._observer.pod_worker_started(self._clock.now() - seen)
        state = self._pods.setdefault(uid, PodSyncState(first_seen=self._clock.now()))
        began = self._clock.monotonic()
        state.waiting = {}
        try:
            try:
                requeue = await self._sync(pod, state)
            finally:
                self._mark_changed(state)
            await self._report(pod, state)
        except Unavailable as exc:
            self._runtime_down(pod, state, exc)
            return RUNTIME_RETRY_S
        if self._observer is not None:
            self._observer.pod_synced("sync" if state.synced else "create", self._clock.monotonic() - began)
        state.synced = True
        return requeue

    def _mark_changed(self, state: PodSyncState) -> None:
        """After the runtime calls of a sync that changed the pod (even failed ones): whatever
        reads the pod next wants a listing begun after them."""
        if state.changing:
            state.changed = self._records.mark()
            state.changing = False

    async def _sync(self, pod: Pod, state: PodSyncState) -> float | None:
        record = await self._records.pod_record(pod.metadata.uid, state.changed)
        sandboxes, containers = record.sandboxes, record.containers
        ready = [s for s in sandboxes if s.state is rt.SandboxState.READY]
        try:
            volumes = await self._volumes.setup(pod)
        except VolumeError as exc:  # FailedMount: the pod waits, retried after the volume's back-off
            self._events.failed_mount(pod, exc.parts)
            self._wait_all(pod, state, "ContainerCreating", str(exc))
            return exc.retry_s if exc.retry_s is not None else CONFIG_RETRY_S
        sandbox_attempt = ready[0].meta.attempt if ready else len(sandboxes)
        ctx = SyncContext(pod, "", PodView.of(sandboxes, containers), volumes, state, self._node, sandbox_attempt)
        if ready:
            ctx.sandbox_id = ready[0].id
        elif not pod.spec.host_network and (not_ready := self._network_error()):
            self._wait_all(pod, state, "ContainerCreating", f"network is not ready: {not_ready}")
            return NETWORK_RETRY_S
        else:
            state.changing = True
            if sandboxes:
                self._events.sandbox_changed(pod)
            if self._observer is not None:
                self._observer.pod_started()
            ctx.sandbox_id = await self._run_sandbox(ctx)
            state.start_time = state.start_time or self._now()
        view = ctx.view
        requeue = await self._sync_init(ctx)
        if ctx.init_done:
            requeue = _earliest(requeue, await self._sync_app(ctx))
        await self._gc_instances(view, state)
        return requeue

    async def _run_sandbox(self, ctx: SyncContext) -> str:
        try:
            return await self._runtime.run_pod_sandbox(ctx.sandbox)
        except Exception as exc:
            if self._observer is not None:  # kubelet_started_pods_errors_total counts every failure
                self._observer.pod_start_failed()
            if isinstance(exc, KubeletError) and not isinstance(exc, Unavailable):  # down: no pod's failure
                self._events.sandbox_failed(ctx.pod, exc)
            raise

    async def _sync_init(self, ctx: SyncContext) -> float | None:
        policy = ctx.pod.spec.restart_policy or "Always"
        for container in ctx.pod.spec.init_containers:
            latest = ctx.view.latest(container.name)
            if latest is not None and latest.state is rt.ContainerState.EXITED and latest.exit_code == 0:
                continue
            ctx.init_done = False
            for later in ctx.pod.spec.containers:
                ctx.state.waiting.setdefault(later.name, ("PodInitializing", ""))
            if latest is None:
                return await self._starter.start(ctx, container, 0, "init")
            if latest.state is not rt.ContainerState.EXITED or policy == "Never":
                return None
            return await self._starter.restart(ctx, container, latest, "init")
        return None

    async def _sync_app(self, ctx: SyncContext) -> float | None:
        policy = ctx.pod.spec.restart_policy or "Always"
        requeue: float | None = None
        for container in ctx.pod.spec.containers:
            latest = ctx.view.latest(container.name)
            if latest is None:
                requeue = _earliest(requeue, await self._starter.start(ctx, container, 0, "app"))
            elif latest.state is rt.ContainerState.RUNNING:
                if latest.annotations.get(rt.CONTAINER_HASH) != container_hash(container):
                    log.info("container %s of pod %s changed: restarting it", container.name, ctx.pod.metadata.name)
                    ctx.state.changing = True
                    await self._stopper.stop(ctx.pod, container, latest, "the container spec changed", kill_message=(
                        f"Container {container.name} definition changed, will be restarted"))
                    requeue = _earliest(requeue, await self._starter.start(ctx, container, latest.attempt + 1, "app"))
                elif (failed := self._probe_failure(ctx.pod, container, latest)) is not None:
                    requeue = _earliest(requeue, await self._kill_unhealthy(ctx, container, latest, *failed))
            elif latest.state is rt.ContainerState.CREATED:
                requeue = _earliest(requeue, await self._starter.start_created(ctx, container, latest.id, "app"))
            elif should_restart(policy, latest.exit_code) or (latest.id in ctx.state.killed and policy != "Never"):
                requeue = _earliest(requeue, await self._starter.restart(ctx, container, latest, "app"))
        return requeue

    def _probe_failure(self, pod: Pod, container: Container, latest: rt.ContainerStatus) -> tuple[str, str] | None:
        if self._probes is None:
            return None
        return self._probes.failure(pod.metadata.uid, container.name, latest.id)

    async def _kill_unhealthy(
        self, ctx: SyncContext, container: Container, latest: rt.ContainerStatus, kind: str, output: str
    ) -> float | None:
        """A failed liveness/startup probe: stop the container with the probe's grace period (else
        the pod's), then restart it through the back-off unless the policy is Never (the
        kubelet's computePodActions). Its message, with the probe's output, becomes the
        terminated state's message (the kubelet itself shows reason Error, exit 137 there)."""
        restart = (ctx.pod.spec.restart_policy or "Always") != "Never"
        message = f"Container {container.name} failed {kind} probe"
        if restart:
            message += ", will be restarted"
        kill_message = message  # the Killing event's (without the output)
        if output.strip():
            message += f": {_capped(output.strip())}"
        probe = container.liveness_probe if kind == "liveness" else container.startup_probe
        override = probe.termination_grace_period_seconds if probe is not None else None
        ctx.state.killed[latest.id] = (UNHEALTHY, message)
        ctx.state.changing = True
        await self._stopper.stop(ctx.pod, container, latest, message, override, kill_message)
        if not restart:
            return None
        try:
            stopped = await self._runtime.container_status(latest.id)
        except KubeletError as exc:
            log.warning("cannot read container %s after stopping it: %s", latest.id, exc)
            return CONFIG_RETRY_S
        return await self._starter.restart(ctx, container, stopped, "app")

    def _hook_fell_back(self, pod: Pod, hostport: str) -> None:
        """An https lifecycle hook was answered over http (the kubelet's LifecycleHTTPFallback)."""
        self._events.http_fallback(pod, hostport)
        if self._observer is not None:
            self._observer.lifecycle_http_fallback()

    def _published_ip(self, pod: Pod) -> str:
        """The pod's address as its status shows it (a preStop httpGet calls it)."""
        status = self._statuses.get(pod.metadata.uid)
        return status.pod_ip if status is not None and status.pod_ip else self._node.node_ip

    async def _gc_instances(self, view: PodView, state: PodSyncState) -> None:
        """Keep the newest instance and one exited instance before it (the kubelet keeps 1)."""
        for instances in view.instances.values():
            for old in instances[2:]:
                if old.state is rt.ContainerState.EXITED:
                    state.changing = True
                    try:
                        await self._runtime.remove_container(old.id)
                    except KubeletError as exc:
                        log.warning("cannot remove old container %s: %s", old.id, exc)

    def _wait_all(self, pod: Pod, state: PodSyncState, reason: str, message: str) -> None:
        for container in pod.spec.all_containers():
            state.waiting[container.name] = (reason, message)

    def _runtime_down(self, pod: Pod, state: PodSyncState, exc: Unavailable) -> None:
        """The runtime cannot be reached: a pod already reported keeps its last status (its
        containers run on, unseen); a new one shows its containers waiting on the runtime."""
        if not state.runtime_down:
            log.warning("pod %s/%s: waiting on the container runtime: %s", pod.metadata.namespace,
                        pod.metadata.name, exc)
        state.runtime_down = True
        previous = self._previous(pod)
        if previous is not None and previous.container_statuses:
            return
        self._wait_all(pod, state, "ContainerCreating", str(exc))
        status = pod_status(pod, PodView.of([], []), state.waiting, self._node.node_ip, state.start_time,
                            previous, self._now(), scheme=self.id_scheme)
        self._statuses.set(pod.metadata.uid, status)

    async def _report(self, pod: Pod, state: PodSyncState) -> None:
        uid = pod.metadata.uid
        record = await self._records.pod_record(uid, state.changed)
        state.runtime_down = False
        view = PodView.of(record.sandboxes, record.containers)
        present = {c.id for c in record.containers}
        state.killed = {cid: why for cid, why in state.killed.items() if cid in present}
        probes = ProbeView(uid, self._probes, state.killed)
        status = pod_status(pod, view, state.waiting, self._node.node_ip, state.start_time, self._previous(pod),
                            self._now(), probes, self.id_scheme)
        self._statuses.set(uid, status)
        all_running = bool(status.container_statuses) and all(
            s.state.running is not None for s in status.container_statuses
        )
        if all_running and not state.reported_running:
            state.reported_running = True
            if self._observer is not None:
                self._observer.pod_running(self._clock.now() - state.first_seen)

    # --- kill ----------------------------------------------------------------------------------
    async def kill(self, pod: Pod) -> None:
        """Stop and remove everything the runtime has of the pod, as listed now; the pod cache
        then holds the runtime's view after the removal."""
        uid = pod.metadata.uid
        record = await self._records.pod_record(uid, self._records.mark())
        specs = {c.name: c for c in pod.spec.all_containers()}
        running = [c for c in record.containers if c.state is rt.ContainerState.RUNNING]
        stopping = (self._stopper.stop(pod, specs.get(c.name), c, "the pod is being removed") for c in running)
        await asyncio.gather(*stopping)
        if running:
            record = await self._records.pod_record(uid, self._records.mark())
        self._final_status(pod, record)
        for sandbox in record.sandboxes:
            await self._runtime.remove_pod_sandbox(sandbox.id)
        await self._records.pod_record(uid, self._records.mark())
        await self._volumes.teardown(uid)
        self._starter.forget(uid)
        self._pods.pop(uid, None)
        log.info("pod %s/%s (%s) removed", pod.metadata.namespace, pod.metadata.name, uid)

    def set_final_status(self, uid: str, adjust: Callable[[PodStatus], PodStatus]) -> None:
        """Have the pod's next kill write `adjust(final status)` (the kubelet's killPodFunc status
        function: an evicted pod is Failed with reason Evicted from its first terminal status on)."""
        self._final_adjust[uid] = adjust

    def _previous(self, pod: Pod) -> PodStatus | None:
        """The pod's last status: this node's, else the API server's (an API pod first seen, or
        seen again after a restart: its conditions' transition times and start time carry on)."""
        status = self._statuses.get(pod.metadata.uid)
        if status is None and pod.status.phase and not is_static(pod):
            return pod.status
        return status

    def _final_status(self, pod: Pod, record: PodRecord) -> None:
        """The pod's last status, its containers stopped (the kubelet's TerminatePod): what the
        API server is told before the pod is deleted. The manager drops it when done with it."""
        uid = pod.metadata.uid
        state = self._pods.get(uid)
        killed = state.killed if state is not None else {}
        status = pod_status(pod, PodView.of(record.sandboxes, record.containers), {}, self._node.node_ip,
                            state.start_time if state is not None else None, self._previous(pod), self._now(),
                            ProbeView(uid, None, killed), self.id_scheme, terminal=True)
        adjust = self._final_adjust.pop(uid, None)
        self._statuses.set(uid, adjust(status) if adjust is not None else status)

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self._clock.now(), dt.UTC).replace(microsecond=0)


def _capped(output: str) -> str:
    return output if len(output) <= PROBE_OUTPUT_MAX else output[:PROBE_OUTPUT_MAX] + "..."


def _earliest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)

