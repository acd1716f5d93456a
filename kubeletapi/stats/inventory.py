"""What the stats provider needs to know about pods: declared here, beside its consumer.

The composition root fills it from the pod manager and the runtime's listing; the stats layer
never imports the pods layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class ContainerRef:
    name: str
    id: str
    image: str
    created_ns: int
    started_ns: int
    running: bool
    cgroup: str = ""  # "" when the runtime placed it in no cgroup (not root)
    pid: int = 0  # the container's main process on the host (0 when not running)
    log_dir: Path | None = None  # <podLogsDir>/<ns>_<pod>_<uid>/<container>
    sandbox: bool = False  # a CRI runtime's pause container: on /metrics/cadvisor only (container "")


@dataclass(frozen=True)
class VolumeRef:
    name: str
    path: Path
    kind: str  # "emptyDir" (disk-backed), "emptyDir-memory" (tmpfs) or "hostPath"


@dataclass(frozen=True)
class PodRef:
    uid: str
    name: str
    namespace: str
    created_ns: int
    cgroup: str = ""
    log_dir: Path | None = None
    containers: tuple[ContainerRef, ...] = ()
    volumes: tuple[VolumeRef, ...] = ()
    labels: tuple[tuple[str, str], ...] = field(default_factory=tuple)


class Inventory(Protocol):
    """The pods to report on, and the runtime's own processes (the `runtime` system container).

    Called on the event loop, once per housekeeping cycle: cheap and non-blocking."""

    def pods(self) -> Sequence[PodRef]: ...

    def runtime_pids(self) -> Sequence[int]: ...
