"""The Runtime contract: the same tests for every runtime (conftest.py: process plain, process
isolated, CRI on containerd).

Where a runtime genuinely behaves otherwise (CRI has no signal in a status; a host-network CRI pod
has the node's hostname; PID 1 of a CRI container ignores a SIGTERM it does not handle), the
assertion is made per runtime, with the reason beside it. Tests of rules only one runtime has skip
on the others, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import socket
import time
from pathlib import Path

import pytest

from kubeletapi.errors import InvalidInput, KubeletError
from kubeletapi.runtime.streaming import StreamOptions
from kubeletapi.runtime.types import (
    CONTAINER_NAME,
    POD_UID,
    ContainerConfig,
    ContainerState,
    ContainerStatus,
    Mount,
    Resources,
    SandboxConfig,
)
from tests.contract.conftest import ContractRuntime, RuntimeCase
from tests.cri.cleanup import cgroup_dirs
from tests.helpers import collect_output

CRI_LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")  # RFC 3339 (nanoseconds), UTC


# containerd 1.6 detaches every output stream of an attach with stdin as soon as one of them ends
# (its ContainerIO.Attach), so what a container writes right before it exits can miss the attach
# (never its log). The commands attached to wait a moment between their last output and their exit.
LINGER = "sleep 0.2"


def config(case: RuntimeCase, name: str, *cmd: str, **kw) -> ContainerConfig:  # type: ignore[no-untyped-def]
    attempt = kw.pop("attempt", 0)
    return ContainerConfig(name=name, attempt=attempt, image=case.image, command=cmd,
                           log_path=f"{name}/{attempt}.log", **kw)


async def started(case: RuntimeCase, cfg: ContainerConfig) -> tuple[str, str]:
    rt = case.runtime
    sandbox = await rt.run_pod_sandbox(case.sandbox_config())
    cid = await rt.create_container(sandbox, cfg)
    await rt.start_container(cid)
    return sandbox, cid


async def wait_state(rt: ContractRuntime, cid: str, state: ContainerState, timeout: float = 10) -> ContainerStatus:
    deadline = time.monotonic() + timeout
    while True:
        status = await rt.container_status(cid)
        if status.state is state or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.02)


collect = functools.partial(collect_output, limit_s=10)


# --- lifecycle ---------------------------------------------------------------------------------------
def test_version(case: RuntimeCase) -> None:
    version = case.run(case.runtime.version())
    assert version.runtime_api_version == "v1" and version.runtime_name


def test_sandbox_lifecycle(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        cfg = case.sandbox_config("web")
        sid = await rt.run_pod_sandbox(cfg)
        (sandbox,) = await rt.list_pod_sandboxes()
        assert (sandbox.id, sandbox.meta.uid, sandbox.state.value) == (sid, cfg.meta.uid, "SANDBOX_READY")
        assert (sandbox.meta.name, sandbox.meta.namespace) == ("web", "default")
        assert Path(cfg.log_directory).is_dir()
        await rt.stop_pod_sandbox(sid)
        assert (await rt.list_pod_sandboxes())[0].state.value == "SANDBOX_NOTREADY"
        await rt.remove_pod_sandbox(sid)
        assert await rt.list_pod_sandboxes() == []
    case.run(go())


def test_run_log_and_exit(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config(case, "c", "sh", "-c", "echo out; echo err >&2; exit 3"))
        status = await wait_state(rt, cid, ContainerState.EXITED)
        assert (status.exit_code, status.reason) == (3, "Error")
        assert status.started_at and status.finished_at >= status.started_at
        assert status.log_path.endswith("/c/0.log") and Path(status.log_path).is_absolute()
        image = await rt.image_status(case.image)
        assert image is not None and (status.image, status.image_ref) == (case.image, image.ref)
        lines = [line.split(" ", 1) for line in Path(status.log_path).read_text().splitlines()]
        assert all(CRI_LOG_TIME.match(stamp) for stamp, _ in lines), lines
        # stdout and stderr are separate pipes: their order in the file is not part of the contract
        assert sorted(rest for _, rest in lines) == ["stderr F err", "stdout F out"]
    case.run(go())


def test_completed(case: RuntimeCase) -> None:
    async def go() -> None:
        _, cid = await started(case, config(case, "c", "true"))
        status = await wait_state(case.runtime, cid, ContainerState.EXITED)
        assert (status.exit_code, status.reason, status.signal) == (0, "Completed", 0)
    case.run(go())


def test_start_error(case: RuntimeCase) -> None:
    """A program that does not exist: start_container may refuse it (CRI: StartContainer fails) or
    report it later; either way the container ends EXITED, StartError, 128, naming the program."""
    async def go() -> None:
        rt = case.runtime
        sandbox = await rt.run_pod_sandbox(case.sandbox_config())
        cid = await rt.create_container(sandbox, config(case, "c", "no-such-program-x"))
        try:
            await rt.start_container(cid)
        except KubeletError as exc:
            assert "no-such-program-x" in str(exc)
        status = await wait_state(rt, cid, ContainerState.EXITED)
        assert (status.state, status.reason, status.exit_code) == (ContainerState.EXITED, "StartError", 128)
        assert "no-such-program-x" in status.message
    case.run(go())


def test_stop_graceful_and_forced(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        # A CRI container's command is PID 1 of its PID namespace, which the kernel shields from
        # every signal it has no handler for (SIGKILL aside): a bare `sleep` would ignore SIGTERM
        # there. The process runtime runs the command under its own init, so a plain `sleep` dies
        # of SIGTERM (signal 15 -> 143); under CRI the polite command handles TERM itself.
        polite_cmd = ("sh", "-c", "trap 'exit 143' TERM; sleep 300 & wait") if case.cri else ("sleep", "300")
        _, polite = await started(case, config(case, "polite", *polite_cmd))
        _, stubborn = await started(case, config(case, "stubborn", "sh", "-c",
                                                 "trap '' TERM; while :; do sleep 0.05; done"))
        t0 = time.monotonic()
        await rt.stop_container(polite, 10)
        assert time.monotonic() - t0 < 3
        status = await rt.container_status(polite)
        assert (status.state, status.exit_code) == (ContainerState.EXITED, 143)
        if not case.cri:
            assert status.signal == 15
        t0 = time.monotonic()
        await rt.stop_container(stubborn, 1)  # CRI counts the grace in whole seconds
        assert 0.9 < time.monotonic() - t0 < 5
        status = await rt.container_status(stubborn)
        assert (status.state, status.exit_code) == (ContainerState.EXITED, 137)
        if not case.cri:  # a CRI ContainerStatus has no signal: 0 whatever the exit code says
            assert status.signal == 9
    case.run(go())


def test_exec_sync(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config(case, "c", "sleep", "300", envs=(("GREETING", "hi"),)))
        result = await rt.exec_sync(cid, ["sh", "-c", "echo $GREETING; echo e >&2; exit 4"], 10)
        assert (result.exit_code, result.stdout, result.stderr) == (4, b"hi\n", b"e\n")
        result = await rt.exec_sync(cid, ["no-such-program-x"], 10)  # cannot start: 127 and the reason
        assert result.exit_code == 127 and b"no-such-program-x" in result.stderr
        flood = "yes | head -c 100000; yes e | head -c 5000 >&2"
        result = await rt.exec_sync(cid, ["sh", "-c", flood], 10, max_output=10)
        assert (result.exit_code, result.stdout, result.stderr) == (0, b"y\n" * 5, b"e\n" * 5)
        t0 = time.monotonic()
        with pytest.raises(KubeletError, match="timed out"):
            await rt.exec_sync(cid, ["sleep", "5"], 0.3)  # CRI: rounded up to 1 s
        assert time.monotonic() - t0 < 4.5
        await rt.stop_container(cid, 0)
        with pytest.raises(InvalidInput, match="not running"):
            await rt.exec_sync(cid, ["true"], 5)
    case.run(go())


def test_remove_keeps_logs(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        sandbox, cid = await started(case, config(case, "c", "echo", "bye"))
        status = await wait_state(rt, cid, ContainerState.EXITED)
        await rt.remove_container(cid)
        assert await rt.list_containers() == []
        assert "bye" in Path(status.log_path).read_text()
        parent = (await rt.list_pod_sandboxes())[0].cgroup_parent
        await rt.remove_pod_sandbox(sandbox)
        assert Path(status.log_path).exists()
        if case.isolated:  # the pod's cgroup goes with its sandbox, in every hierarchy
            assert parent and cgroup_dirs(parent) == []
    case.run(go())


def test_list_containers(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        sandbox, cid = await started(case, config(case, "c", "sleep", "300"))
        (listed,) = await rt.list_containers()
        assert (listed.id, listed.sandbox_id, listed.name, listed.state) == (cid, sandbox, "c", ContainerState.RUNNING)
        await rt.stop_container(cid, 0)
        (listed,) = await rt.list_containers()
        assert (listed.id, listed.state) == (cid, ContainerState.EXITED)
    case.run(go())


def test_list_filtered_by_pod_uid(case: RuntimeCase) -> None:
    """What a sync lists after changing its pod: that pod's sandboxes and containers, by label."""
    async def go() -> None:
        rt = case.runtime
        pods = {}
        for name in ("one", "two"):
            base = case.sandbox_config(name)
            labels = {POD_UID: base.meta.uid}
            cfg = SandboxConfig(meta=base.meta, hostname=base.hostname, log_directory=base.log_directory,
                                cgroup_parent=base.cgroup_parent, labels=labels)
            sandbox = await rt.run_pod_sandbox(cfg)
            cid = await rt.create_container(sandbox, config(case, "c", "true", labels=labels))
            pods[base.meta.uid] = (sandbox, cid)
        assert {s.id for s in await rt.list_pod_sandboxes()} == {s for s, _ in pods.values()}
        assert {c.id for c in await rt.list_containers()} == {c for _, c in pods.values()}
        for uid, (sandbox, cid) in pods.items():
            assert [s.id for s in await rt.list_pod_sandboxes(uid)] == [sandbox]
            assert [c.id for c in await rt.list_containers(uid)] == [cid]
        assert await rt.list_pod_sandboxes("no-such-pod") == []
        assert await rt.list_containers("no-such-pod") == []
    case.run(go())


