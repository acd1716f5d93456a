"""Runtimes under the contract suite: every implementation of runtime.interface.Runtime (and of
runtime.streaming.Streamer).

- plain: the process runtime as a non-root user gets it (host processes, no cgroups, no namespaces);
- isolated: the process runtime as root, with real cgroups and namespaces;
- cri: the CRI runtime on the session's private containerd (tests/cri/fixtures.py), as root.

Each test gets its own log dir and its own cgroup root (the process runtime also its own state
dir). Teardown removes every sandbox through the runtime, closes it (a CRI runtime's gRPC channel),
and removes the cgroup root in every hierarchy; it fails the test when anything is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import RealClock
from kubeletapi.runtime.cri import CRIRuntime
from kubeletapi.runtime.interface import Runtime
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.streaming import Streamer
from kubeletapi.runtime.types import PodMeta, SandboxConfig
from tests.cri.cleanup import cgroup_dirs, remove_cgroup_root

ROOT = os.geteuid() == 0
PROCESS_IMAGE = "busybox:1.36"  # the process runtime runs host commands: any name will do

T = TypeVar("T")


class ContractRuntime(Runtime, Streamer, Protocol):
    """What the contract tests drive: the lifecycle and image calls plus exec/attach/port-forward."""


@dataclass
class RuntimeCase:
    name: str  # plain | isolated | cri
    runtime: ContractRuntime
    cgroup_root: str
    log_dir: Path
    image: str
    isolated: bool  # cgroups and namespaces (always, with CRI)
    # Another runtime object on the same state (the process runtime's state dir, the CRI endpoint),
    # as an agent restart builds it; and how a runtime object is released in the running loop.
    make_runtime: Callable[[], ContractRuntime]
    release: Callable[[ContractRuntime], Awaitable[None]]

    @property
    def cri(self) -> bool:
        return self.name == "cri"

    def sandbox_config(self, name: str = "p") -> SandboxConfig:
        uid = secrets.token_hex(8)
        parent = f"{self.cgroup_root}/kubepods/pod{uid}" if self.isolated else ""
        return SandboxConfig(
            meta=PodMeta(name=name, namespace="default", uid=uid), hostname=name,
            log_directory=str(self.log_dir / f"default_{name}_{uid}"), cgroup_parent=parent,
        )

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a test's coroutine in a loop of its own. A CRI runtime's gRPC channel belongs to the
        loop that made it: it is closed before the loop ends (the next loop opens its own)."""
        async def in_loop() -> T:
            try:
                return await coro
            finally:
                await self.release(self.runtime)
                left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                assert left == [], f"tasks left running: {left}"
        return asyncio.run(in_loop())

    @contextlib.asynccontextmanager
    async def another_runtime(self) -> AsyncIterator[ContractRuntime]:
        runtime = self.make_runtime()
        try:
            yield runtime
        finally:
            await self.release(runtime)


async def _nothing(_: ContractRuntime) -> None:
    return None


async def _close(runtime: ContractRuntime) -> None:
    assert isinstance(runtime, CRIRuntime)
    await runtime.close()


def _process_case(name: str, tmp_path: Path, cgroup_root: str) -> RuntimeCase:
    isolated = name == "isolated"
    cgroups = new_writer(detect()) if isolated else None

    def make() -> ContractRuntime:
        return ProcessRuntime(tmp_path / "state", shim_path(), RealClock(), cgroups=cgroups, namespaces=isolated)

    return RuntimeCase(name, make(), cgroup_root, tmp_path / "logs", PROCESS_IMAGE, isolated, make, _nothing)


def _cri_case(request: pytest.FixtureRequest, tmp_path: Path, cgroup_root: str) -> RuntimeCase:
    env = request.getfixturevalue("cri_env")  # skips when this machine cannot run containerd
    cgroups = new_writer(detect())

    def make() -> ContractRuntime:
        return CRIRuntime(env.endpoint, cgroups=cgroups)

    return RuntimeCase("cri", make(), cgroup_root, tmp_path / "logs", env.busybox, True, make, _close)


async def _remove_all(case: RuntimeCase) -> None:
    """Every sandbox (and so every container) gone, through the runtime under test."""
    rt = case.runtime
    try:
        for sandbox in await rt.list_pod_sandboxes():
            await rt.stop_pod_sandbox(sandbox.id)
            await rt.remove_pod_sandbox(sandbox.id)
        assert await rt.list_pod_sandboxes() == [], "a sandbox outlived its removal"
        assert await rt.list_containers() == [], "a container outlived its sandbox's removal"
    finally:
        await case.release(rt)


@pytest.fixture(params=["plain", "isolated", pytest.param("cri", marks=pytest.mark.cri)])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RuntimeCase]:
    if request.param != "plain" and not ROOT:
        pytest.skip("cgroups and namespaces need root")
    cgroup_root = f"/kubeletapi-test-{secrets.token_hex(4)}"
    if request.param == "cri":
        case = _cri_case(request, tmp_path, cgroup_root)
    else:
        case = _process_case(request.param, tmp_path, cgroup_root)
    try:
        yield case
    finally:
        try:
            asyncio.run(_remove_all(case))
        finally:
            if case.isolated:
                remove_cgroup_root(cgroup_root)
                assert cgroup_dirs(cgroup_root) == [], f"cgroups left under {cgroup_root}"
