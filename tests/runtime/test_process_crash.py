"""The process runtime after an agent died at each point of a container start (issue 13, defect 3).

Each test leaves the state directory as a kill -9 at that point leaves it (the runtime's own
record rewound to what it had saved by then, real shims where a live process is needed), then
builds a new runtime on it, as a restarted agent does, and checks that the container is adopted,
started once, or reported as a failed start, never started a second time under the same id. The
crash points, in the order of start_container:

  created, start not begun        the container is CREATED; a start starts it (runtime contract)
  start recorded, shim never ran  no shim.pid, lock free: CREATED again, started once
  shim launched, still starting   the lock is held: start/stop wait for the shim, remove refuses
  shim recorded its start         adopted: RUNNING with the shim's pids
  shim recorded its exit          adopted: EXITED with its status
  shim ran and vanished           shim.pid, lock free, nothing recorded: StartError, leftovers killed

Plain (no cgroups, as any user) and isolated (root: cgroups and namespaces) runtimes both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import RealClock
from kubeletapi.errors import InvalidInput
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.process.shimfiles import ShimFiles
from kubeletapi.runtime.process.state import SandboxRecord, StateDir
from kubeletapi.runtime.types import ContainerConfig, ContainerState, PodMeta, SandboxConfig
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

    def begin_start(self, cid: str) -> None:
        """The record as start_container saves it before it launches the shim."""
        record = self.record(cid)
        sandbox = json.loads((self.state / "sandboxes" / record["sandbox_id"] / "sandbox.json").read_text())
        parent = sandbox["config"]["cgroup_parent"]
        record.update(start_requested=True, cgroup=f"{parent}/{cid}" if parent else "")
        (self.container_dir(cid) / "container.json").write_text(json.dumps(record))

    def rewind(self, cid: str) -> None:
        """A started container's record as it was before the shim's files were read back: what an
        agent killed while the shim launcher ran (or right after it returned) has saved."""
        record = self.record(cid)
        assert record["started_at"]
        record.update(started_at=0, app_pid=0, init_pid=0, shim_pid=0, start_ticks={}, finished_at=0, exit_code=0,
                      signal=0, reason="", message="", exited=False)
        (self.container_dir(cid) / "container.json").write_text(json.dumps(record))

    def apps(self) -> list[int]:
        """The containers' programs: shells whose command line carries the marker (not the
        shell's fork for `sleep` caught before its exec)."""
        shells = {p.pid: p.info["ppid"] for p in psutil.process_iter(["cmdline", "ppid"])
                  if (cmd := p.info["cmdline"] or [])[:2] == ["sh", "-c"] and self.marker in cmd[2]}
        return sorted(pid for pid, ppid in shells.items() if ppid not in shells)

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