def test_labels_and_annotations_round_trip(case: RuntimeCase) -> None:
    """What the kubelet re-adopts pods by: the io.kubernetes.* labels it set, listed back."""
    async def go() -> None:
        rt = case.runtime
        base = case.sandbox_config()
        cfg = SandboxConfig(meta=base.meta, hostname=base.hostname, log_directory=base.log_directory,
                            cgroup_parent=base.cgroup_parent, labels={POD_UID: base.meta.uid, "app": "web"},
                            annotations={"note": "pod"})
        sandbox = await rt.run_pod_sandbox(cfg)
        cid = await rt.create_container(sandbox, config(case, "c", "true", labels={CONTAINER_NAME: "c"},
                                                        annotations={"note": "container"}))
        (listed,) = await rt.list_pod_sandboxes()
        assert (dict(listed.labels), dict(listed.annotations)) == (cfg.labels, cfg.annotations)
        assert (listed.log_directory, listed.cgroup_parent) == (cfg.log_directory, cfg.cgroup_parent)
        for status in [*(await rt.list_containers()), await rt.container_status(cid)]:
            assert (status.id, status.sandbox_id, status.state) == (cid, sandbox, ContainerState.CREATED)
            assert (dict(status.labels), dict(status.annotations)) == ({CONTAINER_NAME: "c"}, {"note": "container"})
    case.run(go())


