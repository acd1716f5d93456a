"""kubeletapi's runtime values to CRI v1 messages and back.

Without a pod network every pod kubeletapi runs uses the host's network (no pod IP other than the
node's), so every sandbox is sent as the kubelet sends a hostNetwork pod: network namespace NODE,
no hostname (a runtime refuses to set a hostname without its own UTS namespace), DNS from the
host's resolv.conf. Given a pod network (a pod CIDR the runtime's CNI serves), a pod that is not
hostNetwork is sent with network namespace POD and its hostname: the runtime makes its namespace
and address. Containers get their own PID namespace (CONTAINER), the kubelet's default without
shareProcessNamespace.

Command and args: the kubelet sends the container spec's command as CRI `command` (it replaces the
image's entrypoint) and its args as `args` (they replace the image's cmd), each $(VAR)-expanded.
ContainerConfig carries that split in spec_command/spec_args; a config without them (built by
hand, or by an older pods layer) sends its `command` argv as `command`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from kubeletapi.errors import InvalidInput
from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.types import (
    ContainerConfig,
    ContainerState,
    ContainerStatus,
    Image,
    PodMeta,
    Resources,
    Sandbox,
    SandboxConfig,
    SandboxState,
)

RESOLV_CONF = Path("/etc/resolv.conf")

_CONTAINER_STATES: dict[int, ContainerState] = {
    pb.CONTAINER_CREATED: ContainerState.CREATED,
    pb.CONTAINER_RUNNING: ContainerState.RUNNING,
    pb.CONTAINER_EXITED: ContainerState.EXITED,
    pb.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
}


def dns_config(resolv_conf: Path = RESOLV_CONF) -> pb.DNSConfig:
    """nameserver, search and options of a resolv.conf (an unreadable file gives an empty config:
    the runtime then copies the host's file, which is what a host-network pod sees anyway)."""
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    try:
        text = resolv_conf.read_text(errors="replace")
    except OSError:
        return pb.DNSConfig()
    for line in text.splitlines():
        words = line.split("#", 1)[0].split(";", 1)[0].split()
        if len(words) < 2:
            continue
        if words[0] == "nameserver":
            servers.append(words[1])
        elif words[0] == "search":
            searches = words[1:]  # the last search line wins, as in the resolver
        elif words[0] == "options":
            options.extend(words[1:])
    return pb.DNSConfig(servers=servers, searches=searches, options=options)


def _linux_resources(res: Resources) -> pb.LinuxContainerResources:
    return pb.LinuxContainerResources(
        cpu_period=res.cpu_period or 0, cpu_quota=res.cpu_quota or 0, cpu_shares=res.cpu_shares or 0,
        memory_limit_in_bytes=res.memory_limit or 0, oom_score_adj=res.oom_score_adj or 0,
        cpuset_mems=res.cpuset_mems,
    )


def _namespaces(network: pb.NamespaceMode = pb.NODE) -> pb.NamespaceOption:
    return pb.NamespaceOption(network=network, pid=pb.CONTAINER, ipc=pb.POD)


def sandbox_config(config: SandboxConfig, dns: pb.DNSConfig, pod_network: bool = False) -> pb.PodSandboxConfig:
    """`pod_network`: the runtime serves a pod network, so a pod that is not hostNetwork gets its own."""
    meta = config.meta
    own = pod_network and not config.host_network
    return pb.PodSandboxConfig(
        metadata=pb.PodSandboxMetadata(name=meta.name, uid=meta.uid, namespace=meta.namespace, attempt=meta.attempt),
        hostname=config.hostname if own else "",  # hostNetwork: see the module docstring
        log_directory=config.log_directory,
        dns_config=dns,
        labels=dict(config.labels),
        annotations=dict(config.annotations),
        linux=pb.LinuxPodSandboxConfig(
            cgroup_parent=config.cgroup_parent,
            security_context=pb.LinuxSandboxSecurityContext(namespace_options=_namespaces(pb.POD if own else pb.NODE)),
            resources=_linux_resources(config.resources),
        ),
    )


def _command_args(config: ContainerConfig) -> tuple[list[str], list[str]]:
    if config.spec_command is not None or config.spec_args is not None:
        return list(config.spec_command or ()), list(config.spec_args or ())
    return list(config.command), []


def _mounts(config: ContainerConfig) -> list[pb.Mount]:
    out = []
    for mount in config.mounts:
        if not mount.host_path:
            raise InvalidInput(
                f"container {config.name!r}: mount at {mount.container_path} has no host path (a CRI runtime "
                "mounts host directories only; memory-backed emptyDirs are tmpfs directories on the host)"
            )
        out.append(pb.Mount(container_path=mount.container_path, host_path=mount.host_path, readonly=mount.readonly))
    return out


def container_config(config: ContainerConfig, network: pb.NamespaceMode = pb.NODE) -> pb.ContainerConfig:
    """`network`: the sandbox's network namespace mode (its containers share it)."""
    command, args = _command_args(config)
    return pb.ContainerConfig(
        metadata=pb.ContainerMetadata(name=config.name, attempt=config.attempt),
        image=pb.ImageSpec(image=config.image),
        command=command,
        args=args,
        working_dir=config.working_dir,
        envs=[pb.KeyValue(key=k, value=v) for k, v in config.envs],
        mounts=_mounts(config),
        labels=dict(config.labels),
        annotations=dict(config.annotations),
        log_path=config.log_path,
        stdin=config.stdin,
        stdin_once=config.stdin_once,
        tty=config.tty,
        linux=pb.LinuxContainerConfig(
            resources=_linux_resources(config.resources),
            security_context=pb.LinuxContainerSecurityContext(namespace_options=_namespaces(network)),
        ),
    )


def _meta(m: pb.PodSandboxMetadata) -> PodMeta:
    return PodMeta(name=m.name, namespace=m.namespace, uid=m.uid, attempt=m.attempt)


def sandbox_ips(status: pb.PodSandboxStatus) -> tuple[str, ...]:
    """A sandbox's own addresses (network.ip, then additional_ips); () for a host-network one."""
    if status.linux.namespaces.options.network == pb.NODE or not status.network.ip:
        return ()
    return (status.network.ip, *(ip.ip for ip in status.network.additional_ips if ip.ip))


def sandbox(item: pb.PodSandbox, log_directory: str = "", cgroup_parent: str = "", image: str = "",
            ips: tuple[str, ...] = ()) -> Sandbox:
    """A listed sandbox. ListPodSandbox has neither the log directory nor the cgroup parent nor
    the addresses: the caller fills them from what it knows (PodSandboxStatus, or its own cache)."""
    ready = item.state == pb.SANDBOX_READY
    return Sandbox(
        id=item.id, meta=_meta(item.metadata),
        state=SandboxState.READY if ready else SandboxState.NOTREADY,
        created_at=item.created_at, labels=dict(item.labels), annotations=dict(item.annotations),
        log_directory=log_directory, cgroup_parent=cgroup_parent, image=image, ips=ips,
    )


def container_status(status: pb.ContainerStatus, sandbox_id: str, pid: int = 0) -> ContainerStatus:
    """A CRI ContainerStatus. The sandbox id is not part of it: the caller knows it (from the
    listing). CRI has no signal: 0, whatever the exit code says. A container that exits at once
    can be reported by containerd as finished a little before it started (the exit is stamped by
    the shim, the start by containerd once the start call returned): finished_at is then raised to
    started_at, so a status never ends before it began."""
    state = _CONTAINER_STATES.get(status.state, ContainerState.UNKNOWN)
    finished_at = max(status.finished_at, status.started_at) if status.finished_at else 0
    return ContainerStatus(
        id=status.id, sandbox_id=sandbox_id, name=status.metadata.name, attempt=status.metadata.attempt,
        state=state, image=status.image.image, image_ref=status.image_ref, created_at=status.created_at,
        started_at=status.started_at, finished_at=finished_at, exit_code=status.exit_code,
        reason=status.reason, message=status.message, log_path=status.log_path,
        pid=pid if state is ContainerState.RUNNING else 0,
        labels=dict(status.labels), annotations=dict(status.annotations),
    )


def container_state(state: int) -> ContainerState:
    return _CONTAINER_STATES.get(state, ContainerState.UNKNOWN)


def image(item: pb.Image) -> Image:
    """A CRI Image; `ref` is its first repo digest when it has one (what the kubelet reports as a
    container's imageID), else its id."""
    ref = item.repo_digests[0] if item.repo_digests else item.id
    return Image(id=item.id, ref=ref, size=item.size, tags=tuple(item.repo_tags), digests=tuple(item.repo_digests),
                 pinned=item.pinned)


def verbose_info(info: Mapping[str, str]) -> dict[str, object]:
    """containerd's verbose "info" JSON of a status answer (an empty dict for any other shape)."""
    raw = info.get("info", "")
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}
