"""The Static policy's arithmetic (pkg/kubelet/cm/memorymanager/policy_static.go), restated.

Guaranteed pods get their containers' memory and huge pages from the smallest group of NUMA
nodes that can hold them; a node used in a group of several serves only that group. With the
topology manager's default policy (none) no hint comes in: Allocate takes the policy's own
default hint (the narrowest preferred group with enough free memory, lower node ids first).
The errors keep the kubelet's `[memorymanager]` words: they reach the refused pod's message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from kubeletapi.api.core_v1 import Container, Pod
from kubeletapi.cm.memorymanager.state import MEMORY, Assignments, Block, MemoryTable, NUMANodeMap, NUMANodeState
from kubeletapi.cm.memorymanager.topology import NUMANode
from kubeletapi.cm.qos import QOSClass, qos_class

log = logging.getLogger(__name__)

SystemReserved = Mapping[int, Mapping[str, int]]  # NUMA node -> memory type -> bytes


class PolicyError(Exception):
    """Allocate or the state's validation failed; the message is the kubelet's."""


@dataclass(frozen=True)
class Hint:
    nodes: tuple[int, ...]  # sorted
    preferred: bool

    @property
    def mask(self) -> int:
        return sum(1 << n for n in self.nodes)

    def narrower_than(self, other: Hint) -> bool:
        if len(self.nodes) == len(other.nodes):
            return self.mask < other.mask
        return len(self.nodes) < len(other.nodes)


def is_restartable_init(container: Container) -> bool:
    return container.restart_policy == "Always"


def requested(container: Container) -> dict[str, int]:
    """getRequestedResources: the container's memory and huge pages requests, in bytes."""
    return {name: q.value() for name, q in container.resources.requests.items()
            if name == MEMORY or name.startswith("hugepages-")}


def default_machine_state(topology: Sequence[NUMANode], reserved: SystemReserved) -> NUMANodeMap:
    """getDefaultMachineState: every node's tables with nothing assigned."""
    out: NUMANodeMap = {}
    for node in topology:
        tables: dict[str, MemoryTable | None] = {}
        in_hugepages = 0
        for pages in node.hugepages:
            kept = reserved.get(node.id, {}).get(pages.resource, 0)
            tables[pages.resource] = MemoryTable(pages.total, kept, pages.total - kept, 0, pages.total - kept)
            in_hugepages += pages.total
        kept = reserved.get(node.id, {}).get(MEMORY, 0)
        allocatable = node.memory - kept - in_hugepages
        tables[MEMORY] = MemoryTable(node.memory, kept, allocatable, 0, allocatable)
        out[node.id] = NUMANodeState(0, tables, [node.id])
    return out


def _reserve(machine: NUMANodeMap, nodes: list[int], kind: str, size: int, mark_cells: bool) -> None:
    """Take `size` bytes of `kind` from the nodes in order (updateMachineState)."""
    for node_id in nodes:
        state = _node(machine, node_id)
        state.number_of_assignments += 1
        if mark_cells:
            state.cells = nodes
        if size == 0:
            continue
        table = _table(state, kind)
        if table.free <= 0:
            continue
        taken = min(table.free, size)
        table.reserved += taken
        table.free -= taken
        size -= taken


def _node(machine: NUMANodeMap, node_id: int) -> NUMANodeState:
    state = machine.get(node_id)
    if state is None:
        raise PolicyError("[memorymanager] the memory assignment uses the NUMA that does not exist")
    return state


def _table(state: NUMANodeState, kind: str) -> MemoryTable:
    table = (state.memory_map or {}).get(kind)
    if table is None:
        raise PolicyError("[memorymanager] the memory assignment uses memory resource that does not exist")
    return table


def expected_machine_state(topology: Sequence[NUMANode], reserved: SystemReserved,
                           entries: Assignments) -> NUMANodeMap:
    """The machine state the assignments imply (validateState's replay)."""
    machine = default_machine_state(topology, reserved)
    for pod, containers in (entries or {}).items():
        for name, blocks in (containers or {}).items():
            for block in blocks or ():
                nodes = list(block.numa_affinity or ())
                for node_id in nodes:
                    if node_id not in machine:
                        raise PolicyError(f"[memorymanager] (pod: {pod}, container: {name}) the memory assignment "
                                          "uses the NUMA that does not exist")
                    if block.type not in (machine[node_id].memory_map or {}):  # type: ignore[union-attr]
                        raise PolicyError(f"[memorymanager] (pod: {pod}, container: {name}) the memory assignment "
                                          "uses memory resource that does not exist")
                _reserve(machine, nodes, block.type, block.size, mark_cells=True)
    return machine