def test_status_pid_is_the_hosts_view(case: RuntimeCase) -> None:
    """A running container's pid is the host's pid of its process (not its own namespace's 1 or 2)."""
    async def go() -> None:
        _, cid = await started(case, config(case, "c", "sleep", "300"))
        status = await case.runtime.container_status(cid)
        assert status.state is ContainerState.RUNNING
        assert status.pid not in (0, 1, 2)
        assert Path(f"/proc/{status.pid}").exists()
    case.run(go())


def test_readoption_by_a_new_runtime(case: RuntimeCase) -> None:
    """A new runtime object on the same state (an agent restart) sees the running container as it
    was, and an exit after the restart; its stdin is reached through the new object's attach."""
    async def go() -> None:
        rt = case.runtime
        sandbox, cid = await started(case, config(case, "c", "sh", "-c", f"read x; echo $x; {LINGER}; exit 7",
                                                     stdin=True))
        before = await wait_state(rt, cid, ContainerState.RUNNING)
        (listed,) = await rt.list_pod_sandboxes()
        async with case.another_runtime() as again:
            assert await again.list_pod_sandboxes() == [listed]  # log directory and cgroup parent too
            after = await again.container_status(cid)
            assert (after.state, after.pid, after.started_at) == (ContainerState.RUNNING, before.pid, before.started_at)
            assert after.pid and after.sandbox_id == sandbox
            session = await again.attach(cid, StreamOptions(stdin=True))
            try:
                await session.write_stdin(b"go\n")
                assert await collect(session) == (b"go\n", b"", 7)
            finally:
                await session.close()
            status = await wait_state(again, cid, ContainerState.EXITED)
            assert status.exit_code == 7  # an exit after the restart is seen
            await again.remove_pod_sandbox(sandbox)  # a sandbox this object did not create
            assert await again.list_pod_sandboxes() == []
            if case.isolated:
                assert cgroup_dirs(listed.cgroup_parent) == []
    case.run(go())


