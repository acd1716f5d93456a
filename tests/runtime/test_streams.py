"""The process runtime's streams: exec sessions, attach and port-forward, end to end.

Real shims and real processes, like the contract suite: every test runs on the plain runtime and,
as root, on the isolated one (cgroups and namespaces). Each test checks it leaves nothing behind:
no process of a session (found by pid and session in /proc), no fd (/proc/self/fd), no task.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from kubeletapi.cgroups import detect, new_writer
from kubeletapi.clock import RealClock
from kubeletapi.errors import InvalidInput, NotFound, Unavailable
from kubeletapi.metrics.pods import PodMetrics
from kubeletapi.metrics.runtime import InstrumentedRuntime
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.streaming import STDERR, STDOUT, StreamOptions, StreamSession
from kubeletapi.runtime.types import ContainerConfig, ContainerState, PodMeta, SandboxConfig
from tests.helpers import collect_output

ROOT = os.geteuid() == 0
TTY = StreamOptions(stdin=True, stdout=True, stderr=False, tty=True)


# --- fixtures and helpers ------------------------------------------------------------------------
@dataclass
class Case:
    runtime: ProcessRuntime
    tmp: Path
    cgroup_root: str
    isolated: bool
    extra: list[ProcessRuntime] = field(default_factory=list)

    def new_runtime(self, **kw: Any) -> ProcessRuntime:
        """Another runtime on its own state dir (e.g. with other log limits), removed afterwards."""
        rt = ProcessRuntime(self.tmp / f"state-{secrets.token_hex(3)}", shim_path(), RealClock(),
                            cgroups=new_writer(detect()) if self.isolated else None, namespaces=self.isolated, **kw)
        self.extra.append(rt)
        return rt

    async def start(self, *cmd: str, rt: ProcessRuntime | None = None, **kw: Any) -> str:
        rt = rt or self.runtime
        uid = secrets.token_hex(8)
        parent = f"{self.cgroup_root}/kubepods/pod{uid}" if self.isolated else ""
        sandbox = await rt.run_pod_sandbox(SandboxConfig(
            meta=PodMeta(name="p", namespace="default", uid=uid), hostname="p",
            log_directory=str(self.tmp / "logs" / uid), cgroup_parent=parent))
        cid = await rt.create_container(sandbox, ContainerConfig(
            name="c", attempt=0, image="busybox", command=cmd, log_path="c/0.log", **kw))
        await rt.start_container(cid)
        return cid


@pytest.fixture(params=["plain", "isolated"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    isolated = request.param == "isolated"
    if isolated and not ROOT:
        pytest.skip("cgroups and namespaces need root")
    runtime = ProcessRuntime(tmp_path / "state", shim_path(), RealClock(),
                             cgroups=new_writer(detect()) if isolated else None, namespaces=isolated)
    c = Case(runtime, tmp_path, f"/kubeletapi-test-{secrets.token_hex(4)}", isolated)
    yield c
    for rt in [runtime, *c.extra]:
        asyncio.run(_remove_all(rt))
    if isolated:
        for hierarchy in detect().hierarchies:
            base = hierarchy.mount_point / c.cgroup_root.strip("/")
            if base.exists():
                for dirpath, _, _ in sorted(os.walk(base), key=lambda e: -len(e[0])):
                    Path(dirpath).rmdir()


async def _remove_all(rt: ProcessRuntime) -> None:
    for sandbox in await rt.list_pod_sandboxes():
        await rt.remove_pod_sandbox(sandbox.id)


def run(go: Callable[[], Awaitable[None]]) -> None:
    """Run the test's coroutine; it must leave no fd open and no task pending."""
    async def checked() -> None:
        fds = sorted(os.listdir("/proc/self/fd"))
        await go()
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
        assert sorted(os.listdir("/proc/self/fd")) == fds, "an fd was left open"
    asyncio.run(checked())


collect = functools.partial(collect_output, limit_s=20)


async def read_until(output: AsyncIterator[tuple[int, bytes]], needle: bytes, limit_s: float = 10,
                     into: dict[int, bytearray] | None = None) -> bytes:
    """Output up to the chunk holding `needle` (both streams; each also into `into[kind]`)."""
    got = bytearray()
    async with asyncio.timeout(limit_s):
        while needle not in got:
            kind, data = await anext(output)
            got.extend(data)
            if into is not None:
                into[kind].extend(data)
    return bytes(got)


