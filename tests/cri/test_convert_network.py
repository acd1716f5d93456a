"""The pod network in CRI messages: a pod that is not hostNetwork is sent with network namespace
POD and its hostname only once the runtime serves a pod network; a sandbox's addresses come from
its PodSandboxStatus (network.ip, then additional_ips), none for a host-network one."""

from __future__ import annotations

import pytest

from kubeletapi.runtime.cri import convert
from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.types import ContainerConfig, PodMeta, Resources, SandboxConfig


def config(host_network: bool) -> SandboxConfig:
    return SandboxConfig(meta=PodMeta("web", "default", "uid-1"), hostname="web", log_directory="/l",
                         cgroup_parent="", host_network=host_network)


@pytest.mark.parametrize(("host_network", "pod_network", "mode", "hostname"), [
    pytest.param(False, False, pb.NODE, "", id="no-pod-network"),
    pytest.param(True, True, pb.NODE, "", id="host-network-pod"),
    pytest.param(False, True, pb.POD, "web", id="own-network"),
])
def test_sandbox_network_mode(host_network: bool, pod_network: bool, mode: int, hostname: str) -> None:
    msg = convert.sandbox_config(config(host_network), pb.DNSConfig(), pod_network)
    assert msg.linux.security_context.namespace_options.network == mode
    assert msg.hostname == hostname


def test_containers_share_the_sandbox_network_mode() -> None:
    c = ContainerConfig(name="c", attempt=0, image="busybox", command=("sleep", "1"))
    assert convert.container_config(c).linux.security_context.namespace_options.network == pb.NODE
    assert convert.container_config(c, pb.POD).linux.security_context.namespace_options.network == pb.POD


def test_the_memory_managers_numa_nodes_reach_cpuset_mems() -> None:
    pinned = ContainerConfig(name="c", attempt=0, image="busybox", command=(), resources=Resources(cpuset_mems="0,1"))
    assert convert.container_config(pinned).linux.resources.cpuset_mems == "0,1"
    plain = ContainerConfig(name="c", attempt=0, image="busybox", command=())
    assert convert.container_config(plain).linux.resources.cpuset_mems == ""


def _status(mode: int, ip: str, more: tuple[str, ...] = ()) -> pb.PodSandboxStatus:
    return pb.PodSandboxStatus(
        network=pb.PodSandboxNetworkStatus(ip=ip, additional_ips=[pb.PodIP(ip=i) for i in more]),
        linux=pb.LinuxPodSandboxStatus(namespaces=pb.Namespace(options=pb.NamespaceOption(network=mode))))


@pytest.mark.parametrize(("status", "ips"), [
    pytest.param(_status(pb.POD, "10.251.200.4"), ("10.251.200.4",), id="one"),
    pytest.param(_status(pb.POD, "10.251.200.4", ("fd00::4",)), ("10.251.200.4", "fd00::4"), id="dual-stack"),
    pytest.param(_status(pb.NODE, "192.0.2.1"), (), id="host-network"),
    pytest.param(_status(pb.POD, ""), (), id="none-yet"),
])
def test_sandbox_ips(status: pb.PodSandboxStatus, ips: tuple[str, ...]) -> None:
    assert convert.sandbox_ips(status) == ips


def test_a_stopped_sandbox_keeps_its_address() -> None:
    item = pb.PodSandbox(id="s", metadata=pb.PodSandboxMetadata(name="web", uid="u"), state=pb.SANDBOX_NOTREADY)
    assert convert.sandbox(item, ips=("10.251.200.4",)).ips == ("10.251.200.4",)