def test_oom_killed(case: RuntimeCase) -> None:
    if not case.isolated:
        pytest.skip("memory limits need cgroups")

    async def go() -> None:
        # busybox has no python: a shell variable doubling in size outgrows the 64 MiB limit
        hog = "x=0123456789abcdef; while :; do x=$x$x; done"
        _, cid = await started(case, config(case, "hog", "sh", "-c", hog, resources=Resources(memory_limit=64 << 20)))
        status = await wait_state(case.runtime, cid, ContainerState.EXITED, timeout=30)
        assert (status.reason, status.exit_code) == ("OOMKilled", 137)
    case.run(go())


def test_isolation(case: RuntimeCase, tmp_path: Path) -> None:
    if not case.isolated:
        pytest.skip("namespaces and mounts need root")
    data, shared = tmp_path / "data", tmp_path / "shared"
    data.mkdir()
    shared.mkdir()
    (data / "hello").write_text("from the host\n")
    mounts: tuple[Mount, ...] = (Mount("/mnt/data", str(data), readonly=True), Mount("/mnt/shared", str(shared)))
    if not case.cri:  # a CRI runtime mounts host paths only (convert.py: no tmpfs mounts)
        mounts += (Mount("/scratch", tmpfs=True),)

    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config(case, "c", "sleep", "300", mounts=mounts, working_dir="/mnt/data"))
        result = await rt.exec_sync(cid, ["sh", "-c", "hostname; cat hello; pwd; touch x 2>/dev/null && echo rw "
                                          "|| echo ro; echo made > /mnt/shared/made; mount | grep -c ' /scratch '"], 10)
        assert (shared / "made").read_text() == "made\n"  # a writable mount writes through to the host
        out = result.stdout.decode().split()
        # The process runtime's isolated pods get their own UTS namespace and the sandbox's hostname;
        # kubeletapi's CRI pods are host-network pods, sent without a hostname (containerd refuses one
        # without a private UTS namespace): they have the node's.
        assert out[0] == (socket.gethostname() if case.cri else "p")
        assert "from" in out and "/mnt/data" in out and "ro" in out
        assert out[-1] == ("0" if case.cri else "1")
        assert not (data / "x").exists()
    case.run(go())


# --- streams (runtime.streaming.Streamer) ---------------------------------------------------------
def test_exec_stream(case: RuntimeCase) -> None:
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config(case, "c", "sleep", "300", envs=(("GREETING", "hi"),)))
        session = await rt.exec_stream(cid, ["sh", "-c", "echo $GREETING; echo oops >&2; exit 5"], StreamOptions())
        try:
            assert await collect(session) == (b"hi\n", b"oops\n", 5)
        finally:
            await session.close()
        session = await rt.exec_stream(cid, ["no-such-program-x"], StreamOptions())
        try:
            out, err, code = await collect(session)
        finally:
            await session.close()
        assert (out, code) == (b"", 127) and b"no-such-program-x" in err
        await rt.stop_container(cid, 0)
        with pytest.raises(InvalidInput, match="not running"):
            await rt.exec_stream(cid, ["true"], StreamOptions())
    case.run(go())


