"""A pod's v1 status from what the runtime holds, as the kubelet's generateAPIPodStatus does.

- containerStatuses / initContainerStatuses in spec order: state from the newest instance,
  lastState from the one before (or from the newest when a restart is pending), restartCount =
  the newest instance's attempt, waiting reasons from the syncer (ContainerCreating,
  PodInitializing, CrashLoopBackOff, CreateContainerConfigError...).
- phase with getPhase's rules (a container waiting to restart after an exit counts as stopped).
- conditions in the kubelet's order: PodReadyToStartContainers, Initialized, Ready,
  ContainersReady, PodScheduled; lastTransitionTime kept while a condition does not change.
- started and ready of a running container come from its probes (the kubelet's
  UpdatePodStatus): started once its startup probe succeeded (or it has none), ready once
  started and its readiness probe succeeded (or it has none). Without a prober, a running
  container is started and ready.
- an instance the syncer killed for a failed liveness/startup probe shows the syncer's reason
  and message in its terminated state (the runtime only knows it was signalled).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubeletapi.api.core_v1 import (
    TERMINAL_PHASES,
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    HostIP,
    Pod,
    PodCondition,
    PodIP,
    PodStatus,
)
from kubeletapi.cm.qos import qos_class
from kubeletapi.pods.static import is_static
from kubeletapi.runtime import types as rt

CONTAINER_ID_SCHEME = "process"


class ContainerProbes(Protocol):
    """What the prober says about a running container (kubeletapi.prober.ProbeManager)."""

    def started(self, pod_uid: str, container: str, container_id: str) -> bool: ...

    def ready(self, pod_uid: str, container: str, container_id: str) -> bool: ...


@dataclass(frozen=True)
class ProbeView:
    """A pod's probes as container_status() consults them; `killed` maps a runtime container id
    to the (reason, message) its terminated state shows instead of the runtime's."""

    pod_uid: str = ""
    probes: ContainerProbes | None = None
    killed: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class PodView:
    """The runtime's instances of one pod, grouped by container name (newest first)."""

    sandbox_ready: bool = False
    instances: dict[str, list[rt.ContainerStatus]] = field(default_factory=dict)
    # The pod's own addresses: its ready sandbox's, else its newest sandbox's (a completed pod whose
    # sandbox was stopped keeps showing the address it had); () on the node's network.
    pod_ips: tuple[str, ...] = ()

    @classmethod
    def of(cls, sandboxes: Sequence[rt.Sandbox], containers: Sequence[rt.ContainerStatus]) -> PodView:
        latest = sorted(sandboxes, key=lambda s: (s.state is rt.SandboxState.READY, s.created_at))
        view = cls(sandbox_ready=any(s.state is rt.SandboxState.READY for s in sandboxes),
                   pod_ips=latest[-1].ips if latest else ())
        for status in containers:
            view.instances.setdefault(status.name, []).append(status)
        for items in view.instances.values():
            items.sort(key=lambda s: (s.attempt, s.created_at), reverse=True)
        return view

    def latest(self, name: str) -> rt.ContainerStatus | None:
        items = self.instances.get(name)
        return items[0] if items else None

    def previous(self, name: str) -> rt.ContainerStatus | None:
        items = self.instances.get(name)
        return items[1] if items and len(items) > 1 else None


def _time(ns: int) -> dt.datetime | None:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC) if ns else None


def _terminated(s: rt.ContainerStatus, scheme: str, probes: ProbeView) -> ContainerStateTerminated:
    reason, message = probes.killed.get(s.id, (s.reason, s.message))
    return ContainerStateTerminated(
        exit_code=s.exit_code, signal=s.signal, reason=reason, message=message,
        started_at=_time(s.started_at), finished_at=_time(s.finished_at), container_id=f"{scheme}://{s.id}",
    )


_NO_PROBES = ProbeView()


def mount_statuses(spec: Container) -> list[dict[str, Any]]:
    """status.volumeMounts (RecursiveReadOnlyMounts, on since 1.33): each of the spec's mounts; a
    read-only one says whether it is recursively read-only (only when asked as Enabled here:
    IfPossible resolves to Disabled, as for a runtime handler that does not announce support)."""
    out: list[dict[str, Any]] = []
    for mount in spec.volume_mounts:
        item: dict[str, Any] = {"name": mount.name, "mountPath": mount.mount_path}
        if mount.read_only:
            item["readOnly"] = True
            item["recursiveReadOnly"] = "Enabled" if mount.recursive_read_only == "Enabled" else "Disabled"
        out.append(item)
    return out


