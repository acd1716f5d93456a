"""Runtimes under the contract suite: every implementation of runtime.interface.Runtime.

The process runtime runs twice: plain (what a non-root user gets) and, as root, with real
cgroups and namespaces. Each test gets its own state dir and its own cgroup root, removed after.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import RealClock
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.types import PodMeta, SandboxConfig

ROOT = os.geteuid() == 0


@dataclass
class RuntimeCase:
    runtime: ProcessRuntime
    cgroup_root: str
    log_dir: Path
    isolated: bool  # cgroups and namespaces

    def sandbox_config(self, name: str = "p") -> SandboxConfig:
        uid = secrets.token_hex(8)
        parent = f"{self.cgroup_root}/kubepods/pod{uid}" if self.isolated else ""
        return SandboxConfig(
            meta=PodMeta(name=name, namespace="default", uid=uid), hostname=name,
            log_directory=str(self.log_dir / f"default_{name}_{uid}"), cgroup_parent=parent,
        )


def _cleanup_cgroups(cgroup_root: str) -> None:
    """Remove every cgroup the test left under its private root (deepest first)."""
    layout = detect()
    for hierarchy in layout.hierarchies:
        base = hierarchy.mount_point / cgroup_root.strip("/")
        if base.exists():
            for dirpath, _, _ in sorted(os.walk(base), key=lambda e: -len(e[0])):
                Path(dirpath).rmdir()


@pytest.fixture(params=["plain", "isolated"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RuntimeCase]:
    isolated = request.param == "isolated"
    if isolated and not ROOT:
        pytest.skip("cgroups and namespaces need root")
    cgroup_root = f"/kubeletapi-test-{secrets.token_hex(4)}"
    runtime = ProcessRuntime(
        tmp_path / "state", shim_path(), RealClock(),
        cgroups=new_writer(detect()) if isolated else None, namespaces=isolated,
    )
    case = RuntimeCase(runtime, cgroup_root, tmp_path / "logs", isolated)
    yield case
    asyncio.run(_remove_all(runtime))
    if isolated:
        _cleanup_cgroups(cgroup_root)


async def _remove_all(runtime: ProcessRuntime) -> None:
    for sandbox in await runtime.list_pod_sandboxes():
        await runtime.remove_pod_sandbox(sandbox.id)