def test_exec_stream_stdin_to_its_end(case: RuntimeCase) -> None:
    """close_stdin() ends the command's input (`kubectl exec -i`, `kubectl cp` into a container):
    `wc -c` counts what was written and exits; with a tty too (`cat`, once it echoed a line, sees
    the end of input)."""
    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config(case, "c", "sleep", "300"))
        payload = os.urandom(300_000)
        session = await rt.exec_stream(cid, ["wc", "-c"], StreamOptions(stdin=True))
        try:
            for start in range(0, len(payload), 65536):
                await session.write_stdin(payload[start:start + 65536])
            await session.close_stdin()
            out, err, code = await asyncio.wait_for(collect(session), 20)
        finally:
            await session.close()
        assert (out.split(), err, code) == ([b"300000"], b"", 0)
        session = await rt.exec_stream(cid, ["cat"], StreamOptions(stdin=True, tty=True))
        try:
            await session.write_stdin(b"typed\n")
            echoed = b""
            output = session.output()
            async with asyncio.timeout(20):
                while echoed.count(b"typed") < 2:  # the terminal's echo, then cat's copy
                    echoed += (await anext(output))[1]
                await session.close_stdin()  # a user's ^D: cat ends
                async for _, chunk in output:
                    echoed += chunk
                code = await session.wait()
        finally:
            await session.close()
        assert echoed.count(b"typed") == 2 and code == 0
    case.run(go())


def test_attach_follows_the_containers_terminal(case: RuntimeCase) -> None:
    """An attach gets the container's terminal whatever it asks: a container without one keeps
    stdout and stderr apart, one with a terminal has a single (STDOUT) stream."""
    script = f"read x; echo out; echo err >&2; {LINGER}; exit 3"

    async def go() -> None:
        rt = case.runtime
        _, plain = await started(case, config(case, "plain", "sh", "-c", script, stdin=True))
        _, tty = await started(case, config(case, "tty", "sh", "-c", script, stdin=True, tty=True))
        for cid, asked, line, expected in ((plain, True, b"go\n", (b"out\n", b"err\n", 3)),
                                           (tty, False, b"go\r", (b"go\r\nout\r\nerr\r\n", b"", 3))):
            await wait_state(rt, cid, ContainerState.RUNNING)
            session = await rt.attach(cid, StreamOptions(stdin=True, tty=asked))
            try:
                await session.write_stdin(line)
                assert await collect(session) == expected
            finally:
                await session.close()
    case.run(go())


def test_port_forward_to_a_loopback_listener(case: RuntimeCase) -> None:
    """Pods share the host's network: a port-forward reaches a listener on 127.0.0.1."""
    async def go() -> None:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                writer.write(b"echo:" + await reader.readline())
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            sandbox = await case.runtime.run_pod_sandbox(case.sandbox_config())
            reader, writer = await case.runtime.port_forward(sandbox, port)
            try:
                writer.write(b"ping\n")
                await writer.drain()
                async with asyncio.timeout(5):
                    # (not up to EOF: containerd lingers 1 s for the other direction before it closes)
                    assert await reader.readline() == b"echo:ping\n"
            finally:
                writer.close()
                with contextlib.suppress(ConnectionError):
                    await writer.wait_closed()
        finally:
            server.close()
            await server.wait_closed()
    case.run(go())