def container_status(
    spec: Container, view: PodView, waiting: tuple[str, str] | None, scheme: str = CONTAINER_ID_SCHEME,
    probes: ProbeView = _NO_PROBES,
) -> ContainerStatus:
    latest, previous = view.latest(spec.name), view.previous(spec.name)
    status = ContainerStatus(name=spec.name, image=spec.image, image_id="", ready=False, restart_count=0,
                             volume_mounts=mount_statuses(spec))
    if latest is not None:
        status.image_id = latest.image_ref  # the runtime's image reference ("" for the process runtime)
        # InPlacePodVerticalScaling (on since 1.33): the allocated resources, i.e. the spec's here
        # (no resize is ever applied), reported once the runtime has the container.
        status.resources = spec.resources.model_copy(deep=True)
        status.allocated_resources = dict(spec.resources.requests)
    if latest is None:
        reason, message = waiting or ("ContainerCreating", "")
        status.state = ContainerState(waiting=ContainerStateWaiting(reason=reason, message=message))
        status.started = False
        return status
    status.restart_count = latest.attempt
    status.container_id = f"{scheme}://{latest.id}"
    if latest.state is rt.ContainerState.RUNNING:
        status.state = ContainerState(running=ContainerStateRunning(started_at=_time(latest.started_at)))
        checks = probes.probes
        status.started = checks is None or checks.started(probes.pod_uid, spec.name, latest.id)
        status.ready = status.started and (checks is None or checks.ready(probes.pod_uid, spec.name, latest.id))
    elif latest.state is rt.ContainerState.EXITED and waiting is None:
        status.state = ContainerState(terminated=_terminated(latest, scheme, probes))
        status.started = False
    else:
        reason, message = waiting or ("ContainerCreating", "")
        status.state = ContainerState(waiting=ContainerStateWaiting(reason=reason, message=message))
        status.started = False
        if latest.state is rt.ContainerState.EXITED:  # a restart is pending: the exit is lastState
            status.last_state = ContainerState(terminated=_terminated(latest, scheme, probes))
            return status
    if previous is not None and previous.state is rt.ContainerState.EXITED:
        status.last_state = ContainerState(terminated=_terminated(previous, scheme, probes))
    return status


def phase(pod: Pod, init: Sequence[ContainerStatus], app: Sequence[ContainerStatus], terminal: bool = False) -> str:
    """getPhase: Pending, Running, Succeeded or Failed. `terminal`: the pod is being deleted and
    its containers will not be restarted whatever the policy (an API pod only: a static pod
    keeps the policy's phase, as the kubelet's TODO #116484 leaves it)."""
    policy = pod.spec.restart_policy or "Always"
    init_failed = any(_failed(s) for s in init)
    if policy == "Never" and init_failed:
        return "Failed"
    if not all(_succeeded(s) for s in init):
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for s in app:
        if s.state.running is not None:
            running += 1
        elif s.state.terminated is not None or (s.state.waiting is not None and s.last_state.terminated is not None):
            stopped += 1  # a container waiting to restart after an exit counts as stopped...
            succeeded += _succeeded(s)  # ...but only a current exit 0 counts as succeeded

        else:
            waiting += 1
    if waiting:
        return "Pending"
    if running:
        return "Running"
    if stopped:
        if terminal and not is_static(pod):
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"  # OnFailure: a restart is coming
    return "Pending"


def _succeeded(s: ContainerStatus) -> bool:
    return s.state.terminated is not None and s.state.terminated.exit_code == 0


def _failed(s: ContainerStatus) -> bool:
    return s.state.terminated is not None and s.state.terminated.exit_code != 0


def _condition(kind: str, ok: bool, reason: str = "", message: str = "", ok_reason: str = "") -> PodCondition:
    return PodCondition(type=kind, status="True" if ok else "False", reason=ok_reason if ok else reason,
                        message="" if ok else message)


def conditions(
    view: PodView, init: Sequence[ContainerStatus], app: Sequence[ContainerStatus], pod_phase: str
) -> list[PodCondition]:
    initialized = all(_succeeded(s) for s in init)
    not_ready = [s.name for s in app if not s.ready]
    terminal = pod_phase in TERMINAL_PHASES
    ready_reason = {"Succeeded": "PodCompleted", "Failed": "PodFailed"}.get(pod_phase, "ContainersNotReady")
    ready_message = "" if terminal else f"containers with unready status: [{' '.join(not_ready)}]"
    init_message = f"containers with incomplete status: [{' '.join(s.name for s in init if not _succeeded(s))}]"
    return [
        _condition("PodReadyToStartContainers", view.sandbox_ready and not terminal),
        _condition("Initialized", initialized, "ContainersNotInitialized", init_message,
                   ok_reason="PodCompleted" if init and pod_phase == "Succeeded" else ""),
        _condition("Ready", not not_ready and not terminal, ready_reason, ready_message),
        _condition("ContainersReady", not not_ready and not terminal, ready_reason, ready_message),
        _condition("PodScheduled", True),
    ]


