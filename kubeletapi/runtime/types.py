"""Frozen values shared by every runtime, shaped like the CRI v1 messages they stand for.

Times are Unix nanoseconds (0 = unset), as in CRI. Labels and annotations carry the kubelet's
keys (io.kubernetes.pod.name, io.kubernetes.container.name, ...), so a runtime can rebuild its
view of pods from what it lists, which is how an agent restart re-adopts containers.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
POD_UID = "io.kubernetes.pod.uid"
CONTAINER_NAME = "io.kubernetes.container.name"
CONTAINER_HASH = "io.kubernetes.container.hash"
CONTAINER_TYPE = "io.kubernetes.container.type"  # kubeletapi: "init" | "app"
RESTART_COUNT = "io.kubernetes.container.restartCount"
GRACE_PERIOD = "io.kubernetes.pod.terminationGracePeriod"


class SandboxState(enum.Enum):
    READY = "SANDBOX_READY"
    NOTREADY = "SANDBOX_NOTREADY"


class ContainerState(enum.Enum):
    CREATED = "CONTAINER_CREATED"
    RUNNING = "CONTAINER_RUNNING"
    EXITED = "CONTAINER_EXITED"
    UNKNOWN = "CONTAINER_UNKNOWN"


@dataclass(frozen=True)
class PodMeta:
    name: str
    namespace: str
    uid: str
    attempt: int = 0


@dataclass(frozen=True)
class Resources:
    """Linux resources of a pod or container cgroup (None: leave the default)."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    memory_limit: int | None = None
    pids_limit: int | None = None
    oom_score_adj: int | None = None
    cpuset_mems: str = ""  # NUMA nodes of the container's memory ("0,1"): the memory manager's affinity


@dataclass(frozen=True)
class Mount:
    """A volume mount: a host path (or a tmpfs) at a path inside the container."""

    container_path: str
    host_path: str = ""
    readonly: bool = False
    tmpfs: bool = False


@dataclass(frozen=True)
class SandboxConfig:
    meta: PodMeta
    hostname: str
    log_directory: str
    cgroup_parent: str
    resources: Resources = Resources()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    # The pod's spec.hostNetwork. A pod that is not on the host network gets its own network
    # namespace and address only from a runtime given a pod network (a pod CIDR); else it shares
    # the node's, as every pod did before pod networking.
    host_network: bool = True


@dataclass(frozen=True)
class ContainerConfig:
    name: str
    attempt: int
    image: str
    command: tuple[str, ...]
    working_dir: str = ""
    envs: tuple[tuple[str, str], ...] = ()
    mounts: tuple[Mount, ...] = ()
    log_path: str = ""  # relative to the sandbox's log directory
    stdin: bool = False
    stdin_once: bool = False
    tty: bool = False
    resources: Resources = Resources()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    # The spec's command and args, each expanded, kept apart for runtimes that read the image (CRI
    # Command replaces its entrypoint, Args its cmd); `command` is their concatenation, the argv
    # the process runtime runs. None: not given (a CRI runtime then sends `command` as Command).
    spec_command: tuple[str, ...] | None = None
    spec_args: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Sandbox:
    id: str
    meta: PodMeta
    state: SandboxState
    created_at: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    log_directory: str = ""
    cgroup_parent: str = ""
    image: str = ""  # a CRI runtime's sandbox (pause) image; "" for the process runtime
    # The pod's own addresses (its network namespace; kept once the sandbox stopped, as CRI runtimes
    # report them); () on the host network.
    ips: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContainerStatus:
    id: str
    sandbox_id: str
    name: str
    attempt: int
    state: ContainerState
    image: str
    image_ref: str
    created_at: int
    started_at: int = 0
    finished_at: int = 0
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    message: str = ""
    log_path: str = ""  # absolute
    pid: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes


@dataclass(frozen=True)
class RuntimeVersion:
    runtime_name: str
    runtime_version: str
    runtime_api_version: str = "v1"


@dataclass(frozen=True)
class AuthConfig:
    """Registry credentials for one pull (CRI AuthConfig), from a pod's imagePullSecrets."""

    username: str = ""
    password: str = ""
    auth: str = ""
    server_address: str = ""
    identity_token: str = ""
    registry_token: str = ""

    def __repr__(self) -> str:  # never in a log line
        return f"AuthConfig(username={self.username!r}, ...)"


@dataclass(frozen=True)
class Image:
    """An image the runtime has (CRI Image): `id` its image id, `ref` what a container status
    reports as imageID (a repo digest when the runtime knows one, else the id)."""

    id: str
    ref: str
    size: int = 0
    tags: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()
    pinned: bool = False  # the runtime keeps it (the sandbox image): never garbage collected
