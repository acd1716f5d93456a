"""The built-in process runtime: containers are host processes owned by kubeletapi-shim.

A sandbox is a directory and (as root) a pod cgroup; a container is a state directory, a
container cgroup, and a shim daemon that runs the command, writes its CRI log and records its
exit. Nothing here holds a container's process: the shim does, so containers outlive the agent
and a new agent re-adopts them from the state directory.

Identity checks use /proc/<pid>/stat's start time, so a recycled pid is never mistaken for a
container that has exited.

Exec, attach and port-forward streams (runtime.streaming.Streamer) are in streams.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from kubeletapi.cgroups.writers import ResourceConfig
from kubeletapi.clock import Clock
from kubeletapi.errors import Conflict, InvalidInput, NotFound, Unavailable
from kubeletapi.runtime.process import procfs, streams
from kubeletapi.runtime.process.state import ContainerRecord, SandboxRecord, StateDir, new_id
from kubeletapi.runtime.streaming import StreamOptions, StreamSession
from kubeletapi.runtime.types import (
    POD_UID,
    ContainerConfig,
    ContainerState,
    ContainerStatus,
    ExecResult,
    Image,
    Resources,
    RuntimeVersion,
    Sandbox,
    SandboxConfig,
    SandboxState,
)

log = logging.getLogger(__name__)

RUNTIME_NAME = "kubeletapi-process"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STOP_POLL_S = 0.02
KILL_WAIT_S = 10.0


class Cgroups(Protocol):
    """The cgroup operations the runtime needs (kubeletapi.cgroups writers)."""

    def create(self, path: str) -> None: ...

    def set_resources(self, path: str, config: ResourceConfig) -> None: ...

    def procs_files(self, path: str) -> list[Path]: ...

    def delete(self, path: str) -> None: ...

    def oom_kill_count(self, path: str) -> int: ...


def _cgroup_config(res: Resources) -> ResourceConfig:
    return ResourceConfig(
        cpu_shares=res.cpu_shares, cpu_quota=res.cpu_quota, cpu_period=res.cpu_period,
        memory_limit=res.memory_limit, pids_limit=res.pids_limit,
    )


class ProcessRuntime:
    """Implements runtime.interface.Runtime with host processes."""

    def __init__(
        self,
        root: Path,
        shim: Path,
        clock: Clock,
        cgroups: Cgroups | None = None,
        namespaces: bool = False,
        log_max_size: int = 10 * 1024 * 1024,
        log_max_files: int = 5,
        pod_ip: str = "127.0.0.1",
    ) -> None:
        self._state = StateDir(root)
        self._shim = shim
        self._clock = clock
        self._cgroups = cgroups
        self._namespaces = namespaces
        self._log_max_size = log_max_size
        self._log_max_files = log_max_files
        self._pod_ip = pod_ip  # pods share the host's network: port-forward connects here
        loaded = self._state.load()
        self._sandboxes, self._containers = loaded.sandboxes, loaded.containers
        for problem in loaded.problems:
            log.error("process runtime: ignoring unreadable %s", problem)
        for leftover in loaded.removed:
            log.warning("process runtime: removed %s", leftover)
        self._warned_oom = False
        if self._containers:
            log.info("process runtime: re-adopted %d containers in %d sandboxes from %s",
                     len(self._containers), len(self._sandboxes), root)

    # --- sandboxes -----------------------------------------------------------------------------
    async def version(self) -> RuntimeVersion:
        from kubeletapi import __version__  # noqa: PLC0415 - avoid a cycle at import time

        return RuntimeVersion(RUNTIME_NAME, __version__)

    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        record = SandboxRecord(new_id(), config, self._now_ns())
        Path(config.log_directory).mkdir(parents=True, exist_ok=True)
        if self._cgroups is not None and config.cgroup_parent:
            self._cgroups.create(config.cgroup_parent)
            self._cgroups.set_resources(config.cgroup_parent, _cgroup_config(config.resources))
        self._state.save_sandbox(record)
        self._sandboxes[record.id] = record
        return record.id

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        record = self._sandbox(sandbox_id)
        for container in list(self._containers.values()):
            if container.sandbox_id == sandbox_id:
                await self.stop_container(container.id, 0)
        record.ready = False
        self._state.save_sandbox(record)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        record = self._sandboxes.get(sandbox_id)
        if record is None:
            return
        await self.stop_pod_sandbox(sandbox_id)
        for container in list(self._containers.values()):
            if container.sandbox_id == sandbox_id:
                await self.remove_container(container.id)
        if self._cgroups is not None and record.config.cgroup_parent:
            self._cgroups.delete(record.config.cgroup_parent)
        self._state.remove_sandbox(sandbox_id)
        del self._sandboxes[sandbox_id]

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[Sandbox]:
        return [
            Sandbox(
                id=r.id, meta=r.config.meta, state=SandboxState.READY if r.ready else SandboxState.NOTREADY,
                created_at=r.created_at, labels=r.config.labels, annotations=r.config.annotations,
                log_directory=r.config.log_directory, cgroup_parent=r.config.cgroup_parent,
            )
            for r in list(self._sandboxes.values())
            if pod_uid is None or r.config.labels.get(POD_UID) == pod_uid
        ]

    # --- containers ----------------------------------------------------------------------------
    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        sandbox = self._sandbox(sandbox_id)
        if not config.command:
            raise InvalidInput(
                f"the process runtime needs a command: container {config.name!r} has no command "
                "(image entrypoints are not read without a container engine)"
            )
        if config.mounts and not self._namespaces:
            raise InvalidInput(
                f"container {config.name!r} has volume mounts, which the process runtime can only "
                "provide when kubeletapi runs as root (mount namespaces)"
            )
        log_path = os.path.join(sandbox.config.log_directory, config.log_path)
        record = ContainerRecord(new_id(), sandbox_id, config, self._now_ns(), log_path)
        self._state.save_container(record)
        self._containers[record.id] = record
        return record.id

    async def start_container(self, container_id: str) -> None:
        record = self._container(container_id)
        if record.started_at or record.exited:
            raise InvalidInput(f"container {container_id} was already started")
        sandbox = self._sandbox(record.sandbox_id)
        state_dir = self._state.container_dir(record.id)
        Path(record.log_path).parent.mkdir(parents=True, exist_ok=True)
        args = self._shim_args(record, sandbox, state_dir, self._place_in_cgroup(record, sandbox))
        env = self._environment(record.config, sandbox.config)
        proc = await asyncio.create_subprocess_exec(
            str(self._shim), *args, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )
        _, err = await proc.communicate()
        if proc.returncode != 0:
            raise Unavailable(f"starting the shim of container {record.config.name!r} failed: {err.decode().strip()}")
        self._read_shim_files(record, state_dir)
        self._report_warnings(state_dir)
        self._state.save_container(record)

    async def stop_container(self, container_id: str, timeout_s: float) -> None:
        record = self._container(container_id)
        self._refresh(record)
        if record.exited or not record.started_at:
            return
        self._signal(record, record.app_pid, signal.SIGTERM)
        if not await self._wait_exit(record, max(timeout_s, 0)):
            self._signal(record, record.init_pid or record.app_pid, signal.SIGKILL)
            if not await self._wait_exit(record, KILL_WAIT_S):
                raise Unavailable(f"container {container_id} did not exit after SIGKILL")

    async def remove_container(self, container_id: str) -> None:
        record = self._containers.get(container_id)
        if record is None:
            return
        self._refresh(record)
        if record.started_at and not record.exited:
            raise InvalidInput(f"container {container_id} is running; stop it first")
        self._delete_cgroup(record)
        self._state.remove_container(container_id)
        del self._containers[container_id]

    async def list_containers(self, pod_uid: str | None = None) -> Sequence[ContainerStatus]:
        return [self._status(r) for r in list(self._containers.values())
                if pod_uid is None or r.config.labels.get(POD_UID) == pod_uid]

    async def container_status(self, container_id: str) -> ContainerStatus:
        return self._status(self._container(container_id))

    def shim_pids(self) -> list[int]:
        """The shim daemons of containers still running: the runtime's own processes (the
        summary's `runtime` system container)."""
        return [r.shim_pid for r in self._containers.values() if r.shim_pid and r.started_at and not r.exited]

    async def exec_sync(
        self, container_id: str, cmd: Sequence[str], timeout_s: float, *, max_output: int | None = None,
    ) -> ExecResult:
        """Run `cmd` and collect its output. With `max_output`, only the first max_output bytes
        of each stream are kept; the rest is read and dropped (the command never blocks on a
        full pipe, memory stays bounded). On timeout everything it started is killed."""
        session = await self.exec_stream(container_id, cmd, StreamOptions())
        try:
            async with asyncio.timeout(timeout_s if timeout_s > 0 else None):
                out, err = await streams.collect(session, max_output)
                code = await session.wait()
        except TimeoutError:
            raise Unavailable(f"command {list(cmd)} timed out after {timeout_s:g}s") from None
        finally:
            await session.close()
        return ExecResult(code, out, err)

    # --- images ------------------------------------------------------------------------------------
    # Commands run on the host: every image is present, and nothing is ever pulled. The empty
    # id/ref keeps a container status's imageID "" (what the process runtime always reported).
    async def image_status(self, image: str) -> Image | None:
        return Image(id="", ref="")

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None) -> str:
        return ""

    # --- streams (runtime.streaming.Streamer) ------------------------------------------------------
    async def exec_stream(self, container_id: str, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        record = self._running(container_id)
        env = self._environment(record.config, self._sandbox(record.sandbox_id).config)
        args = self._exec_args(record)
        if opts.tty:
            args.append("--tty")
            env.setdefault("TERM", "xterm")  # as containerd sets for a terminal
        return streams.ExecSession.start([str(self._shim), *args, "--", *cmd], env, opts)

    async def attach(self, container_id: str, opts: StreamOptions) -> StreamSession:
        record = self._running(container_id)
        if opts.stdin and not record.config.stdin:
            raise InvalidInput(f"container {record.config.name!r} has no stdin to attach to (it was not created "
                               "with stdin: true)")

        def exit_code() -> int | None:
            self._refresh(record)
            return record.exit_code if record.exited else None

        return streams.AttachSession.open(record.log_path, self._state.container_dir(record.id), record.config.tty,
                                          opts, exit_code)

    async def port_forward(self, sandbox_id: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sandbox = self._sandbox(sandbox_id)
        if not sandbox.ready:
            raise InvalidInput(f"pod sandbox {sandbox_id} is not ready")
        return await streams.connect(self._pod_ip, port, sandbox_id)

    # --- helpers -------------------------------------------------------------------------------
    def _now_ns(self) -> int:
        return int(self._clock.now() * 1e9)

    def _sandbox(self, sandbox_id: str) -> SandboxRecord:
        record = self._sandboxes.get(sandbox_id)
        if record is None:
            raise NotFound(f"sandbox {sandbox_id} not found")
        return record

    def _container(self, container_id: str) -> ContainerRecord:
        record = self._containers.get(container_id)
        if record is None:
            raise NotFound(f"container {container_id} not found")
        return record

    def _running(self, container_id: str) -> ContainerRecord:
        record = self._container(container_id)
        self._refresh(record)
        if record.exited or not record.started_at:
            raise InvalidInput(f"container {record.config.name!r} is not running")
        return record

    def _exec_args(self, record: ContainerRecord) -> list[str]:
        """`exec` and its options: the container's namespaces, cgroups and working directory."""
        args = ["exec"]
        if self._namespaces and record.app_pid:
            args += ["--pid", str(record.app_pid)]
        for procs in self._procs_files(record):
            args += ["--cgroup", str(procs.parent)]
        if record.config.working_dir:
            args += ["--workdir", record.config.working_dir]
        return args

    def _environment(self, config: ContainerConfig, sandbox: SandboxConfig) -> dict[str, str]:
        env = {"PATH": DEFAULT_PATH, "HOSTNAME": sandbox.hostname, "HOME": os.environ.get("HOME", "/root")}
        env.update(dict(config.envs))
        return env

    def _procs_files(self, record: ContainerRecord) -> list[Path]:
        if self._cgroups is None or not record.cgroup:
            return []
        return self._cgroups.procs_files(record.cgroup)

    def _place_in_cgroup(self, record: ContainerRecord, sandbox: SandboxRecord) -> list[Path]:
        """Create the container's cgroup under its pod's, with its limits (as root); the
        directories the shim joins (one per hierarchy)."""
        if self._cgroups is None or not sandbox.config.cgroup_parent:
            return []
        record.cgroup = f"{sandbox.config.cgroup_parent}/{record.id}"
        self._cgroups.create(record.cgroup)
        self._cgroups.set_resources(record.cgroup, _cgroup_config(record.config.resources))
        return [procs.parent for procs in self._cgroups.procs_files(record.cgroup)]

    def _shim_args(self, record: ContainerRecord, sandbox: SandboxRecord, state_dir: Path,
                   cgroup_dirs: list[Path]) -> list[str]:
        """The shim's command line (no side effects)."""
        cfg = record.config
        args = ["run", "--state", str(state_dir), "--log", record.log_path,
                "--log-max-size", str(self._log_max_size), "--log-max-files", str(self._log_max_files)]
        for directory in cgroup_dirs:
            args += ["--cgroup", str(directory)]
        if self._namespaces:
            args += ["--namespaces", "--hostname", sandbox.config.hostname]
            for mount in cfg.mounts:
                if mount.tmpfs:
                    args += ["--tmpfs", mount.container_path]
                else:
                    args += ["--bind-ro" if mount.readonly else "--bind", mount.host_path, mount.container_path]
        if cfg.working_dir:
            args += ["--workdir", cfg.working_dir]
        if cfg.stdin:
            args.append("--stdin")
        if cfg.tty:
            args.append("--tty")
        if cfg.resources.oom_score_adj is not None:
            args += ["--oom-score-adj", str(cfg.resources.oom_score_adj)]
        return [*args, "--", *cfg.command]

    def _read_shim_files(self, record: ContainerRecord, state_dir: Path) -> None:
        record.shim_pid = _read_int(state_dir / "shim.pid")
        started = _read_text(state_dir / "started").split()
        if started:
            record.app_pid, record.init_pid, record.started_at = (int(x) for x in started[:3])
            for pid in (record.app_pid, record.init_pid, record.shim_pid):
                if pid:
                    record.start_ticks[str(pid)] = procfs.start_ticks(pid)
        self._read_exit(record, state_dir)

    def _read_exit(self, record: ContainerRecord, state_dir: Path) -> bool:
        text = _read_text(state_dir / "exit")
        if not text:
            return False
        head, _, message = text.partition("\n")
        code, sig, finished, reason = head.split(" ", 3)
        record.exit_code, record.signal, record.finished_at = int(code), int(sig), int(finished)
        record.reason, record.message, record.exited = reason, message, True
        if record.signal == signal.SIGKILL and self._oom_killed(record):
            record.reason = "OOMKilled"
        self._delete_cgroup(record)
        return True

    def _oom_killed(self, record: ContainerRecord) -> bool:
        if self._cgroups is None or not record.cgroup:
            return False
        try:
            return self._cgroups.oom_kill_count(record.cgroup) > 0
        except (OSError, Unavailable, InvalidInput):
            return False

    def _delete_cgroup(self, record: ContainerRecord) -> None:
        if self._cgroups is None or not record.cgroup:
            return
        try:
            self._cgroups.delete(record.cgroup)
        except (OSError, Unavailable, InvalidInput, Conflict) as exc:
            log.warning("cannot remove cgroup %s of container %s: %s", record.cgroup, record.id, exc)

    def _refresh(self, record: ContainerRecord) -> None:
        """Notice an exit: the shim's exit file, or (shim gone without one) a lost container."""
        if record.exited or not record.started_at:
            return
        state_dir = self._state.container_dir(record.id)
        if self._read_exit(record, state_dir):
            self._state.save_container(record)
            return
        if self._alive(record, record.shim_pid) or self._alive(record, record.app_pid):
            return
        if self._read_exit(record, state_dir):  # the shim finished between the two checks
            self._state.save_container(record)
            return
        record.exited, record.exit_code, record.reason = True, 137, "ContainerStatusUnknown"
        record.message = "The container could not be located: its shim exited without recording an exit status"
        record.finished_at = self._now_ns()
        self._delete_cgroup(record)
        self._state.save_container(record)

    def _alive(self, record: ContainerRecord, pid: int) -> bool:
        return bool(pid) and procfs.start_ticks(pid) == record.start_ticks.get(str(pid), -1)

    def _signal(self, record: ContainerRecord, pid: int, sig: int) -> None:
        if self._alive(record, pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    async def _wait_exit(self, record: ContainerRecord, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            self._refresh(record)
            if record.exited:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(STOP_POLL_S)

    def _report_warnings(self, state_dir: Path) -> None:
        warnings = _read_text(state_dir / "warnings").strip()
        if warnings and not self._warned_oom:
            self._warned_oom = True
            log.warning("process runtime: %s (logged once)", warnings.splitlines()[0])

    def _status(self, record: ContainerRecord) -> ContainerStatus:
        self._refresh(record)
        if record.exited:
            state = ContainerState.EXITED
        elif record.started_at:
            state = ContainerState.RUNNING
        else:
            state = ContainerState.CREATED
        cfg = record.config
        return ContainerStatus(
            id=record.id, sandbox_id=record.sandbox_id, name=cfg.name, attempt=cfg.attempt, state=state,
            image=cfg.image, image_ref="", created_at=record.created_at, started_at=record.started_at,
            finished_at=record.finished_at, exit_code=record.exit_code, signal=record.signal,
            reason=record.reason, message=record.message, log_path=record.log_path,
            pid=record.app_pid if state is ContainerState.RUNNING else 0,
            labels=cfg.labels, annotations=cfg.annotations,
        )


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _read_int(path: Path) -> int:
    text = _read_text(path).strip()
    return int(text) if text else 0