def _carry_transitions(new: list[PodCondition], old: Sequence[PodCondition], now: dt.datetime) -> None:
    before = {c.type: c for c in old}
    for cond in new:
        prior = before.get(cond.type)
        same = prior is not None and prior.status == cond.status
        cond.last_transition_time = prior.last_transition_time if same and prior is not None else now


def pod_status(
    pod: Pod,
    view: PodView,
    waiting: Mapping[str, tuple[str, str]],
    node_ip: str,
    start_time: dt.datetime | None,
    previous: PodStatus | None,
    now: dt.datetime,
    probes: ProbeView = _NO_PROBES,
    scheme: str = CONTAINER_ID_SCHEME,
    terminal: bool = False,
) -> PodStatus:
    """`scheme` prefixes container ids (`containerd://...`): the runtime's name, as the kubelet's.
    `terminal`: the final status of a pod whose containers were stopped for good (deletion)."""
    init = [container_status(c, view, waiting.get(c.name), scheme) for c in pod.spec.init_containers]
    for status in init:  # as the kubelet's prober marks it: a completed init container is ready
        status.ready = _succeeded(status)
    app = [container_status(c, view, waiting.get(c.name), scheme, probes) for c in pod.spec.containers]
    pod_phase = phase(pod, init, app, terminal)
    if previous is not None and previous.phase in TERMINAL_PHASES:
        pod_phase = previous.phase  # a terminal phase never changes (generateAPIPodStatus)
    conds = conditions(view, init, app, pod_phase)
    generation = pod.metadata.generation  # PodObservedGenerationTracking (beta, on in 1.34)
    for cond in conds:
        cond.observed_generation = generation
    _carry_transitions(conds, previous.conditions if previous is not None else (), now.replace(microsecond=0))
    pod_ips = list(view.pod_ips) or [node_ip]  # a pod on the node's network has the node's address
    out = PodStatus(
        observed_generation=generation,
        phase=pod_phase, conditions=conds, host_ip=node_ip, host_ips=[HostIP(ip=node_ip)],
        pod_ip=pod_ips[0], pod_ips=[PodIP(ip=ip) for ip in pod_ips],
        start_time=previous.start_time if previous is not None and previous.start_time else start_time,
        init_container_statuses=init, container_statuses=app, qos_class=qos_class(pod),
    )
    return terminated(pod, out) if terminal else out


UNKNOWN_STATE = ContainerStateTerminated(
    exit_code=137, reason="ContainerStatusUnknown",
    message="The container could not be located when the pod was terminated")


def terminated(pod: Pod, status: PodStatus) -> PodStatus:
    """The status manager's TerminatePod: once the pod has initialized, a container without a
    terminated state gets the unknown one (exit 137), as does every init container before the
    last that started; an API pod whose phase is not terminal becomes Failed."""
    initialized = not pod.spec.init_containers or any(
        s.state.waiting is None or s.last_state.terminated is not None for s in status.container_statuses)
    if initialized:
        for s in status.container_statuses:
            if s.state.terminated is None:
                s.state = ContainerState(terminated=UNKNOWN_STATE.model_copy())
    started = [i for i, s in enumerate(status.init_container_statuses)
               if s.state.waiting is None or s.last_state.terminated is not None]
    for s in status.init_container_statuses[:started[-1] if started else 0]:
        if s.state.terminated is None:
            s.state = ContainerState(terminated=UNKNOWN_STATE.model_copy())
    if not is_static(pod) and status.phase not in TERMINAL_PHASES:
        status.phase = "Failed"
    return status


REJECTED_PREFIX = "Pod was rejected: "


def rejected_status(reason: str, message: str, now: dt.datetime, qos: str = "") -> PodStatus:
    """The status of a pod refused at admission (e.g. OutOfpods): Failed, never started (the
    kubelet's rejectPod prefixes the message)."""
    return PodStatus(phase="Failed", reason=reason, message=f"{REJECTED_PREFIX}{message}",
                     start_time=now.replace(microsecond=0), qos_class=qos)


EVICTED = "Evicted"


def evicted_status(final: PodStatus | None, message: str, now: dt.datetime, generation: int = 0) -> PodStatus:
    """An evicted pod's status (the eviction manager's status function on its final status):
    Failed, reason Evicted, the eviction's message, and the DisruptionTarget condition
    (TerminationByKubelet) the kubelet adds."""
    status = final.model_copy(deep=True) if final is not None else PodStatus()
    status.phase, status.reason, status.message = "Failed", EVICTED, message
    condition = PodCondition(type="DisruptionTarget", status="True", reason="TerminationByKubelet", message=message,
                             observed_generation=generation, last_transition_time=now.replace(microsecond=0))
    status.conditions = [c for c in status.conditions if c.type != condition.type] + [condition]
    return status