def machine_states_equal(ms1: NUMANodeMap, ms2: NUMANodeMap) -> bool:
    """areMachineStatesEqual: counts, groups and totals (free and reserved summed over a group)."""
    if len(ms1) != len(ms2):
        return False
    for node_id, s1 in ms1.items():
        s2 = ms2.get(node_id)
        if s1 is None or s2 is None:
            return False
        if s1.number_of_assignments != s2.number_of_assignments or sorted(s1.cells or []) != sorted(s2.cells or []):
            return False
        map1, map2 = s1.memory_map or {}, s2.memory_map or {}
        if len(map1) != len(map2):
            return False
        for kind, t1 in map1.items():
            t2 = map2.get(kind)
            if t1 is None or t2 is None:
                return False
            if (t1.total, t1.system_reserved, t1.allocatable) != (t2.total, t2.system_reserved, t2.allocatable):
                return False
            if _group_sums(ms1, s1.cells, kind) != _group_sums(ms2, s1.cells, kind):
                return False
    return True


def _group_sums(machine: NUMANodeMap, cells: list[int] | None, kind: str) -> tuple[int, int] | None:
    free = reserved = 0
    for node_id in cells or ():
        state = machine.get(node_id)
        table = (state.memory_map or {}).get(kind) if state is not None else None
        if table is None:
            return None
        free += table.free
        reserved += table.reserved
    return free, reserved


