"""The Static memory manager on this machine (one NUMA node), through real agent processes: the
accounting and the state file, the container's cpuset.mems, a pod that cannot fit refused with the
kubelet's admission error, the state restored after a restart, memory released with the pod, and
the start-up errors (a reservation that does not add up, a corrupt state file) with exit 1."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubeletapi.cm.memorymanager.topology import read_topology
from tests.helpers import LOOPBACK, AgentProcess, agent_args, purge
from tests.podtools import container, flag, manifest, pod_list, wait_for, write

pytestmark = pytest.mark.e2e
MI = 1 << 20
REJECTED = ("Pod was rejected: Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no "
            "NUMA nodes with enough memory is available, which is unexpected")
STATIC = ("--memory-manager-policy", "Static", "--reserved-memory", "0:memory=100Mi")  # = evictionHard's 100Mi


def guaranteed(name: str, memory: str) -> str:
    amounts = f"{{cpu: 100m, memory: {memory}}}"
    return manifest(name, container("c", ["sleep", "3600"], f"resources: {{requests: {amounts}, limits: {amounts}}}"))


def running(args: list[str], name: str) -> dict[str, Any] | None:
    pod = pod_list(args).get(f"{name}-testnode")
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
    return pod if statuses and "running" in statuses[0]["state"] else None


def start(args: list[str]) -> AgentProcess:
    agent = AgentProcess(args)
    agent.wait_healthy(f"http://{LOOPBACK}:{flag(args, '--healthz-port')}/healthz")
    return agent


def state(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp_path / "root" / "memory_manager_state").read_bytes())
    return data


def cpuset_mems(args: list[str], uid: str) -> list[str]:
    pod = Path("/sys/fs/cgroup/cpuset") / flag(args, "--cgroup-root").strip("/") / "kubepods" / f"pod{uid}"
    return [(d / "cpuset.mems").read_text().strip() for d in pod.iterdir() if d.is_dir()]


def test_static_policy_accounts_pins_refuses_restores_and_releases(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    args = agent_args(tmp_path, "--pod-manifest-path", str(manifests), *STATIC)
    write(manifests, "g.yaml", guaranteed("g", "64Mi"))
    write(manifests, "huge.yaml", guaranteed("huge", "100000Gi"))
    node = read_topology()[0]
    agent = start(args)
    try:
        uid = wait_for(lambda: running(args, "g"), what="g running")["metadata"]["uid"]
        refused = wait_for(lambda: pod_list(args).get("huge-testnode"), what="huge listed")
        assert refused["status"]["phase"] == "Failed"
        assert refused["status"]["reason"] == "UnexpectedAdmissionError"
        assert refused["status"]["message"] == REJECTED
        recorded = state(tmp_path)
        assert recorded["policyName"] == "Static"
        assert recorded["entries"] == {uid: {"c": [{"numaAffinity": [0], "type": "memory", "size": 64 * MI}]}}
        memory = recorded["machineState"]["0"]["memoryMap"]["memory"]
        hugepages = sum(p.total for p in node.hugepages)
        assert memory == {"total": node.memory, "systemReserved": 100 * MI,
                          "allocatable": node.memory - 100 * MI - hugepages, "reserved": 64 * MI,
                          "free": node.memory - 100 * MI - hugepages - 64 * MI}
        assert recorded["machineState"]["0"]["numberOfAssignments"] == 1
        if os.geteuid() == 0 and Path("/sys/fs/cgroup/cpuset").is_dir():
            assert cpuset_mems(args, uid) == ["0"]
        metrics = httpx.get(f"http://{LOOPBACK}:{flag(args, '--read-only-port')}/metrics", timeout=5).text
        assert "kubelet_memory_manager_pinning_requests_total 2\n" in metrics  # g's container and huge's
        assert "kubelet_memory_manager_pinning_errors_total 1\n" in metrics
        before = (tmp_path / "root" / "memory_manager_state").read_bytes()
        code, _ = agent.stop()
        assert code == 0
        agent = start(args)
        pod = wait_for(lambda: running(args, "g"), what="g re-adopted")
        assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
        assert pod_list(args)["huge-testnode"]["status"]["message"] == REJECTED
        assert (tmp_path / "root" / "memory_manager_state").read_bytes() == before
        (manifests / "g.yaml").unlink()
        wait_for(lambda: "entries" not in state(tmp_path), what="memory released")
        assert state(tmp_path)["machineState"]["0"]["memoryMap"]["memory"]["reserved"] == 0
        assert state(tmp_path)["machineState"]["0"]["numberOfAssignments"] == 0
    finally:
        agent.stop()
        purge(args)


def test_bad_reservation_and_corrupt_state_exit_1(tmp_path: Path) -> None:
    args = agent_args(tmp_path, "--memory-manager-policy", "Static", "--reserved-memory", "0:memory=1Gi")
    code, out = AgentProcess(args).wait_exit()
    assert code == 1
    assert ('Failed to initialize memory manager: the total amount "1Gi" of type "memory" is not equal to the '
            'value "100Mi" determined by Node Allocatable feature') in out
    code, out = AgentProcess(agent_args(tmp_path, "--reserved-memory", "0:memory")).wait_exit()
    assert code == 1
    assert ("argument --reserved-memory: the reserved limit has incorrect value, expected type=quantatity, "
            "got memory") in out
    state_file = tmp_path / "root" / "memory_manager_state"
    assert not state_file.exists()  # nothing written by a start that failed
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text('{"policyName":"Static","machineState":{},"checksum":1}')
    code, out = AgentProcess(agent_args(tmp_path, *STATIC)).wait_exit()
    assert code == 1
    assert re.search(r"start memory manager error: could not restore state from checkpoint: checkpoint is "
                     rf'corrupted, please drain this node and delete the memory manager checkpoint file "{state_file}" '
                     "before restarting Kubelet", out), out
    state_file.unlink()  # the remedy: the next start writes a fresh state
    agent = start(agent_args(tmp_path, *STATIC))
    try:
        assert state(tmp_path)["machineState"]["0"]["numberOfAssignments"] == 0
    finally:
        agent.stop()
