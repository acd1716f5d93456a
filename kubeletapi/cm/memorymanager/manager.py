"""The memory manager (pkg/kubelet/cm/memorymanager/memory_manager.go): policy None or Static,
its state in <root-dir>/memory_manager_state, admission of Guaranteed pods, NUMA affinity.

- Construction checks --reserved-memory as NewManager does (every NUMA node named exists, each
  memory type's sum equals kube-reserved + system-reserved + the hard eviction threshold), then
  reads the state file: a file that cannot be read back, of the other policy, or whose machine
  state disagrees with its assignments stops the start with the kubelet's error and the remedy.
- allocate(pod, active): the topology manager's admission with its default policy (none): every
  init and app container in turn, the first error refuses the pod. Assignments of pods no
  longer active are dropped first (removeStaleState), once every pod source has reported.
- The state is written after every change, as the kubelet's stateCheckpoint does.
- release(active) drops what pods that are gone held, so their memory is free at once (the
  kubelet waits for the next admission; the file ends the same).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Protocol

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.api.quantity import BINARY_SI, DECIMAL_SI, Quantity, QuantityError, coerce_quantity
from kubeletapi.atomicfile import write_atomic
from kubeletapi.cm.memorymanager.policy import PolicyError, StaticPolicy, is_restartable_init
from kubeletapi.cm.memorymanager.state import (
    MEMORY,
    STATE_FILE,
    Assignments,
    Checkpoint,
    CheckpointError,
    NUMANodeMap,
    decode,
    encode,
)
from kubeletapi.cm.memorymanager.topology import NUMANode
from kubeletapi.cm.qos import QOSClass, qos_class
from kubeletapi.errors import ConfigError, StartupError

log = logging.getLogger(__name__)

POLICY_NONE = "None"
POLICY_STATIC = "Static"
UNEXPECTED = "UnexpectedAdmissionError"

Reservations = Sequence[tuple[int, Mapping[str, object]]]  # (NUMA node, memory type -> quantity)


def _quantity(value: object) -> Quantity:
    try:
        return coerce_quantity(value)
    except QuantityError as exc:
        raise ConfigError(f"reservedMemory: {exc}") from None


def _format_sum(values: Iterable[Quantity]) -> str:
    """resource.Quantity Add from a zero DecimalSI: the first non-zero addend's format."""
    total, fmt = Decimal(0), DECIMAL_SI
    for q in values:
        if total == 0 and q.amount != 0:
            fmt = q.format
        total += q.amount
    return Quantity(total, fmt).canonical()


def node_allocatable_reservation(kube_reserved: Mapping[str, str], system_reserved: Mapping[str, str],
                                 eviction_hard: Mapping[str, str], capacity: Mapping[str, int]) -> dict[str, str]:
    """GetNodeAllocatableReservation for the memory types (memory, hugepages-*) the node has:
    the sum of system-reserved, kube-reserved and the hard memory.available threshold."""
    out: dict[str, str] = {}
    for kind in capacity:
        parts = [Quantity.parse(src[kind]) for src in (system_reserved, kube_reserved) if kind in src]
        threshold = eviction_hard.get("memory.available") if kind == MEMORY else None
        if threshold:
            if threshold.endswith("%"):
                amount = int(capacity[kind] * float(threshold[:-1]) / 100)
                parts.append(Quantity.from_int(amount, BINARY_SI))
            else:
                parts.append(Quantity.parse(threshold))
        if any(not p.is_zero() for p in parts):
            out[kind] = _format_sum([Quantity.from_int(0), *parts])
    return out


def system_reserved_memory(topology: Sequence[NUMANode], reservation: Mapping[str, str],
                           reserved: Reservations) -> dict[int, dict[str, int]]:
    """getSystemReservedMemory: validateReservedMemory, then bytes per node and type."""
    nodes = {n.id for n in topology}
    totals: dict[str, list[Quantity]] = {}
    for node, limits in reserved:
        if node not in nodes:
            raise StartupError(f"Failed to initialize memory manager: the reserved memory configuration references "
                               f"a NUMA node {node} that does not exist on this machine")
        for kind, value in limits.items():
            totals.setdefault(kind, []).append(_quantity(value))
    for kind in sorted(set(totals) | {k for k in reservation if k == MEMORY or k.startswith("hugepages-")}):
        have = _format_sum([Quantity.from_int(0), *totals.get(kind, [])])
        want = reservation.get(kind, "0")
        if Quantity.parse(have).amount != Quantity.parse(want).amount:
            raise StartupError(f'Failed to initialize memory manager: the total amount "{have}" of type "{kind}" is '
                               f'not equal to the value "{want}" determined by Node Allocatable feature')
    out: dict[int, dict[str, int]] = {n.id: {} for n in topology}
    for node, limits in reserved:
        for kind, value in limits.items():
            out[node][kind] = _quantity(value).value()
    return out


class PinningObserver(Protocol):
    """Where Allocate is counted (kubelet_memory_manager_pinning_{requests,errors}_total)."""

    def pinning(self, failed: bool) -> None: ...


