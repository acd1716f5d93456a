"""The Static memory manager on containerd: a Guaranteed pod's container is created with the
memory manager's NUMA nodes in LinuxContainerResources.cpuset_mems, which containerd puts in the
container's OCI spec (linux.resources.cpu.mems) and runc in its cpuset cgroup."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cri.fixtures import CRIEnv, agent_on
from tests.helpers import Agent
from tests.podtools import manifest, pods, wait_for, write

pytestmark = [pytest.mark.e2e, pytest.mark.cri]

GUARANTEED = """- name: main
  image: localhost/busybox:latest
  imagePullPolicy: IfNotPresent
  command: [sleep, "3600"]
  resources:
    requests: {cpu: 100m, memory: 32Mi}
    limits: {cpu: 100m, memory: 32Mi}
"""


@pytest.fixture
def agent(cri_env: CRIEnv, tmp_path: Path) -> Iterator[Agent]:
    manifests = tmp_path / "manifests"
    write(manifests, "g.yaml", manifest("g", GUARANTEED))
    with agent_on(cri_env, tmp_path, "--pod-manifest-path", str(manifests), "--memory-manager-policy", "Static",
                  "--reserved-memory", "0:memory=100Mi") as node:
        yield node


def test_cpuset_mems_reaches_the_oci_spec_and_the_cgroup(agent: Agent, cri_env: CRIEnv) -> None:
    def running() -> dict[str, object] | None:
        pod = pods(agent).get("g-testnode")
        statuses = (pod or {}).get("status", {}).get("containerStatuses") or []  # type: ignore[union-attr]
        return pod if statuses and "running" in statuses[0]["state"] else None

    pod = wait_for(running, timeout=60, what="g running")
    cid = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")  # type: ignore[index]
    info = subprocess.run(["ctr", "--address", cri_env.endpoint.removeprefix("unix://"), "--namespace", "k8s.io",
                           "containers", "info", cid], capture_output=True, text=True, check=True, timeout=30)
    spec = json.loads(info.stdout)["Spec"]
    assert spec["linux"]["resources"]["cpu"]["mems"] == "0"
    cgroup = Path("/sys/fs/cgroup/cpuset") / spec["linux"]["cgroupsPath"].strip("/")
    if cgroup.is_dir():  # cgroupfs driver on cgroup v1
        assert (cgroup / "cpuset.mems").read_text().strip() == "0"