def processes() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, session) of every live process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                fields = stat[stat.rfind(")") + 2 :].split()
                if fields[0] != "Z":
                    table[int(entry.name)] = (int(fields[1]), int(fields[3]))
    return table


def exec_processes(shim_pid: int) -> set[int]:
    """The shim, everything in its session, and everything in the sessions of its children (a
    tty command leads its own)."""
    table = processes()
    sessions = {shim_pid} | {pid for pid, (ppid, _) in table.items() if ppid == shim_pid}
    return {pid for pid, (_, sid) in table.items() if sid in sessions or pid == shim_pid}


def wait_gone(pids: set[int], limit_s: float = 5) -> set[int]:
    deadline = time.monotonic() + limit_s
    while (alive := pids & set(processes())) and time.monotonic() < deadline:
        time.sleep(0.01)
    return alive


def shim_pid(session: StreamSession) -> int:
    pid = getattr(session, "pid", 0)
    assert pid, "an exec session names its shim"
    return int(pid)


# --- exec -------------------------------------------------------------------------------------------
def test_exec_output_streams_env_and_exit_code(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300", envs=(("GREETING", "hi"),))
        session = await case.runtime.exec_stream(cid, ["sh", "-c", "echo $GREETING; echo oops >&2; exit 3"],
                                                 StreamOptions())
        try:
            assert await collect(session) == (b"hi\n", b"oops\n", 3)
        finally:
            await session.close()
    run(go)


def test_exec_only_the_streams_asked_for(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(cid, ["sh", "-c", "echo out; echo err >&2"],
                                                 StreamOptions(stdout=False, stderr=True))
        try:
            assert await collect(session) == (b"", b"err\n", 0)
        finally:
            await session.close()
    run(go)


def test_exec_missing_command_is_127_with_the_reason(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(cid, ["no-such-command-x"], StreamOptions())
        try:
            out, err, code = await collect(session)
        finally:
            await session.close()
        assert (out, code) == (b"", 127)
        assert b'"no-such-command-x": executable file not found in $PATH' in err
    run(go)


def test_exec_refused_for_unknown_or_stopped_containers(case: Case) -> None:
    async def go() -> None:
        with pytest.raises(NotFound):
            await case.runtime.exec_stream("nope", ["true"], StreamOptions())
        cid = await case.start("true")
        deadline = time.monotonic() + 5
        while (await case.runtime.container_status(cid)).state is not ContainerState.EXITED:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        with pytest.raises(InvalidInput, match="not running"):
            await case.runtime.exec_stream(cid, ["true"], StreamOptions())
        with pytest.raises(InvalidInput, match="not running"):
            await case.runtime.attach(cid, StreamOptions())
    run(go)


def test_exec_stdin_round_trip_and_eof(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(cid, ["cat"], StreamOptions(stdin=True))
        payload = os.urandom(3 << 20)  # more than pipes hold: writing has to wait for cat

        async def feed() -> None:
            for i in range(0, len(payload), 100_000):
                await session.write_stdin(payload[i : i + 100_000])
            await session.close_stdin()
        try:
            (out, err, code), _ = await asyncio.gather(collect(session), feed())
        finally:
            await session.close()
        assert (len(out), out == payload, err, code) == (len(payload), True, b"", 0)
    run(go)


def test_exec_writing_after_the_exit_is_harmless(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        for opts in (StreamOptions(stdin=True), TTY):
            session = await case.runtime.exec_stream(cid, ["true"], opts)
            try:
                assert (await collect(session))[2] == 0
                await session.write_stdin(b"too late\n" * 10000)
                await session.close_stdin()
                await session.resize(80, 24)
            finally:
                await session.close()
    run(go)


def test_exec_tty_size_sane_mode_and_merged_stderr(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(
            cid, ["sh", "-c", "read x; stty size; echo to-stderr >&2; stty -a; tty; echo term=$TERM; exit 5"], TTY)
        try:
            await session.resize(100, 40)
            await session.write_stdin(b"go\n")
            out, err, code = await collect(session)
        finally:
            await session.close()
        assert (err, code) == (b"", 5)
        text = out.decode()
        assert text.startswith("go\r\n40 100\r\nto-stderr\r\n"), "echo, the size, stderr on the terminal"
        flags = text.split()
        assert {"echo", "icanon", "isig", "onlcr"} <= set(flags), "a new terminal's sane mode"
        assert "/dev/pts/" in text and "term=xterm" in text
    run(go)


def test_exec_tty_resize_while_running(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(
            cid, ["sh", "-c", 'trap "stty size" WINCH; echo ready; while :; do sleep 0.02; done'], TTY)
        output = session.output()
        try:
            await read_until(output, b"ready")
            await session.resize(120, 30)
            await read_until(output, b"30 120\r\n")
            await session.resize(90, 20)
            await read_until(output, b"20 90\r\n")
        finally:
            await session.close()
        assert await session.wait() == 137
    run(go)


def test_exec_tty_close_stdin_is_end_of_input(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(cid, ["sh", "-c", "cat; echo cat=$?"], TTY)
        try:
            await session.write_stdin(b"line\nunfinished")
            await session.close_stdin()
            out, _, code = await collect(session)
        finally:
            await session.close()
        # The terminal echoes input as it arrives, cat repeats each line as it is handed over.
        assert out.replace(b"\r\n", b"\n").count(b"line\n") == 2
        assert out.endswith(b"cat=0\r\n") and code == 0
    run(go)


def test_exec_20_mb_arrive_whole_and_in_order(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        n = 2_700_000
        session = await case.runtime.exec_stream(cid, ["sh", "-c", f"seq 1 {n}; echo last-words >&2"],
                                                 StreamOptions())
        try:
            out, err, code = await collect(session, limit_s=60)
        finally:
            await session.close()
        expected = "".join(f"{i}\n" for i in range(1, n + 1)).encode()
        assert len(expected) > 20_000_000
        assert (len(out), out == expected, err, code) == (len(expected), True, b"last-words\n", 0)
    run(go)


def test_exec_tty_output_right_before_the_exit_is_not_lost(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        for _ in range(3):
            session = await case.runtime.exec_stream(cid, ["sh", "-c", "seq 1 100000; printf end"], TTY)
            try:
                out, _, code = await collect(session)
            finally:
                await session.close()
            expected = "".join(f"{i}\r\n" for i in range(1, 100_001)).encode() + b"end"
            assert (out == expected, code) == (True, 0)
    run(go)


@pytest.mark.parametrize("tty", [False, True], ids=["pipes", "tty"])
def test_exec_close_mid_output_kills_everything(case: Case, tty: bool) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        # Ignoring SIGHUP and SIGTERM, forking a sleeper: only SIGKILL of everything ends this.
        script = "trap '' HUP TERM; sleep 300 & sleep 301 & yes"
        session = await case.runtime.exec_stream(cid, ["sh", "-c", script], TTY if tty else StreamOptions())
        output = session.output()
        got = 0
        while got < 1 << 20:
            got += len((await anext(output))[1])
        pids = exec_processes(shim_pid(session))
        assert len(pids) >= 5, "shim, sh, two sleeps, yes"
        await session.close()
        assert wait_gone(pids) == set()
        assert await session.wait() == 137
        await session.close()  # idempotent
        assert [chunk async for chunk in output] == []
    run(go)


def test_exec_close_while_output_is_being_read_and_twice_at_once(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(cid, ["yes"], StreamOptions())
        pids = exec_processes(shim_pid(session))
        received = 0

        async def reader() -> None:
            nonlocal received
            async for _, data in session.output():
                received += len(data)

        task = asyncio.create_task(reader())
        while received < 1 << 20:
            await asyncio.sleep(0.005)
        await asyncio.gather(session.close(), session.close())
        await asyncio.wait_for(task, 5)
        assert wait_gone(pids) == set()
    run(go)


def test_exec_client_gone_without_reading(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(cid, ["sh", "-c", "yes & exec cat"], StreamOptions(stdin=True))
        await asyncio.sleep(0.2)
        pids = exec_processes(shim_pid(session))
        await session.close()
        assert wait_gone(pids) == set()
    run(go)


def test_exec_output_ends_despite_a_leftover_holding_the_pipe(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        session = await case.runtime.exec_stream(cid, ["sh", "-c", "sleep 3 & echo done"], StreamOptions())
        t0 = time.monotonic()
        try:
            assert await collect(session) == (b"done\n", b"", 0)
        finally:
            await session.close()
        assert time.monotonic() - t0 < 2
    run(go)


def test_exec_sync_max_output_bounds_a_flood(case: Case) -> None:
    async def go() -> None:
        rt = case.runtime
        cid = await case.start("sleep", "300")
        result = await rt.exec_sync(cid, ["sh", "-c", "head -c 30000000 /dev/zero; echo done >&2; exit 2"], 30,
                                    max_output=10240)
        assert (len(result.stdout), result.stderr, result.exit_code) == (10240, b"done\n", 2)
        with pytest.raises(Unavailable, match="timed out"):
            await rt.exec_sync(cid, ["yes"], 0.5, max_output=100)
        full = await rt.exec_sync(cid, ["head", "-c", "300000", "/dev/zero"], 10)
        assert len(full.stdout) == 300000
    run(go)


def test_instrumented_runtime_counts_stream_operations(case: Case) -> None:
    async def go() -> None:
        registry = CollectorRegistry()
        rt = InstrumentedRuntime(case.runtime, PodMetrics(registry))
        cid = await case.start("sleep", "300")
        session = await rt.exec_stream(cid, ["true"], StreamOptions())
        await collect(session)
        await session.close()
        with pytest.raises(NotFound):
            await rt.attach("nope", StreamOptions())
        assert registry.get_sample_value("kubelet_runtime_operations_total", {"operation_type": "exec"}) == 1
        assert registry.get_sample_value("kubelet_runtime_operations_errors_total",
                                         {"operation_type": "attach"}) == 1
    run(go)


# --- attach -----------------------------------------------------------------------------------------
def log_path(rt: ProcessRuntime, cid: str) -> Path:
    return Path(rt._containers[cid].log_path)


async def wait_logged(rt: ProcessRuntime, cid: str, text: bytes) -> None:
    async with asyncio.timeout(10):
        while text not in log_path(rt, cid).read_bytes():
            await asyncio.sleep(0.01)


def test_attach_sees_new_output_only_and_ends_with_the_container(case: Case) -> None:
    async def go() -> None:
        rt = case.runtime
        long_line = "x" * 20000
        cid = await case.start("sh", "-c", f"echo old; read x; echo new-out; echo new-err >&2; printf {long_line}; "
                                           "read y; echo end; exit 4", stdin=True)
        await wait_logged(rt, cid, b"old")
        session = await rt.attach(cid, StreamOptions(stdin=True))
        try:
            await session.write_stdin(b"go\n")
            output = session.output()
            # The shim logs an unfinished line in P records of 16 KiB: each is delivered as it comes.
            first = {STDOUT: bytearray(), STDERR: bytearray()}
            await read_until(output, b"x" * 16384, into=first)
            await session.write_stdin(b"y\n")
            out, err, code = await collect(session)
        finally:
            await session.close()
        assert code == 4
        assert first[STDOUT] + out == b"new-out\n" + long_line.encode() + b"end\n"
        assert first[STDERR] + err == b"new-err\n"
        assert (await rt.container_status(cid)).exit_code == 4
    run(go)


def test_attach_output_is_the_logged_content(case: Case) -> None:
    async def go() -> None:
        rt = case.runtime
        cid = await case.start("sh", "-c", "read x; echo a; echo b >&2; printf 'no newline'; exit 0", stdin=True)
        session = await rt.attach(cid, StreamOptions(stdin=True))
        try:
            await session.write_stdin(b"go\n")
            out, err, code = await collect(session)
        finally:
            await session.close()
        assert (out, err, code) == (b"a\nno newline", b"b\n", 0)
    run(go)


def test_two_attachers_each_get_everything(case: Case) -> None:
    async def go() -> None:
        rt = case.runtime
        cid = await case.start("sh", "-c", "while read l; do echo got:$l; done", stdin=True)
        writer = await rt.attach(cid, StreamOptions(stdin=True, stderr=False))
        watcher = await rt.attach(cid, StreamOptions())
        try:
            for i in range(50):
                await writer.write_stdin(b"%d\n" % i)
            expected = b"".join(b"got:%d\n" % i for i in range(50))
            outs = [writer.output(), watcher.output()]
            got = await asyncio.gather(*(read_until(o, b"got:49\n") for o in outs))
            assert got == [expected, expected]
            await writer.close_stdin()
            await writer.write_stdin(b"ignored\n")  # detached: nothing reaches the container
        finally:
            await writer.close()
            await watcher.close()
        status = await rt.container_status(cid)
        assert status.state is ContainerState.RUNNING, "detaching never affects the container"
        assert b"ignored" not in log_path(rt, cid).read_bytes()
    run(go)


def test_attach_stdin_to_cat(case: Case) -> None:
    async def go() -> None:
        rt = case.runtime
        cid = await case.start("cat", stdin=True)
        session = await rt.attach(cid, StreamOptions(stdin=True))
        try:
            await session.write_stdin(b"hello\n")
            assert await read_until(session.output(), b"hello\n") == b"hello\n"
        finally:
            await session.close()
    run(go)


def test_attach_stdin_needs_a_container_with_stdin(case: Case) -> None:
    async def go() -> None:
        cid = await case.start("sleep", "300")
        with pytest.raises(InvalidInput, match="has no stdin"):
            await case.runtime.attach(cid, StreamOptions(stdin=True))
        with pytest.raises(NotFound):
            await case.runtime.attach("nope", StreamOptions())
    run(go)


def test_attach_to_a_tty_container_with_resize_and_input(case: Case) -> None:
    async def go() -> None:
        rt = case.runtime
        # dash's read fails when a trapped signal interrupts it: loop on regardless.
        script = 'trap "stty size" WINCH; echo ready; while :; do read l && echo got:$l; done'
        cid = await case.start("sh", "-c", script, stdin=True, tty=True)
        await wait_logged(rt, cid, b"ready")
        session = await rt.attach(cid, TTY)
        output = session.output()
        try:
            await session.resize(100, 30)
            await read_until(output, b"30 100\r\n")
            await session.write_stdin(b"hi\n")
            got = await read_until(output, b"got:hi\r\n")
        finally:
            await session.close()
        assert got.endswith(b"hi\r\ngot:hi\r\n"), "the container's terminal echoes, then sh answers"
        assert (await rt.container_status(cid)).state is ContainerState.RUNNING
    run(go)


def test_attach_follows_rotation(case: Case) -> None:
    async def go() -> None:
        rt = case.new_runtime(log_max_size=16 * 1024, log_max_files=1000)
        n = 20000
        cid = await case.start("sh", "-c", f"read x; seq 1 {n}", rt=rt, stdin=True)
        session = await rt.attach(cid, StreamOptions(stdin=True))
        try:
            await session.write_stdin(b"go\n")
            out, _, code = await collect(session)
        finally:
            await session.close()
        assert len(list(log_path(rt, cid).parent.iterdir())) > 10, "the log was rotated"
        assert (out == "".join(f"{i}\n" for i in range(1, n + 1)).encode(), code) == (True, 0)
    run(go)


# --- port-forward -------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_port_forward_to_a_pod_server(case: Case) -> None:
    async def go() -> None:
        rt = case.runtime
        port = free_port()
        cid = await case.start("python3", "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               working_dir=str(case.tmp))
        sandbox = rt._containers[cid].sandbox_id
        async with asyncio.timeout(10):
            while True:
                try:
                    reader, writer = await rt.port_forward(sandbox, port)
                    break
                except Unavailable:
                    await asyncio.sleep(0.05)
        try:
            writer.write(b"GET / HTTP/1.0\r\n\r\n")
            await writer.drain()
            response = await reader.read()
        finally:
            writer.close()
            await writer.wait_closed()
        assert response.startswith(b"HTTP/1.0 200")
        with pytest.raises(NotFound):
            await rt.port_forward("nope", port)
        with pytest.raises(Unavailable, match="Connection refused"):
            await rt.port_forward(sandbox, free_port())
    run(go)
