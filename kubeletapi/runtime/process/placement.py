"""Where the process runtime puts pods and containers: their cgroups, as root (none otherwise).

A pod's cgroup is its sandbox's cgroup_parent, a container's is named by its id under it, each
created with its limits; the shim joins the container's (one directory per hierarchy). Without
a cgroup writer (not root) every operation does nothing and a container has no cgroup ("").
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from pathlib import Path
from typing import Protocol

from kubeletapi.cgroups.writers import ResourceConfig
from kubeletapi.errors import Conflict, InvalidInput, Unavailable
from kubeletapi.runtime.types import Resources

log = logging.getLogger(__name__)


class Cgroups(Protocol):
    """The cgroup operations the runtime needs (kubeletapi.cgroups writers)."""

    def create(self, path: str) -> None: ...

    def set_resources(self, path: str, config: ResourceConfig) -> None: ...

    def procs_files(self, path: str) -> list[Path]: ...

    def delete(self, path: str) -> None: ...

    def oom_kill_count(self, path: str) -> int: ...


def cgroup_config(res: Resources) -> ResourceConfig:
    return ResourceConfig(
        cpu_shares=res.cpu_shares, cpu_quota=res.cpu_quota, cpu_period=res.cpu_period,
        memory_limit=res.memory_limit, pids_limit=res.pids_limit, cpuset_mems=res.cpuset_mems or None,
    )


class Placement:
    def __init__(self, cgroups: Cgroups | None) -> None:
        self._cgroups = cgroups

    def container_cgroup(self, pod_cgroup: str, container_id: str) -> str:
        """The container's cgroup under its pod's; "" without cgroups."""
        if self._cgroups is None or not pod_cgroup:
            return ""
        return f"{pod_cgroup}/{container_id}"

    def create(self, path: str, resources: Resources) -> list[Path]:
        """Create the cgroup with its limits; the directories a process joins (one per hierarchy)."""
        if self._cgroups is None or not path:
            return []
        self._cgroups.create(path)
        self._cgroups.set_resources(path, cgroup_config(resources))
        return [procs.parent for procs in self._cgroups.procs_files(path)]

    def delete_pod(self, path: str) -> None:
        """Remove a pod's cgroup (Conflict while processes live in it)."""
        if self._cgroups is not None and path:
            self._cgroups.delete(path)

    def delete(self, path: str, container_id: str) -> None:
        """Remove a container's cgroup; a failure is logged (remove_container tries again)."""
        if self._cgroups is None or not path:
            return
        try:
            self._cgroups.delete(path)
        except (OSError, Unavailable, InvalidInput, Conflict) as exc:
            log.warning("cannot remove cgroup %s of container %s: %s", path, container_id, exc)

    def procs_files(self, path: str) -> list[Path]:
        if self._cgroups is None or not path:
            return []
        return self._cgroups.procs_files(path)

    def oom_killed(self, path: str) -> bool:
        if self._cgroups is None or not path:
            return False
        try:
            return self._cgroups.oom_kill_count(path) > 0
        except (OSError, Unavailable, InvalidInput):
            return False

    def kill_all(self, path: str) -> None:
        """SIGKILL every process in the cgroup."""
        for procs in self.procs_files(path):
            with contextlib.suppress(OSError):
                for pid in procs.read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
