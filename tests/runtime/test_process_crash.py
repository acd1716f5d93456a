"""The process runtime's state dir after an agent died while writing or removing a record.

Each test leaves the state directory as a kill -9 at that point leaves it, then builds a new
runtime on it, as a restarted agent does. Plain (no cgroups, as any user) and isolated (root:
cgroups and namespaces) runtimes both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import RealClock
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.process.state import SandboxRecord, StateDir
from kubeletapi.runtime.types import ContainerConfig, PodMeta, SandboxConfig
from tests.cri.cleanup import cgroup_dirs, remove_cgroup_root

ROOT = os.geteuid() == 0
LOGGER = "kubeletapi.runtime.process.runtime"


@dataclass
class Env:
    tmp: Path
    isolated: bool
    marker: str
    cgroup_root: str

    @property
    def state(self) -> Path:
        return self.tmp / "state"

    def runtime(self) -> ProcessRuntime:
        """A runtime on the state dir: what a (re)started agent builds."""
        cgroups = new_writer(detect()) if self.isolated else None
        return ProcessRuntime(self.state, shim_path(), RealClock(), cgroups=cgroups, namespaces=self.isolated)

    def sandbox_config(self) -> SandboxConfig:
        uid = secrets.token_hex(8)
        parent = f"{self.cgroup_root}/kubepods/pod{uid}" if self.isolated else ""
        return SandboxConfig(meta=PodMeta(name="p", namespace="default", uid=uid), hostname="p",
                             log_directory=str(self.tmp / "logs" / uid), cgroup_parent=parent)

    def config(self, script: str) -> ContainerConfig:
        # The program stays a shell (two commands): its command line carries the marker.
        return ContainerConfig(name="c", attempt=0, image="busybox", command=("sh", "-c", f"{script}; : {self.marker}"),
                               log_path="c/0.log")

    async def created(self, rt: ProcessRuntime, script: str = "sleep 30") -> tuple[str, str]:
        sandbox = await rt.run_pod_sandbox(self.sandbox_config())
        return sandbox, await rt.create_container(sandbox, self.config(script))

    def container_dir(self, cid: str) -> Path:
        return self.state / "containers" / cid

    def record(self, cid: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.container_dir(cid) / "container.json").read_text())
        return data

    def apps(self) -> list[int]:
        """The containers' programs (shells whose command line carries the marker)."""
        return sorted(p.pid for p in psutil.process_iter(["cmdline"])
                      if (cmd := p.info["cmdline"] or [])[:2] == ["sh", "-c"] and self.marker in cmd[2])

    def everything(self) -> list[int]:
        """Programs, shims and inits of this test."""
        return [p.pid for p in psutil.process_iter(["cmdline"]) if self.marker in " ".join(p.info["cmdline"] or ())]


@pytest.fixture(params=["plain", "isolated"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Env]:
    if request.param == "isolated" and not ROOT:
        pytest.skip("cgroups and namespaces need root")
    env = Env(tmp_path, request.param == "isolated", f"crash-{secrets.token_hex(6)}",
              f"/kubeletapi-test-{secrets.token_hex(4)}")
    try:
        yield env
    finally:
        for pid in env.everything():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if env.isolated:
            wait_until(lambda: not env.everything(), "the test's processes to die")
            remove_cgroup_root(env.cgroup_root)


def wait_until(check: Any, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


async def remove_all(rt: ProcessRuntime, env: Env) -> None:
    """Remove every sandbox; nothing of the test may be left running, nor any cgroup."""
    for sandbox in await rt.list_pod_sandboxes():
        await rt.remove_pod_sandbox(sandbox.id)
        if env.isolated:
            assert cgroup_dirs(sandbox.cgroup_parent) == []
    assert await rt.list_containers() == []
    wait_until(lambda: not env.everything(), "every process of the test to exit")


# --- the state dir ------------------------------------------------------------------------------------
def test_leftovers_of_a_crash_are_removed_with_one_line_each(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        rt = env.runtime()
        sandbox, cid = await env.created(rt)
        leftovers = [
            env.state / "sandboxes" / secrets.token_hex(32),  # mkdir, then killed before sandbox.json
            env.state / "sandboxes" / f".{secrets.token_hex(32)}.new",  # killed while creating it
            env.state / "containers" / secrets.token_hex(32),  # removal killed after container.json went
            env.state / "containers" / f".{secrets.token_hex(32)}.gone",  # killed while removing it
        ]
        for path in leftovers:
            path.mkdir()
        (leftovers[1] / "sandbox.json").write_text('{"id": ')
        (leftovers[2] / "shim.log").write_text("")
        # Killed while replacing a record: the new version torn in its temporary file, the old one whole.
        (env.state / "containers" / cid / ".container.json.tmp").write_text('{"id": "')
        with caplog.at_level(logging.INFO, LOGGER):
            again = env.runtime()
        removed = [r for r in caplog.records if "left by a crash" in r.getMessage()]
        assert {r.levelno for r in removed} == {logging.WARNING}
        assert sorted(str(p) for p in leftovers for r in removed if f" {p} (" in r.getMessage()) == sorted(
            str(p) for p in leftovers), "one line for each leftover"
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert not [p for p in leftovers if p.exists()]
        assert [s.id for s in await again.list_pod_sandboxes()] == [sandbox]
        assert [c.id for c in await again.list_containers()] == [cid]
        caplog.clear()
        with caplog.at_level(logging.INFO, LOGGER):
            env.runtime()
        assert [r.getMessage() for r in caplog.records if r.levelno > logging.INFO] == []
        await remove_all(again, env)
    asyncio.run(go())


def test_a_record_directory_appears_with_its_record(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    config = SandboxConfig(meta=PodMeta("p", "default", "u"), hostname="p", log_directory=str(tmp_path),
                           cgroup_parent="")
    stale = tmp_path / "sandboxes" / ".abc.new"  # a crash while creating the same record before
    stale.mkdir()
    (stale / "sandbox.json").write_text("{")
    state.save_sandbox(SandboxRecord("abc", config, 1))
    assert sorted(p.name for p in (tmp_path / "sandboxes").iterdir()) == ["abc"]
    assert sorted(p.name for p in (tmp_path / "sandboxes" / "abc").iterdir()) == ["sandbox.json"]
    state.remove_sandbox("abc")
    assert list((tmp_path / "sandboxes").iterdir()) == []
    loaded = state.load()
    assert (loaded.sandboxes, loaded.problems, loaded.removed) == ({}, [], [])
