"""Container log rotation on the session's private containerd: containerd writes the CRI log,
ContainerLogRotator renames it aside and asks for ReopenContainerLog, and the shared reader
(runtime/logs.py) serves every line across the rotations, following or not."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import pytest

from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import RealClock
from kubeletapi.errors import KubeletError
from kubeletapi.pods.logrotation import ContainerLogRotator
from kubeletapi.runtime.cri import CRIRuntime
from kubeletapi.runtime.logfiles import rotated_files
from kubeletapi.runtime.logoptions import PodLogOptions
from kubeletapi.runtime.logs import read_logs
from kubeletapi.runtime.types import ContainerConfig, ContainerState, ContainerStatus, PodMeta, SandboxConfig
from tests.cri.cleanup import cgroup_dirs, remove_cgroup_root
from tests.cri.fixtures import CRIEnv

pytestmark = pytest.mark.cri

MAX_SIZE = 4096
MAX_FILES = 3  # the current file and two rotated ones
ROTATIONS = 4
COUNTER = "i=0; while true; do echo line $i; i=$((i+1)); usleep 2000; done"
LINE = re.compile(rb"line ([0-9]+)")


class OneSandbox:
    """The runtime as the rotator sees it, limited to this test's sandbox: another test's
    containers on the same containerd are not ours to rotate."""

    def __init__(self, runtime: CRIRuntime, sandbox_id: str) -> None:
        self.runtime, self.sandbox_id = runtime, sandbox_id

    async def list_containers(self) -> Sequence[ContainerStatus]:
        return [c for c in await self.runtime.list_containers() if c.sandbox_id == self.sandbox_id]

    async def reopen_container_log(self, container_id: str) -> None:
        await self.runtime.reopen_container_log(container_id)


async def until(cond: Callable[[], Awaitable[bool] | bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        answer = cond()
        if answer if isinstance(answer, bool) else await answer:
            return
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def numbers(output: bytes) -> list[int]:
    found = []
    for line in output.splitlines():
        m = LINE.fullmatch(line)
        assert m, f"unexpected output line {line!r}"
        found.append(int(m.group(1)))
    return found


def consecutive(found: list[int]) -> bool:
    return bool(found) and found == list(range(found[0], found[0] + len(found)))


async def read_file(path: str) -> bytes:
    stream = read_logs(path, PodLogOptions())
    try:
        return b"".join([chunk async for chunk in stream])
    finally:
        await stream.aclose()


async def scenario(env: CRIEnv, tmp_path: Path, cgroup_root: str) -> None:
    runtime = CRIRuntime(env.endpoint, cgroups=new_writer(detect()))
    sandbox_id = ""
    try:
        uid = secrets.token_hex(8)
        sandbox_id = await runtime.run_pod_sandbox(SandboxConfig(
            meta=PodMeta(name="rotate", namespace="default", uid=uid), hostname="",
            log_directory=str(tmp_path / "logs" / f"default_rotate_{uid}"),
            cgroup_parent=f"{cgroup_root}/kubepods/pod{uid}"))
        cid = await runtime.create_container(sandbox_id, ContainerConfig(
            name="counter", attempt=0, image=env.busybox, command=("sh", "-c", COUNTER), log_path="counter/0.log"))
        await runtime.start_container(cid)
        status = await runtime.container_status(cid)
        assert status.state is ContainerState.RUNNING
        path = status.log_path
        assert path == str(tmp_path / "logs" / f"default_rotate_{uid}" / "counter" / "0.log")
        rotator = ContainerLogRotator(OneSandbox(runtime, sandbox_id), MAX_SIZE, MAX_FILES, RealClock())

        async def running() -> bool:
            with contextlib.suppress(KubeletError):
                return (await runtime.container_status(cid)).state is ContainerState.RUNNING
            return False

        # A follower from the very first line, reading as /containerLogs?follow=true does.
        await until(lambda: Path(path).exists(), "the log file")
        followed = bytearray()
        stream = read_logs(path, PodLogOptions(follow=True), container_running=running, poll_interval=0.02)

        async def follow() -> None:
            async for chunk in stream:
                followed.extend(chunk)

        follower = asyncio.create_task(follow())
        try:
            targets = []
            for _ in range(ROTATIONS):
                await until(lambda: Path(path).stat().st_size >= MAX_SIZE, "the log to reach its max size")
                (target,) = await rotator.rotate_once()
                assert re.fullmatch(re.escape(path) + r"\.[0-9]{8}-[0-9]{6}(\.[0-9]+)?", target), target
                targets.append(target)
                # containerd writes to a new file at the path, the lines after the rotated file's last.
                await until(lambda: Path(path).exists() and Path(path).stat().st_size > 0, "a fresh log file")
                first = numbers(Path(path).read_bytes().splitlines()[0].split(b" ", 3)[3])[0]
                last = numbers(Path(target).read_bytes().splitlines()[-1].split(b" ", 3)[3])[-1]
                assert first == last + 1
            # The newest MAX_FILES-1 rotated files are kept, the older ones removed.
            assert rotated_files(path) == targets[-(MAX_FILES - 1):]
            assert all(not Path(t).exists() for t in targets[: -(MAX_FILES - 1)])

            # Each file read on its own (oldest first, then the current one): no line lost or repeated.
            current_first = numbers(await read_file(path))[0]
            on_disk = []
            for name in [*rotated_files(path), path]:
                on_disk += numbers(await read_file(name))
            assert consecutive(on_disk), on_disk
            assert on_disk[0] > 0  # the oldest were pruned

            # The follower went through every rotation: from line 0, in order, nothing lost.
            await until(lambda: bool(followed) and numbers(bytes(followed))[-1] > current_first + 10,
                        "the follower to read the current file")
            await runtime.stop_container(cid, 0)
            await asyncio.wait_for(follower, 10)  # the container stopped: the stream ends
            lines = numbers(bytes(followed))
            assert lines[0] == 0 and consecutive(lines), [n for a, n in itertools.pairwise(lines)
                                                          if n != a + 1]
            assert stream.stats.rotations == ROTATIONS
            assert lines[-1] >= on_disk[-1]
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
            await stream.aclose()
    finally:
        try:
            if sandbox_id:
                await runtime.stop_pod_sandbox(sandbox_id)
                await runtime.remove_pod_sandbox(sandbox_id)
                assert sandbox_id not in {s.id for s in await runtime.list_pod_sandboxes()}
        finally:
            await runtime.close()


def test_containerd_logs_rotate_and_read_across_rotations(cri_env: CRIEnv, tmp_path: Path) -> None:
    cgroup_root = f"/kubeletapi-test-{secrets.token_hex(4)}"
    try:
        asyncio.run(scenario(cri_env, tmp_path, cgroup_root))
    finally:
        remove_cgroup_root(cgroup_root)
    assert cgroup_dirs(cgroup_root) == [], f"cgroups left under {cgroup_root}"
