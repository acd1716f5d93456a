"""The memory manager: the kubelet's checkpoint format, NUMA topologies from fixture trees of
/sys/devices/system/node, the Static policy's placement, and the start-up errors.

The fixtures/memorymanager/*.json files are what a Go program with the kubelet's state types and
go-spew (apimachinery dump.ForHash's settings) wrote for these states: the bytes and checksums
a 1.34 kubelet writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.api.quantity import coerce_quantity
from kubeletapi.cm.memorymanager.manager import MemoryManager, node_allocatable_reservation
from kubeletapi.cm.memorymanager.state import CheckpointError, decode, encode
from kubeletapi.cm.memorymanager.topology import HugePages, NUMANode, binary_quantity, read_topology
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import StartupError
from kubeletapi.kubelet.memory import MemoryAdmission, memory_manager

FIXTURES = Path(__file__).parent / "fixtures" / "memorymanager"
GI = 1 << 30
MI = 1 << 20
REFUSED = ("UnexpectedAdmissionError", "Allocate failed due to [memorymanager] failed to get the default NUMA "
           "affinity, no NUMA nodes with enough memory is available, which is unexpected")


# --- the checkpoint --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_files_a_kubelet_wrote_read_back_and_rewrite_byte_for_byte(name: str) -> None:
    blob = (FIXTURES / name).read_bytes()
    assert encode(decode(blob)) == blob


def test_the_kubelets_own_test_checkpoint() -> None:
    # state_checkpoint_test.go "Restore valid checkpoint", as written there (indented, spaced)
    blob = b"""{
        "policyName":"static",
        "machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,
        "allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
        "entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
        "checksum": 4215593881
    }"""
    state = decode(blob)
    assert state.entries["pod"]["container1"][0].size == 512  # type: ignore[index]
    assert state.machine_state[0].cells == []  # type: ignore[index,union-attr]


@pytest.mark.parametrize(("blob", "error"), [
    pytest.param(b"{", "unexpected end of JSON input", id="truncated"),
    pytest.param(b"", "unexpected end of JSON input", id="empty"),
    pytest.param(b'{"policyName":"Static","machineState":{},"checksum":1}', "checkpoint is corrupted", id="checksum"),
    pytest.param(b'{"policyName":"Static","machineState":{"x":{}},"checksum":1}', "cannot unmarshal", id="node-id"),
    pytest.param(b'{"policyName":"Static","machineState":{"0":{"numberOfAssignments":"1"}},"checksum":1}',
                 "cannot unmarshal string", id="wrong-type"),
])
def test_unreadable_checkpoints(blob: bytes, error: str) -> None:
    with pytest.raises(CheckpointError, match=error):
        decode(blob)


def test_one_changed_byte_is_caught() -> None:
    blob = (FIXTURES / "multinode.json").read_bytes().replace(b'"size":5368709120', b'"size":5368709121')
    with pytest.raises(CheckpointError, match="checkpoint is corrupted"):
        decode(blob)


# --- the topology ----------------------------------------------------------------------------------

def numa_tree(root: Path, nodes: dict[int, tuple[int, dict[int, int]]]) -> Path:
    """A /sys/devices/system/node fixture: node id -> (MemTotal kB, {page size kB: pages})."""
    for node, (kb, pages) in nodes.items():
        directory = root / f"node{node}"
        (directory / "hugepages").mkdir(parents=True)
        (directory / "meminfo").write_text(f"Node {node} MemTotal:       {kb} kB\nNode {node} MemFree: 1 kB\n")
        for size, count in pages.items():
            (directory / "hugepages" / f"hugepages-{size}kB").mkdir()
            (directory / "hugepages" / f"hugepages-{size}kB" / "nr_hugepages").write_text(f"{count}\n")
    (root / "online").write_text("0-1\n")
    return root


def test_topology_from_a_two_node_tree(tmp_path: Path) -> None:
    root = numa_tree(tmp_path / "node", {1: (4 * GI // 1024, {2048: 512}), 0: (8 * GI // 1024, {1048576: 1, 2048: 0})})
    assert read_topology(root) == [
        NUMANode(0, 8 * GI, (HugePages(2048, 0), HugePages(1048576, 1))),
        NUMANode(1, 4 * GI, (HugePages(2048, 512),)),
    ]
    assert [p.resource for p in read_topology(root)[0].hugepages] == ["hugepages-2Mi", "hugepages-1Gi"]


def test_no_numa_tree_is_one_node(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text("MemTotal:        1024 kB\n")
    assert read_topology(tmp_path / "missing", tmp_path / "meminfo") == [NUMANode(0, 1024 * 1024)]


@pytest.mark.parametrize(("value", "text"), [(2 * MI, "2Mi"), (GI, "1Gi"), (64 * 1024, "64Ki"), (1000, "1000")])
def test_hugepage_names(value: int, text: str) -> None:
    assert binary_quantity(value) == text


# --- the Static policy on two and three nodes -------------------------------------------------------

def guaranteed(name: str, memory: str, init: str = "", hugepages: str = "") -> Pod:
    def spec(cname: str, mem: str) -> dict[str, object]:
        amounts = {"cpu": "100m", "memory": mem, **({"hugepages-2Mi": hugepages} if hugepages else {})}
        return {"name": cname, "image": "busybox", "resources": {"requests": amounts, "limits": amounts}}
    body: dict[str, object] = {"containers": [spec("app", memory)]}
    if init:
        body["initContainers"] = [spec("init", init)]
    return Pod.model_validate({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                               "spec": body})


def manager(tmp_path: Path, topology: list[NUMANode], reserved: list[tuple[int, dict[str, object]]],
            reservation: dict[str, str] | None = None) -> MemoryManager:
    total = sum(quantity_bytes(v) for _, limits in reserved for k, v in limits.items() if k == "memory")
    return MemoryManager("Static", tmp_path, topology, reservation or {"memory": str(total)}, reserved)


def quantity_bytes(value: object) -> int:
    return coerce_quantity(value).value()


TWO = [NUMANode(0, 4 * GI), NUMANode(1, 4 * GI)]


def file_state(tmp_path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((tmp_path / "memory_manager_state").read_text())
    return data


def test_single_node_first_then_groups_then_refusal(tmp_path: Path) -> None:
    mm = manager(tmp_path, TWO, [(0, {"memory": "1Gi"})])
    small = guaranteed("small", "2Gi")
    assert mm.allocate(small, []) is None
    assert mm.numa_nodes("uid-small", "app") == [0]
    # 5Gi needs both nodes, but node 0 already serves a single-node pod: refused, as the kubelet does
    big = guaranteed("big", "5Gi")
    assert mm.allocate(big, [small]) == REFUSED
    # once the small pod is gone the pair is free for it
    mm.release({})
    assert mm.allocate(big, []) is None
    assert mm.cpuset_mems("uid-big", "app") == "0,1"
    state = file_state(tmp_path)
    assert state["machineState"]["0"]["cells"] == [0, 1]  # type: ignore[index]
    assert state["machineState"]["0"]["memoryMap"]["memory"]["free"] == 0  # type: ignore[index]
    assert state["machineState"]["1"]["memoryMap"]["memory"]["free"] == 2 * GI  # type: ignore[index]
    # a node of a group serves only that group: a 1Gi pod lands on the pair too
    assert mm.allocate(guaranteed("one", "1Gi"), [big]) is None
    assert mm.cpuset_mems("uid-one", "app") == "0,1"


def test_non_guaranteed_pods_get_nothing(tmp_path: Path) -> None:
    mm = manager(tmp_path, TWO, [(0, {"memory": "1Gi"})])
    burstable = Pod.model_validate({"metadata": {"name": "b", "uid": "uid-b"}, "spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"memory": "64Gi"}}}]}})
    assert mm.allocate(burstable, []) is None
    assert mm.cpuset_mems("uid-b", "c") == ""
    assert "entries" not in file_state(tmp_path)


def test_hugepages_and_init_containers_reuse(tmp_path: Path) -> None:
    topology = [NUMANode(0, 4 * GI, (HugePages(2048, 512),)), NUMANode(1, 4 * GI, (HugePages(2048, 512),))]
    mm = manager(tmp_path, topology, [(0, {"memory": "512Mi"}), (1, {"memory": "512Mi"})])
    pod = guaranteed("hp", "1Gi", init="1Gi", hugepages="512Mi")
    assert mm.allocate(pod, []) is None
    blocks = file_state(tmp_path)["entries"]["uid-hp"]  # type: ignore[index]
    # the app container reuses the init container's memory: what the init container held is the app's now
    assert sorted((b["type"], b["size"]) for b in blocks["init"]) == [("hugepages-2Mi", 0), ("memory", 0)]  # type: ignore[index]
    assert sorted((b["type"], b["size"]) for b in blocks["app"]) == [("hugepages-2Mi", 512 * MI), ("memory", GI)]  # type: ignore[index]
    node0 = file_state(tmp_path)["machineState"]["0"]["memoryMap"]  # type: ignore[index]
    assert node0["memory"]["reserved"] == GI  # type: ignore[index]
    assert node0["hugepages-2Mi"] == {"total": GI, "systemReserved": 0, "allocatable": GI,  # type: ignore[index]
                                      "reserved": 512 * MI, "free": 512 * MI}
    assert node0["memory"]["allocatable"] == 4 * GI - 512 * MI - GI  # type: ignore[index]
    # the app container starts: the init container's blocks are dropped
    mm.container_started(pod, pod.spec.containers[0])
    assert set(file_state(tmp_path)["entries"]["uid-hp"]) == {"app"}  # type: ignore[index,arg-type]


def test_restart_restores_and_validates(tmp_path: Path) -> None:
    topology = [*TWO, NUMANode(2, 2 * GI)]
    mm = manager(tmp_path, topology, [(0, {"memory": "1Gi"})])
    pod = guaranteed("p", "1Gi")
    mm.allocate(pod, [])
    before = (tmp_path / "memory_manager_state").read_bytes()
    again = manager(tmp_path, topology, [(0, {"memory": "1Gi"})])
    assert again.cpuset_mems("uid-p", "app") == "0"
    assert (tmp_path / "memory_manager_state").read_bytes() == before
    assert again.allocate(pod, []) is None  # already assigned: nothing changes
    assert (tmp_path / "memory_manager_state").read_bytes() == before
    # another reservation no longer matches the recorded machine state
    with pytest.raises(StartupError, match=r"the expected machine state is different from the real one.*"
                                           r"remove policy state file"):
        manager(tmp_path, topology, [(0, {"memory": "2Gi"})])


def test_policy_change_and_corrupt_file(tmp_path: Path) -> None:
    MemoryManager("None", tmp_path)
    assert (tmp_path / "memory_manager_state").read_bytes() == (FIXTURES / "none.json").read_bytes()
    with pytest.raises(StartupError) as err:
        manager(tmp_path, TWO, [(0, {"memory": "1Gi"})])
    assert str(err.value) == (
        'start memory manager error: could not restore state from checkpoint: [memorymanager] configured policy '
        '"Static" differs from state checkpoint policy "None", please drain this node and delete the memory manager '
        f'checkpoint file "{tmp_path / "memory_manager_state"}" before restarting Kubelet')
    (tmp_path / "memory_manager_state").write_text('{"policyName":"Static","machineState":{},"checksum":7}')
    with pytest.raises(StartupError, match="could not restore state from checkpoint: checkpoint is corrupted, "
                                           "please drain this node and delete"):
        manager(tmp_path, TWO, [(0, {"memory": "1Gi"})])


@pytest.mark.parametrize(("reserved", "reservation", "error"), [
    pytest.param([(0, {"memory": "1Gi"})], {"memory": "100Mi"},
                 'the total amount "1Gi" of type "memory" is not equal to the value "100Mi" determined by Node '
                 'Allocatable feature', id="sum"),
    pytest.param([], {"memory": "100Mi"},
                 'the total amount "0" of type "memory" is not equal to the value "100Mi"', id="none-given"),
    pytest.param([(3, {"memory": "100Mi"})], {"memory": "100Mi"},
                 "references a NUMA node 3 that does not exist on this machine", id="no-such-node"),
    pytest.param([(0, {"hugepages-2Mi": "2Mi"})], {"hugepages-2Mi": "2Mi"},
                 r"\[memorymanager\] you should specify the system reserved memory", id="no-memory"),
])
def test_reservation_errors(tmp_path: Path, reserved: list[tuple[int, dict[str, object]]],
                            reservation: dict[str, str], error: str) -> None:
    with pytest.raises(StartupError, match=error):
        MemoryManager("Static", tmp_path, TWO, reservation, reserved)
    assert not (tmp_path / "memory_manager_state").exists()


def test_node_allocatable_reservation() -> None:
    capacity = {"memory": 8 * GI, "hugepages-2Mi": 0}
    assert node_allocatable_reservation({"memory": "1Gi", "cpu": "1"}, {"memory": "500Mi"},
                                        {"memory.available": "100Mi"}, capacity) == {"memory": "1624Mi"}
    assert node_allocatable_reservation({}, {}, {"memory.available": "10%"}, capacity) == {"memory": str(8 * GI // 10)}
    assert node_allocatable_reservation({}, {}, {}, capacity) == {}


# --- the wiring: configuration and a fixture tree to a manager --------------------------------------

def test_from_configuration_and_a_two_node_tree(tmp_path: Path) -> None:
    tree = numa_tree(tmp_path / "node", {0: (4 * GI // 1024, {2048: 64}), 1: (4 * GI // 1024, {2048: 64})})
    cfg = KubeletConfiguration.model_validate({
        "memoryManagerPolicy": "Static", "kubeReserved": {"memory": "412Mi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "256Mi"}},
                           {"numaNode": 1, "limits": {"memory": "256Mi"}}]})
    opts = NodeOptions(root_dir=tmp_path / "root", numa_node_root=tree)
    mm = memory_manager(cfg, opts, 8 * GI, lambda: True)  # 412Mi + evictionHard's 100Mi = 512Mi
    state = mm.state().machine_state
    assert state is not None
    assert state[1].memory_map["hugepages-2Mi"].allocatable == 128 * MI  # type: ignore[union-attr,index]
    assert state[0].memory_map["memory"].allocatable == 4 * GI - 256 * MI - 128 * MI  # type: ignore[union-attr,index]
    admission = MemoryAdmission(mm)
    assert admission.admit(guaranteed("fits", "3Gi", hugepages="128Mi"), []) is None
    assert mm.cpuset_mems("uid-fits", "app") == "0"
    refusal = admission.admit(guaranteed("nowhere", "7Gi"), [guaranteed("fits", "3Gi", hugepages="128Mi")])
    assert refusal is not None and (refusal.reason, refusal.message) == REFUSED


def test_unknown_policy_and_mismatched_sums_from_configuration(tmp_path: Path) -> None:
    opts = NodeOptions(root_dir=tmp_path, numa_node_root=numa_tree(tmp_path / "node", {0: (1 << 20, {})}))
    with pytest.raises(StartupError, match='Failed to initialize memory manager: unknown policy: "static"'):
        memory_manager(KubeletConfiguration.model_validate({"memoryManagerPolicy": "static"}), opts, GI, lambda: True)
    with pytest.raises(StartupError, match='policy "BestEffort" is not available for platform "linux"'):
        memory_manager(KubeletConfiguration.model_validate({"memoryManagerPolicy": "BestEffort"}), opts, GI,
                       lambda: True)
    cfg = KubeletConfiguration.model_validate({"memoryManagerPolicy": "Static", "evictionHard": {
        "memory.available": "10%"}, "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}}]})
    with pytest.raises(StartupError, match='"100Mi" of type "memory" is not equal to the value "102Mi"'):
        memory_manager(cfg, opts, 1020 * MI, lambda: True)


@pytest.mark.parametrize(("blob", "error"), [
    # what encoding/json says for each (a Go program decoding into the kubelet's types printed these)
    (b"[1]", "json: cannot unmarshal array into Go value of type state.MemoryManagerCheckpoint"),
    (b'{"machineState":{"0":{"numberOfAssignments":"x"}}}', "json: cannot unmarshal string into Go struct field "
     "NUMANodeState.machineState.numberOfAssignments of type int"),
    (b'{"machineState":{"0":{"memoryMap":{"memory":{"total":-1}}}}}', "json: cannot unmarshal number -1 into Go "
     "struct field MemoryTable.machineState.memoryMap.total of type uint64"),
    (b'{"checksum":1.0}', "json: cannot unmarshal number 1.0 into Go struct field "
     "MemoryManagerCheckpoint.checksum of type checksum.Checksum"),
    (b'{"machineState":{"0":{"cells":[1e3]}}}', "json: cannot unmarshal number 1e3 into Go struct field "
     "NUMANodeState.machineState.cells of type int"),
    (b'{"entries":{"p":{"c":[{"size":"1"}]}}}', "json: cannot unmarshal string into Go struct field "
     "Block.entries.size of type uint64"),
    (b'{"entries":{"p":3}}', "json: cannot unmarshal number into Go struct field MemoryManagerCheckpoint.entries "
     "of type map[string][]state.Block"),
    (b'{"policyName": 2.5}', "json: cannot unmarshal number into Go struct field MemoryManagerCheckpoint.policyName "
     "of type string"),
    (b'{"machineState":{"x":{}}}', "json: cannot unmarshal number x into Go struct field "
     "MemoryManagerCheckpoint.machineState of type int"),
])
def test_type_errors_are_encoding_jsons(blob: bytes, error: str) -> None:
    with pytest.raises(CheckpointError) as err:
        decode(blob)
    assert str(err.value) == error


@pytest.mark.parametrize(("blob", "error"), [
    (b'{"a":}', "invalid character '}' looking for beginning of value"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    (b'{"a":[1 2]}', "invalid character '2' after array element"),
    (b"{'a':1}", "invalid character '\\'' looking for beginning of object key string"),
    (b'{} x', "invalid character 'x' after top-level value"),
    (b'{"a":', "unexpected end of JSON input"),
])
def test_syntax_errors_are_encoding_jsons(blob: bytes, error: str) -> None:
    with pytest.raises(CheckpointError) as err:
        decode(blob)
    assert str(err.value) == error
