"""The built-in process runtime: containers are host processes owned by kubeletapi-shim.

A sandbox is a directory and (as root) a pod cgroup; a container is a state directory, a
container cgroup, and a shim daemon that runs the command, writes its CRI log and records its
exit. Nothing here holds a container's process: the shim does, so containers outlive the agent
and a new agent re-adopts them from the state directory.

A start is recorded before the shim is launched (start_requested, saved with the container's
cgroup), and the shim is handed a lock it holds for its whole life (shimfiles.py). What the shim
then records (its start, its exit, or nothing: a start an agent left half-made, settled without
a second shim) is read into the container's record by shimwatch.py.

Exec, attach and port-forward streams (runtime.streaming.Streamer) are in streams/; the shim's
command lines in shimcmd.py, the files it writes in shimfiles.py, the cgroups in placement.py,
the pods' own network namespaces (given a pod network) in podnet.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput, NetworkError, NotFound, Unavailable
from kubeletapi.runtime.process import shimcmd, streams
from kubeletapi.runtime.process.placement import Cgroups, Placement
from kubeletapi.runtime.process.podnet import SandboxNetworks
from kubeletapi.runtime.process.shimfiles import ShimFiles
from kubeletapi.runtime.process.shimwatch import ShimWatch, started
from kubeletapi.runtime.process.state import ContainerRecord, SandboxRecord, StateDir, new_id
from kubeletapi.runtime.streaming import StreamOptions, StreamSession
from kubeletapi.runtime.types import (
    POD_UID,
    AuthConfig,
    ContainerConfig,
    ContainerState,
    ContainerStatus,
    ExecResult,
    Image,
    RuntimeVersion,
    Sandbox,
    SandboxConfig,
    SandboxState,
)

log = logging.getLogger(__name__)

RUNTIME_NAME = "kubeletapi-process"
KILL_WAIT_S = 10.0


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
        network: SandboxNetworks | None = None,
    ) -> None:
        self._state = StateDir(root)
        self._shim = shim
        self._clock = clock
        self._placement = Placement(cgroups)
        self._watch = ShimWatch(self._state, self._placement, self._now_ns, log)
        self._namespaces = namespaces
        self._shim_opts = shimcmd.ShimOptions(namespaces, log_max_size, log_max_files)
        self._pod_ip = pod_ip  # pods on the host's network: port-forward connects here
        self._network = network
        loaded = self._state.load()
        self._sandboxes, self._containers = loaded.sandboxes, loaded.containers
        for sandbox in self._sandboxes.values():
            if sandbox.netns and not sandbox.ips and sandbox.ready:
                sandbox.ready = False  # its network was never attached: the pod gets a new sandbox
                self._state.save_sandbox(sandbox)
        for problem in loaded.problems:
            log.error("process runtime: ignoring unreadable %s", problem)
        for leftover in loaded.removed:
            log.warning("process runtime: removed %s", leftover)
        for record in list(self._containers.values()):
            self._watch.settle_start(record)
        self._warned_oom = False
        if self._containers:
            log.info("process runtime: re-adopted %d containers in %d sandboxes from %s",
                     len(self._containers), len(self._sandboxes), root)

    # --- sandboxes -----------------------------------------------------------------------------
    async def version(self) -> RuntimeVersion:
        from kubeletapi import __version__  # noqa: PLC0415 - avoid a cycle at import time

        return RuntimeVersion(RUNTIME_NAME, __version__)

    def use_network(self, network: SandboxNetworks) -> None:
        """A pod network that became known after the start (the Node's pod CIDR): sandboxes made from
        now on that are not on the host network get their own."""
        self._network = network

    async def start_networks(self) -> None:
        """At start: release the pod networks a crash left without a sandbox record."""
        if self._network is not None:
            for sandbox_id in await self._network.cleanup(self._sandboxes):
                log.info("process runtime: removed the network namespace of gone sandbox %s", sandbox_id)

    async def run_pod_sandbox(self, config: SandboxConfig) -> str:
        record = SandboxRecord(new_id(), config, self._now_ns())
        Path(config.log_directory).mkdir(parents=True, exist_ok=True)
        self._placement.create(config.cgroup_parent, config.resources)
        if self._network is not None and not config.host_network:
            record.ready = False  # until attached
            self._sandboxes[record.id] = record
            try:
                await self._network.setup(record, self._state.save_sandbox)
            except NetworkError:  # setup removed what it made (else: left NOTREADY, a stop cleans up)
                self._state.remove_sandbox(record.id)
                del self._sandboxes[record.id]
                self._placement.delete_pod(config.cgroup_parent)
                raise
            record.ready = True
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
        if self._network is not None and record.netns:
            await self._network.teardown(record)  # CRI: stopping a sandbox tears its network down
            self._state.save_sandbox(record)

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        record = self._sandboxes.get(sandbox_id)
        if record is None:
            return
        await self.stop_pod_sandbox(sandbox_id)
        for container in list(self._containers.values()):
            if container.sandbox_id == sandbox_id:
                await self.remove_container(container.id)
        self._placement.delete_pod(record.config.cgroup_parent)
        self._state.remove_sandbox(sandbox_id)
        del self._sandboxes[sandbox_id]

    async def list_pod_sandboxes(self, pod_uid: str | None = None) -> Sequence[Sandbox]:
        return [
            Sandbox(
                id=r.id, meta=r.config.meta, state=SandboxState.READY if r.ready else SandboxState.NOTREADY,
                created_at=r.created_at, labels=r.config.labels, annotations=r.config.annotations,
                log_directory=r.config.log_directory, cgroup_parent=r.config.cgroup_parent,
                ips=tuple(r.ips),
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
        if record.id in self._watch.launching:
            raise InvalidInput(f"container {container_id} is being started")
        if record.start_requested and not started(record):
            await self._watch.await_start(record)  # a start an agent before this one began
            if started(record):
                return  # it went through (or failed): either way, it is not made twice
        if started(record):
            raise InvalidInput(f"container {container_id} was already started")
        sandbox = self._sandbox(record.sandbox_id)
        files = self._watch.files(record)
        Path(record.log_path).parent.mkdir(parents=True, exist_ok=True)
        record.cgroup = self._placement.container_cgroup(sandbox.config.cgroup_parent, record.id)
        record.start_requested = True
        self._state.save_container(record)  # before anything a new agent would have to find
        self._watch.launching.add(record.id)
        try:
            await self._launch(record, sandbox, files)
        finally:
            self._watch.launching.discard(record.id)
        self._watch.read_shim_files(record, files)
        self._report_warnings(files)
        self._state.save_container(record)

    async def _launch(self, record: ContainerRecord, sandbox: SandboxRecord, files: ShimFiles) -> None:
        """Run the shim's invoker with the container's lock, until it reports the start recorded."""
        lock = files.lock()
        try:
            cgroup_dirs = self._placement.create(record.cgroup, record.config.resources)
            args = shimcmd.run_args(record, sandbox.config, files.dir, cgroup_dirs, lock, self._shim_opts,
                                    sandbox.netns)
            proc = await asyncio.create_subprocess_exec(
                str(self._shim), *args, env=shimcmd.environment(record.config, sandbox.config), pass_fds=(lock,),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        finally:
            os.close(lock)  # the invoker holds it now (or nobody: nothing was launched)
        _, err = await proc.communicate()
        if proc.returncode != 0:
            raise Unavailable(f"starting the shim of container {record.config.name!r} failed: {err.decode().strip()}")

    async def stop_container(self, container_id: str, timeout_s: float) -> None:
        record = self._container(container_id)
        await self._watch.await_start(record)
        self._watch.refresh(record)
        if record.exited or not record.started_at:
            return
        self._watch.signal(record, record.app_pid, signal.SIGTERM)
        if not await self._watch.wait_exit(record, max(timeout_s, 0)):
            self._watch.signal(record, record.init_pid or record.app_pid, signal.SIGKILL)
            if not await self._watch.wait_exit(record, KILL_WAIT_S):
                raise Unavailable(f"container {container_id} did not exit after SIGKILL")

    async def remove_container(self, container_id: str) -> None:
        record = self._containers.get(container_id)
        if record is None:
            return
        self._watch.refresh(record)
        if record.started_at and not record.exited:
            raise InvalidInput(f"container {container_id} is running; stop it first")
        if not self._watch.settle_start(record):
            raise InvalidInput(f"container {container_id} is being started; stop it first")
        self._placement.delete(record.cgroup, record.id)
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

    async def list_images(self) -> Sequence[Image]:
        return []  # commands run from the host: no images, nothing for image GC

    async def remove_image(self, image: str) -> None:
        return None

    async def pull_image(self, image: str, sandbox: SandboxConfig | None = None, auth: AuthConfig | None = None) -> str:
        return ""

    # --- streams (runtime.streaming.Streamer) ------------------------------------------------------
    async def exec_stream(self, container_id: str, cmd: Sequence[str], opts: StreamOptions) -> StreamSession:
        record = self._running(container_id)
        env = shimcmd.environment(record.config, self._sandbox(record.sandbox_id).config)
        cgroup_dirs = [procs.parent for procs in self._placement.procs_files(record.cgroup)]
        args = shimcmd.exec_args(record, cgroup_dirs, self._namespaces, self._sandbox(record.sandbox_id).netns)
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
            self._watch.refresh(record)
            return record.exit_code if record.exited else None

        return streams.AttachSession.open(record.log_path, self._state.container_dir(record.id), record.config.tty,
                                          opts, exit_code)

    async def port_forward(self, sandbox_id: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sandbox = self._sandbox(sandbox_id)
        if not sandbox.ready:
            raise InvalidInput(f"pod sandbox {sandbox_id} is not ready")
        return await streams.connect(sandbox.ips[0] if sandbox.ips else self._pod_ip, port, sandbox_id)

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
        self._watch.refresh(record)
        if record.exited or not record.started_at:
            raise InvalidInput(f"container {record.config.name!r} is not running")
        return record

    def _report_warnings(self, files: ShimFiles) -> None:
        warnings = files.warnings()
        if warnings and not self._warned_oom:
            self._warned_oom = True
            log.warning("process runtime: %s (logged once)", warnings.splitlines()[0])

    def _status(self, record: ContainerRecord) -> ContainerStatus:
        self._watch.refresh(record)
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