def test_port_forward_to_a_closed_port_fails_with_the_reason(case: RuntimeCase) -> None:
    """Either port_forward fails (the process runtime dials at once) or the connection's reader
    does (CRI: the runtime's streaming server dials, and its error arrives on the stream)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now

    async def go() -> None:
        sandbox = await case.runtime.run_pod_sandbox(case.sandbox_config())
        with pytest.raises((KubeletError, OSError), match=r"(?i)connection refused"):
            reader, writer = await case.runtime.port_forward(sandbox, port)
            try:
                writer.write(b"x")
                async with asyncio.timeout(5):
                    await reader.read()
            finally:
                writer.close()
    case.run(go())


# --- rules of one runtime --------------------------------------------------------------------------
def test_no_command_is_a_config_error(case: RuntimeCase) -> None:
    if case.cri:
        pytest.skip("a CRI container without a command runs its image's (test_no_command_runs_the_image_default)")

    async def go() -> None:
        sandbox = await case.runtime.run_pod_sandbox(case.sandbox_config())
        with pytest.raises(InvalidInput, match="the process runtime needs a command"):
            await case.runtime.create_container(sandbox, config(case, "c"))
    case.run(go())


def test_no_command_runs_the_image_default(case: RuntimeCase) -> None:
    if not case.cri:
        pytest.skip("the process runtime has no images: it needs a command (test_no_command_is_a_config_error)")

    async def go() -> None:
        # busybox's default command is /bin/sh: with no stdin it reads EOF and exits at once
        _, cid = await started(case, config(case, "c"))
        status = await wait_state(case.runtime, cid, ContainerState.EXITED)
        assert (status.state, status.exit_code, status.reason) == (ContainerState.EXITED, 0, "Completed")
    case.run(go())


def test_lost_shim_is_reported_not_hidden(case: RuntimeCase, tmp_path: Path) -> None:
    if case.cri:
        pytest.skip("the process runtime's own shims: containerd keeps its shims itself")

    async def go() -> None:
        rt = case.runtime
        _, cid = await started(case, config(case, "c", "sleep", "300"))
        state = json.loads((tmp_path / "state" / "containers" / cid / "container.json").read_text())
        for pid in (state["shim_pid"], state["init_pid"], state["app_pid"]):
            if pid:
                # The shim's death can take its container with it before the next kill (isolated:
                # the init is killed with its parent): already gone is what this test wants.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
        status = await wait_state(rt, cid, ContainerState.EXITED)
        assert status.reason in ("ContainerStatusUnknown", "Error")
    case.run(go())


def test_mounts_need_isolation(case: RuntimeCase) -> None:
    if case.name != "plain":
        pytest.skip("only the plain process runtime refuses mounts")

    async def go() -> None:
        sandbox = await case.runtime.run_pod_sandbox(case.sandbox_config())
        with pytest.raises(InvalidInput, match="volume mounts"):
            await case.runtime.create_container(sandbox, config(case, "c", "true", mounts=(Mount("/x", "/tmp"),)))
    case.run(go())


def test_image_status(case: RuntimeCase) -> None:
    async def go() -> None:
        image = await case.runtime.image_status(case.image)
        assert image is not None
        if case.cri:  # the process runtime has every image, with an empty id (it runs host commands)
            assert image.id and image.ref
            assert await case.runtime.image_status("localhost/absent:1") is None
    case.run(go())


def test_list_and_remove_images(case: RuntimeCase) -> None:
    """Image GC's calls: the images the runtime has (none for the process runtime, which runs host
    commands: nothing to collect); removing an image that is not there is no error (CRI's
    RemoveImage is idempotent)."""
    async def go() -> None:
        listed = await case.runtime.list_images()
        if case.cri:
            assert any(case.image in image.tags for image in listed)
        else:
            assert listed == []
        await case.runtime.remove_image("localhost/absent:1")
        assert len(await case.runtime.list_images()) == len(listed)
    case.run(go())


def test_pull_of_an_absent_image_fails(case: RuntimeCase) -> None:
    if not case.cri:
        pytest.skip("the process runtime pulls nothing")

    async def go() -> None:
        # A localhost image is pulled over plain HTTP from port 80 of the loopback, where nothing
        # listens here: the pull fails at once, with the runtime's reason.
        try:
            async with asyncio.timeout(10):
                with pytest.raises(KubeletError, match="localhost/absent:1"):
                    await case.runtime.pull_image("localhost/absent:1")
        except TimeoutError:
            pytest.skip("a pull from an unreachable registry did not fail within 10 s here")
    case.run(go())
