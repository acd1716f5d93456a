"""Clean-up for tests that run pods on the session's containerd.

Containers outlive the agent by design (a new agent re-adopts them), so a test that started pods
removes them itself: every sandbox of the private containerd is stopped and removed through CRI
(which kills and deletes its containers), then the agent's cgroup root is removed in every
hierarchy, the hybrid unified one included (runc creates the pods' parents there too).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from kubeletapi.cgroups import detect
from kubeletapi.errors import KubeletError
from kubeletapi.runtime.cri import CRIRuntime
from kubeletapi.runtime.types import Sandbox


def list_sandboxes(endpoint: str) -> list[Sandbox]:
    """The runtime's sandboxes now, through a runtime of its own (any test, any loop)."""
    async def listed() -> list[Sandbox]:
        runtime = CRIRuntime(endpoint)
        try:
            return list(await runtime.list_pod_sandboxes())
        finally:
            await runtime.close()
    return asyncio.run(listed())


async def remove_all_sandboxes(endpoint: str) -> int:
    """Stop and remove every sandbox (and so every container) of the runtime; how many there were."""
    runtime = CRIRuntime(endpoint)
    try:
        sandboxes = await runtime.list_pod_sandboxes()
        for sandbox in sandboxes:
            with contextlib.suppress(KubeletError):
                await runtime.stop_pod_sandbox(sandbox.id)
            with contextlib.suppress(KubeletError):
                await runtime.remove_pod_sandbox(sandbox.id)
        return len(sandboxes)
    finally:
        await runtime.close()


def remove_cgroup_root(cgroup_root: str) -> None:
    """Remove `cgroup_root` and everything below it in every hierarchy (deepest first)."""
    for mount in detect().mount_points:
        base = mount / cgroup_root.strip("/")
        if base.is_dir():
            for dirpath, _, _ in sorted(os.walk(base), key=lambda e: -len(e[0])):
                with contextlib.suppress(OSError):
                    Path(dirpath).rmdir()


def cgroup_pids(cgroup_root: str) -> set[int]:
    """Every process in `cgroup_root` or below, in any hierarchy."""
    pids: set[int] = set()
    for mount in detect().mount_points:
        base = mount / cgroup_root.strip("/")
        if base.is_dir():
            for procs in base.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids |= {int(line) for line in procs.read_text().split()}
    return pids - {0, 1, os.getpid()}


def purge_cri(endpoint: str, agent_args: Sequence[str] = ()) -> None:
    """Every pod of the runtime gone, and the agent's cgroup root (if its flags name one)."""
    asyncio.run(remove_all_sandboxes(endpoint))
    if "--cgroup-root" in agent_args:
        remove_cgroup_root(agent_args[list(agent_args).index("--cgroup-root") + 1])


def cgroup_dirs(cgroup_root: str) -> list[Path]:
    """What is left of `cgroup_root` in any hierarchy (for tests asserting a clean removal)."""
    out: list[Path] = []
    for mount in detect().mount_points:
        base = mount / cgroup_root.strip("/")
        if base.is_dir():
            out += [Path(d) for d, _, _ in os.walk(base)]
    return out
