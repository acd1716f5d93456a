"""The Runtime contract: the same tests for every runtime (process now, CRI later)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from kubeletapi.clock import RealClock
from kubeletapi.errors import InvalidInput
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.types import ContainerConfig, ContainerState, Mount, Resources
from tests.contract.conftest import RuntimeCase


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def config(name: str, *cmd: str, **kw) -> ContainerConfig:  # type: ignore[no-untyped-def]
    return ContainerConfig(name=name, attempt=kw.pop("attempt", 0), image="busybox:1.36", command=cmd,
                           log_path=f"{name}/{kw.get('attempt', 0)}.log", **kw)


async def started(case: RuntimeCase, cfg: ContainerConfig) -> tuple[str, str]:
    rt = case.runtime
    sandbox = await rt.run_pod_sandbox(case.sandbox_config())
    cid = await rt.create_container(sandbox, cfg)
    await rt.start_container(cid)
    return sandbox, cid


async def wait_state(rt: ProcessRuntime, cid: str, state: ContainerState, timeout: float = 10):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        status = await rt.container_status(cid)
        if status.state is state or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.02)


def test_version(case: RuntimeCase) -> None:
    version = run(case.runtime.version())
    assert version.runtime_api_version == "v1" and version.runtime_name


def test_sandbox_lifecycle(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        cfg = case.sandbox_config("web")
        sid = await rt.run_pod_sandbox(cfg)
        (sandbox,) = await rt.list_pod_sandboxes()
        assert (sandbox.id, sandbox.meta.uid, sandbox.state.value) == (sid, cfg.meta.uid, "SANDBOX_READY")
        assert Path(cfg.log_directory).is_dir()
        await rt.stop_pod_sandbox(sid)
        assert (await rt.list_pod_sandboxes())[0].state.value == "SANDBOX_NOTREADY"
        await rt.remove_pod_sandbox(sid)
        assert await rt.list_pod_sandboxes() == []
    run(go())


def test_run_log_and_exit(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config("c", "sh", "-c", "echo out; echo err >&2; exit 3"))
        status = await wait_state(rt, cid, ContainerState.EXITED)
        assert (status.exit_code, status.reason) == (3, "Error")
        assert status.started_at and status.finished_at >= status.started_at
        lines = Path(status.log_path).read_text().splitlines()
        assert [line.split(" ", 1)[1] for line in lines] == ["stdout F out", "stderr F err"]
        assert status.log_path.endswith("/c/0.log")
    run(go())


def test_completed(case: RuntimeCase) -> None:
    async def go() -> None:
        _, cid = await started(case, config("c", "true"))
        status = await wait_state(case.runtime, cid, ContainerState.EXITED)
        assert (status.exit_code, status.reason, status.signal) == (0, "Completed", 0)
    run(go())


def test_no_command_is_a_config_error(case: RuntimeCase) -> None:
    async def go() -> None:
        sandbox = await case.runtime.run_pod_sandbox(case.sandbox_config())
        with pytest.raises(InvalidInput, match="the process runtime needs a command"):
            await case.runtime.create_container(sandbox, config("c"))
    run(go())


def test_start_error(case: RuntimeCase) -> None:
    async def go() -> None:
        _, cid = await started(case, config("c", "no-such-program-x"))
        status = await wait_state(case.runtime, cid, ContainerState.EXITED)
        assert (status.reason, status.exit_code) == ("StartError", 128)
        assert "no-such-program-x" in status.message
    run(go())


def test_stop_graceful_and_forced(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        _, polite = await started(case, config("polite", "sleep", "300"))
        _, stubborn = await started(case, config("stubborn", "sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"))
        t0 = time.monotonic()
        await rt.stop_container(polite, 10)
        assert time.monotonic() - t0 < 3
        assert (await rt.container_status(polite)).exit_code == 143
        t0 = time.monotonic()
        await rt.stop_container(stubborn, 0.5)
        assert 0.4 < time.monotonic() - t0 < 5
        status = await rt.container_status(stubborn)
        assert (status.exit_code, status.signal) == (137, 9)
    run(go())


def test_exec_sync(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config("c", "sleep", "300", envs=(("GREETING", "hi"),)))
        result = await rt.exec_sync(cid, ["sh", "-c", "echo $GREETING; echo e >&2; exit 4"], 10)
        assert (result.exit_code, result.stdout, result.stderr) == (4, b"hi\n", b"e\n")
        with pytest.raises(Exception, match="timed out"):
            await rt.exec_sync(cid, ["sleep", "5"], 0.3)
        await rt.stop_container(cid, 5)
        with pytest.raises(InvalidInput, match="not running"):
            await rt.exec_sync(cid, ["true"], 5)
    run(go())


def test_remove_keeps_logs(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        sandbox, cid = await started(case, config("c", "echo", "bye"))
        status = await wait_state(rt, cid, ContainerState.EXITED)
        await rt.remove_container(cid)
        assert await rt.list_containers() == []
        assert "bye" in Path(status.log_path).read_text()
        await rt.remove_pod_sandbox(sandbox)
        assert Path(status.log_path).exists()
    run(go())


def test_readoption_by_a_new_runtime(case: RuntimeCase, tmp_path: Path) -> None:
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config("c", "sh", "-c", "read x; exit 7", stdin=True))
        before = await rt.container_status(cid)
        cgroups = rt._cgroups  # the same machine's cgroups
        again = ProcessRuntime(tmp_path / "state", shim_path(), RealClock(), cgroups=cgroups,
                               namespaces=case.isolated)
        after = await again.container_status(cid)
        assert (after.state, after.pid, after.started_at) == (ContainerState.RUNNING, before.pid, before.started_at)
        fifo = tmp_path / "state" / "containers" / cid / "stdin"
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.write(fd, b"go\n")
        os.close(fd)
        status = await wait_state(again, cid, ContainerState.EXITED)
        assert status.exit_code == 7  # an exit after the restart is seen
    run(go())


def test_lost_shim_is_reported_not_hidden(case: RuntimeCase, tmp_path: Path) -> None:
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config("c", "sleep", "300"))
        state = json.loads((tmp_path / "state" / "containers" / cid / "container.json").read_text())
        for pid in (state["shim_pid"], state["init_pid"], state["app_pid"]):
            if pid:
                os.kill(pid, 9)
        status = await wait_state(rt, cid, ContainerState.EXITED)
        assert status.reason in ("ContainerStatusUnknown", "Error")
    run(go())


def test_isolation(case: RuntimeCase, tmp_path: Path) -> None:
    if not case.isolated:
        pytest.skip("namespaces and mounts need root")
    data = tmp_path / "data"
    data.mkdir()
    (data / "hello").write_text("from the host\n")

    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config(
            "c", "sleep", "300", mounts=(Mount("/mnt/data", str(data), readonly=True), Mount("/scratch", tmpfs=True)),
            working_dir="/mnt/data",
        ))
        result = await rt.exec_sync(cid, ["sh", "-c", "hostname; cat hello; pwd; echo $$; touch x 2>&1 | head -c 0; "
                                          "test -w /mnt/data && echo rw || echo ro; mount | grep -c ' /scratch '"], 10)
        out = result.stdout.decode().split()
        assert out[0] == "p" and "from" in out and "/mnt/data" in out and "ro" in out
        assert out[-1] == "1"
        assert (await rt.container_status(cid)).pid != 2  # the host pid
    run(go())


def test_mounts_need_isolation(case: RuntimeCase) -> None:
    if case.isolated:
        pytest.skip("only the plain runtime refuses mounts")

    async def go() -> None:
        sandbox = await case.runtime.run_pod_sandbox(case.sandbox_config())
        with pytest.raises(InvalidInput, match="volume mounts"):
            await case.runtime.create_container(sandbox, config("c", "true", mounts=(Mount("/x", "/tmp"),)))
    run(go())


def test_oom_killed(case: RuntimeCase) -> None:
    if not case.isolated:
        pytest.skip("memory limits need cgroups")

    async def go() -> None:
        hog = "import time; b = []\nwhile True: b.append(bytearray(8 << 20)); time.sleep(0.001)"
        _, cid = await started(case, config("hog", "python3", "-c", hog,
                                            resources=Resources(memory_limit=64 << 20)))
        status = await wait_state(case.runtime, cid, ContainerState.EXITED, timeout=30)
        assert (status.reason, status.exit_code) == ("OOMKilled", 137)
    run(go())