# --- each crash point -----------------------------------------------------------------------------
def test_start_begun_and_no_shim_ran_starts_once(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        _, cid = await env.created(env.runtime())
        env.begin_start(cid)  # killed after saving the start, before launching the shim
        with caplog.at_level(logging.INFO, LOGGER):
            again = env.runtime()
        assert "no shim ever ran, it starts afresh" in caplog.text
        assert (await again.container_status(cid)).state is ContainerState.CREATED
        await again.start_container(cid)
        status = await again.container_status(cid)
        assert status.state is ContainerState.RUNNING
        assert env.apps() == [status.pid]
        await remove_all(again, env)
    asyncio.run(go())


def test_start_recorded_by_the_shim_is_adopted_not_repeated(env: Env) -> None:
    async def go() -> None:
        rt = env.runtime()
        _, cid = await env.created(rt)
        await rt.start_container(cid)
        before = await rt.container_status(cid)
        env.rewind(cid)  # killed before the shim's files were read back
        again = env.runtime()
        status = await again.container_status(cid)
        assert (status.state, status.pid, status.started_at) == (ContainerState.RUNNING, before.pid, before.started_at)
        with pytest.raises(InvalidInput, match="already started"):
            await again.start_container(cid)
        assert env.apps() == [before.pid], "one program, the one the first shim runs"
        assert again.shim_pids() == [ShimFiles(env.container_dir(cid)).shim_pid()]
        await remove_all(again, env)
    asyncio.run(go())


def test_exit_recorded_while_no_agent_ran_is_adopted(env: Env) -> None:
    async def go() -> None:
        rt = env.runtime()
        _, cid = await env.created(rt, "exit 3")
        await rt.start_container(cid)
        wait_until((env.container_dir(cid) / "exit").exists, "the shim's exit file")
        env.rewind(cid)
        again = env.runtime()
        status = await again.container_status(cid)
        assert (status.state, status.exit_code, status.reason) == (ContainerState.EXITED, 3, "Error")
        assert status.started_at
        with pytest.raises(InvalidInput, match="already started"):
            await again.start_container(cid)
        await remove_all(again, env)
    asyncio.run(go())


def test_a_shim_still_starting_is_waited_for_never_doubled(env: Env) -> None:
    async def go() -> None:
        rt = env.runtime()
        _, cid = await env.created(rt)
        env.begin_start(cid)
        # The dead agent had taken the lock and launched a shim that has not recorded anything yet:
        # this test holds the lock in its place and plays that shim below.
        lock = ShimFiles(env.container_dir(cid)).lock()
        again = env.runtime()
        assert (await again.container_status(cid)).state is ContainerState.CREATED
        with pytest.raises(InvalidInput, match="being started"):
            await again.remove_container(cid)
        starting = asyncio.create_task(again.start_container(cid))
        stopping = asyncio.create_task(again.stop_container(cid, 0))
        await asyncio.sleep(0.3)
        assert not starting.done() and not stopping.done(), "both wait for the shim under way"
        assert env.apps() == []
        record = env.record(cid)
        Path(record["log_path"]).parent.mkdir(parents=True)
        shim = await asyncio.create_subprocess_exec(
            str(shim_path()), "run", "--state", str(env.container_dir(cid)), "--lock-fd", str(lock),
            "--log", str(Path(record["log_path"])), "--", *record["config"]["command"], pass_fds=(lock,))
        os.close(lock)
        assert await shim.wait() == 0
        await asyncio.wait_for(starting, 10)
        await asyncio.wait_for(stopping, 20)
        status = await again.container_status(cid)
        started = ShimFiles(env.container_dir(cid)).started()
        assert started is not None, (env.container_dir(cid) / "exit").read_text()
        assert (status.state, status.reason, status.started_at) == (ContainerState.EXITED, "Error", started.at)
        assert env.apps() == []
        await remove_all(again, env)
    asyncio.run(go())


def test_a_shim_that_vanished_without_a_word_is_a_start_error(env: Env) -> None:
    async def go() -> None:
        rt = env.runtime()
        _, cid = await env.created(rt)
        env.begin_start(cid)
        # Its daemon wrote its pid and died (the lock is free) before recording a start or an exit;
        # as root the program it may have forked is in the container's cgroup: a stand-in is put there.
        (env.container_dir(cid) / "shim.pid").write_text("999999999\n")
        orphan = None
        if env.isolated:
            cgroup = env.record(cid)["cgroup"]
            writer = new_writer(detect())
            writer.create(cgroup)
            orphan = subprocess.Popen(["sh", "-c", f"sleep 60; : {env.marker}"])
            for procs in writer.procs_files(cgroup):
                procs.write_text(str(orphan.pid))
        again = env.runtime()
        status = await again.container_status(cid)
        assert (status.state, status.reason, status.exit_code) == (ContainerState.EXITED, "StartError", 128)
        assert "without recording a start" in status.message
        with pytest.raises(InvalidInput, match="already started"):
            await again.start_container(cid)
        if orphan is not None:
            assert orphan.wait(timeout=10) == -signal.SIGKILL
        assert env.apps() == []
        await remove_all(again, env)
    asyncio.run(go())


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