class StaticPolicy:
    """Allocate / RemoveContainer over a machine state and the assignments (mutated in place)."""

    NAME = "Static"

    def __init__(self, topology: Sequence[NUMANode], reserved: SystemReserved) -> None:
        total = sum(r.get(MEMORY, 0) for r in reserved.values())
        if total <= 0:
            raise PolicyError("[memorymanager] you should specify the system reserved memory")
        self.topology = list(topology)
        self.reserved = reserved
        # pod UID -> affinity mask string -> memory type -> bytes init containers left for the next
        self._reusable: dict[str, dict[int, dict[str, int]]] = {}

    def validate(self, machine: NUMANodeMap, entries: Assignments) -> NUMANodeMap:
        """validateState: the machine state to use (the default one on a first start)."""
        if not machine:
            if entries:
                raise PolicyError("[memorymanager] machine state can not be empty when it has memory assignments")
            return default_machine_state(self.topology, self.reserved)
        expected = expected_machine_state(self.topology, self.reserved, entries)
        if not machine_states_equal(machine, expected):
            raise PolicyError("[memorymanager] the expected machine state is different from the real one")
        return machine

    def allocate(self, machine: NUMANodeMap, entries: Assignments, pod: Pod, container: Container) -> bool:
        """Assign the container's memory; False when nothing changed (not Guaranteed, or known)."""
        if qos_class(pod) != QOSClass.GUARANTEED:
            return False
        uid = pod.metadata.uid
        known = (entries.get(uid) or {}).get(container.name) if entries is not None else None
        if known is not None:
            self._update_reusable(pod, container, known)
            return False
        wanted = requested(container)
        best = self._default_hint(machine, pod, wanted)
        if self._violates_groups(machine, best.nodes):
            raise PolicyError("[memorymanager] preferred hint violates NUMA node allocation")
        nodes = list(best.nodes)
        blocks = []
        for kind, size in wanted.items():
            blocks.append(Block(nodes, kind, size))
            reusable = self._reusable.get(uid, {}).get(best.mask, {}).get(kind, 0)
            _reserve(machine, nodes, kind, 0 if reusable >= size else size - reusable, mark_cells=True)
        self._update_reusable(pod, container, blocks)
        entries.setdefault(uid, {})[container.name] = blocks  # type: ignore[index]
        self._shrink_init_blocks(entries, pod, container, blocks)
        return True

    def remove(self, machine: NUMANodeMap, entries: Assignments, uid: str, name: str) -> bool:
        """RemoveContainer: give the container's blocks back; False when it had none."""
        containers = (entries or {}).get(uid)
        blocks = (containers or {}).get(name)
        if blocks is None or containers is None or entries is None:
            return False
        del containers[name]
        if not containers:
            del entries[uid]
        for block in blocks:
            size = block.size
            for node_id in block.numa_affinity or ():
                state = _node(machine, node_id)
                state.number_of_assignments -= 1
                if state.number_of_assignments == 0:
                    state.cells = [node_id]
                if size == 0:
                    continue
                table = _table(state, block.type)
                given = min(table.reserved, size)
                table.free += given
                table.reserved -= given
                size -= given
        return True

    def hints(self, machine: NUMANodeMap, pod: Pod, wanted: Mapping[str, int]) -> list[Hint]:
        """calculateHints for memory: every group of nodes that can hold the request."""
        nodes = sorted(machine)
        found: list[tuple[int, ...]] = []
        narrowest = len(nodes)
        for group in _groups(nodes):
            allocatable = {k: sum(_table(_node(machine, n), k).allocatable for n in group) for k in wanted}
            if any(allocatable[k] < size for k, size in wanted.items()):
                continue
            narrowest = min(narrowest, len(group))
            if not self._group_usable(machine, group):
                continue
            mask = sum(1 << n for n in group)
            free = {k: sum(_table(_node(machine, n), k).free for n in group) for k in wanted}
            reusable = self._reusable.get(pod.metadata.uid, {}).get(mask, {})
            if any(free[k] + reusable.get(k, 0) < size for k, size in wanted.items()):
                continue
            found.append(group)
        return [Hint(group, len(group) == narrowest) for group in found]

    def _group_usable(self, machine: NUMANodeMap, group: tuple[int, ...]) -> bool:
        states = [_node(machine, n) for n in group]
        if len(group) == 1:
            return len(states[0].cells or []) <= 1
        return not any(s.number_of_assignments > 0 and (len(s.cells or []) == 1 or sorted(s.cells or []) != list(group))
                       for s in states)

    def _default_hint(self, machine: NUMANodeMap, pod: Pod, wanted: Mapping[str, int]) -> Hint:
        found = self.hints(machine, pod, wanted) if wanted else []
        if not found:
            raise PolicyError("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough "
                              "memory is available")
        best = found[0]
        for hint in found[1:]:
            if (hint.preferred and not best.preferred) or (
                    hint.preferred == best.preferred and hint.narrower_than(best)):
                best = hint
        return best

    def _violates_groups(self, machine: NUMANodeMap, nodes: tuple[int, ...]) -> bool:
        if len(nodes) == 1:
            return False
        return any(_node(machine, n).number_of_assignments > 0 and
                   (len(_node(machine, n).cells or []) == 1 or sorted(_node(machine, n).cells or []) != list(nodes))
                   for n in nodes)

    def _update_reusable(self, pod: Pod, container: Container, blocks: Sequence[Block]) -> None:
        uid = pod.metadata.uid
        for other in [u for u in self._reusable if u != uid]:
            del self._reusable[other]
        if _is_regular_init(pod, container):
            masks = self._reusable.setdefault(uid, {})
            for block in blocks:
                kinds = masks.setdefault(sum(1 << n for n in block.numa_affinity or ()), {})
                kinds[block.type] = max(kinds.get(block.type, 0), block.size)
            return
        for block in blocks:
            kinds = self._reusable.get(uid, {}).get(sum(1 << n for n in block.numa_affinity or ()), {})
            if kinds.get(block.type, 0):
                kinds[block.type] = max(0, kinds[block.type] - block.size)

    @staticmethod
    def _shrink_init_blocks(entries: Assignments, pod: Pod, container: Container, blocks: Sequence[Block]) -> None:
        """updateInitContainersMemoryBlocks: memory an earlier init container held is reused."""
        containers = (entries or {}).get(pod.metadata.uid) or {}
        for block in blocks:
            size = block.size
            for init in pod.spec.init_containers:
                if init.name == container.name or size == 0:
                    break
                if is_restartable_init(init):
                    continue
                for held in containers.get(init.name) or ():
                    if held.size == 0 or held.type != block.type or \
                            sorted(held.numa_affinity or []) != sorted(block.numa_affinity or []):
                        continue
                    taken = min(held.size, size)
                    held.size -= taken
                    size -= taken


def _is_regular_init(pod: Pod, container: Container) -> bool:
    for init in pod.spec.init_containers:
        if init.name == container.name:
            return not is_restartable_init(init)
    return False


def _groups(nodes: list[int]) -> Iterator[tuple[int, ...]]:
    """bitmask.IterateBitMasks: every non-empty group, smallest first, in lexicographic order."""
    for size in range(1, len(nodes) + 1):
        yield from combinations(nodes, size)