class MemoryManager:
    """The memory manager of one node; `policy` None or Static (validated by the config)."""

    def __init__(self, policy: str, root_dir: Path, topology: Sequence[NUMANode] = (),
                 reservation: Mapping[str, str] | None = None, reserved: Reservations = (),
                 sources_ready: Callable[[], bool] = lambda: True) -> None:
        self.path = root_dir / STATE_FILE
        self.policy_name = policy
        self._static: StaticPolicy | None = None
        self._sources_ready = sources_ready
        self._observer: PinningObserver | None = None
        if policy == POLICY_STATIC:
            system = system_reserved_memory(topology, reservation or {}, reserved)
            try:
                self._static = StaticPolicy(topology, system)
            except PolicyError as exc:
                raise StartupError(f"Failed to initialize memory manager: {exc}") from None
        self._state = self._restore()

    # --- the state file ---------------------------------------------------------------------------
    def _restore(self) -> Checkpoint:
        try:
            blob = self.path.read_bytes()
        except FileNotFoundError:
            blob = None
        except OSError as exc:
            raise self._restore_error(exc.strerror or str(exc)) from None
        state = Checkpoint(self.policy_name)
        if blob is not None:
            try:
                state = decode(blob)
            except CheckpointError as exc:
                raise self._restore_error(str(exc)) from None
            if state.policy_name != self.policy_name:
                raise self._restore_error(f'[memorymanager] configured policy "{self.policy_name}" differs from '
                                          f'state checkpoint policy "{state.policy_name}"')
            state.entries = state.entries if state.entries is not None else {}
            state.machine_state = state.machine_state if state.machine_state is not None else {}
        else:
            self._store(state)
        if self._static is not None:
            try:
                state.machine_state = self._static.validate(state.machine_state or {}, state.entries or {})
            except PolicyError as exc:
                raise StartupError(f"start memory manager error: {exc} (Invalid state, please drain node and remove "
                                   f"policy state file {self.path})") from None
            self._store(state)
        log.info("Starting memorymanager policy=%s state=%s", self.policy_name, self.path)
        return state

    def _restore_error(self, reason: str) -> StartupError:
        return StartupError(f"start memory manager error: could not restore state from checkpoint: {reason}, please "
                            f'drain this node and delete the memory manager checkpoint file "{self.path}" before '
                            "restarting Kubelet")

    def _store(self, state: Checkpoint) -> None:
        try:
            write_atomic(self.path, encode(state))
        except OSError as exc:
            log.error("Could not save checkpoint %s: %s", self.path, exc)

    def observe(self, observer: PinningObserver) -> None:
        self._observer = observer

    # --- admission and lifecycle ------------------------------------------------------------------
    def allocate(self, pod: Pod, active: Sequence[Pod]) -> tuple[str, str] | None:
        """Admit `pod` (None) or refuse it: (reason, message) as admission.GetPodAdmitResult."""
        if self._static is None:
            return None
        if self._sources_ready():
            self._drop_stale({p.metadata.uid: p for p in (*active, pod)})
        changed = False
        guaranteed = qos_class(pod) == QOSClass.GUARANTEED  # what Allocate counts as a pinning request
        try:
            for container in (*pod.spec.init_containers, *pod.spec.containers):
                try:
                    changed |= self._static.allocate(self._machine, self._entries, pod, container)
                except PolicyError:
                    self._count(guaranteed, failed=True)
                    raise
                self._count(guaranteed, failed=False)
        except PolicyError as exc:
            log.error("Allocate error pod=%s/%s: %s", pod.metadata.namespace, pod.metadata.name, exc)
            return UNEXPECTED, f"Allocate failed due to {exc}, which is unexpected"
        finally:
            if changed:
                self._store(self._state)
        return None

    def _count(self, guaranteed: bool, failed: bool) -> None:
        if guaranteed and self._observer is not None:
            self._observer.pinning(failed)

    def release(self, active: Mapping[str, Pod]) -> None:
        """Give back the memory of pods no longer active (removed and stopped)."""
        if self._static is not None and self._sources_ready():
            self._drop_stale(active)

    def container_started(self, pod: Pod, container: Container) -> None:
        """AddContainer: the init containers before `container` are done with their memory."""
        if self._static is None:
            return
        changed = False
        for init in pod.spec.init_containers:
            if init.name == container.name:
                break
            if not is_restartable_init(init):
                changed |= self._static.remove(self._machine, self._entries, pod.metadata.uid, init.name)
        if changed:
            self._store(self._state)

    def numa_nodes(self, uid: str, container: str) -> list[int]:
        """GetMemoryNUMANodes: the nodes of the container's blocks, sorted ([]: no affinity)."""
        blocks = (self._entries.get(uid) or {}).get(container) or ()
        return sorted({n for b in blocks for n in b.numa_affinity or ()})

    def cpuset_mems(self, uid: str, container: str) -> str:
        """The container's cpuset.mems (CRI LinuxContainerResources.cpuset_mems): "0,1" or ""."""
        return ",".join(str(n) for n in self.numa_nodes(uid, container))

    def state(self) -> Checkpoint:
        return self._state

    @property
    def _machine(self) -> NUMANodeMap:
        assert self._state.machine_state is not None  # _restore replaces nil with empty
        return self._state.machine_state

    @property
    def _entries(self) -> Assignments:
        assert self._state.entries is not None
        return self._state.entries

    def _drop_stale(self, active: Mapping[str, Pod]) -> None:
        assert self._static is not None
        names = {uid: {c.name for c in (*p.spec.init_containers, *p.spec.containers)} for uid, p in active.items()}
        changed = False
        for uid, containers in list(self._entries.items()):
            for name in list(containers or {}):
                if name not in names.get(uid, ()):
                    log.info("RemoveStaleState removing state podUID=%s containerName=%s", uid, name)
                    changed |= self._static.remove(self._machine, self._entries, uid, name)
        if changed:
            self._store(self._state)
