"""A container record kept in line with its shim (ShimWatch): the start and the exit the shim
recorded (shimfiles.py), a shim gone without a word (ContainerStatusUnknown), and a start an agent
left half-made, settled without ever launching a second shim.

A start is recorded before the shim is launched (start_requested), and the shim holds the
container's lock for its whole life. An agent killed at any point of a start leaves a record a new
agent settles: the shim recorded its start or exit (adopted), or it holds the lock (still starting:
waited for), or the lock is free and no daemon ever ran (nothing was started: the start is made
now, the first one), or a daemon ran and vanished without a word (a failed start: StartError, its
leftovers killed; the pod syncer starts a new instance).

Identity checks use /proc/<pid>/stat's start time, so a recycled pid is never mistaken for a
container that has exited: a signal goes only to the process the record names.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable

from kubeletapi.errors import Unavailable
from kubeletapi.runtime.process import procfs
from kubeletapi.runtime.process.placement import Placement
from kubeletapi.runtime.process.shimfiles import ShimFiles
from kubeletapi.runtime.process.state import ContainerRecord, StateDir

STOP_POLL_S = 0.02
START_WAIT_S = 30.0  # how long a start under way is waited for
START_ERROR_CODE = 128  # the shim's exit code for a program that could not be started
LOST_START = ("StartError", "the container's shim exited without recording a start or an exit "
              "(the agent stopped while starting it)")


def started(record: ContainerRecord) -> bool:
    """Whether the container's start was made: it ran, or it failed to start."""
    return bool(record.started_at or record.exited)


class ShimWatch:
    def __init__(self, state: StateDir, placement: Placement, now_ns: Callable[[], int], log: logging.Logger) -> None:
        self._state = state
        self._placement = placement
        self._now_ns = now_ns
        # The process runtime's logger: how a start was settled is its story, under its one name.
        self._log = log
        self.launching: set[str] = set()  # containers whose shim this agent is launching now

    def files(self, record: ContainerRecord) -> ShimFiles:
        return ShimFiles(self._state.container_dir(record.id))

    def read_shim_files(self, record: ContainerRecord, files: ShimFiles) -> None:
        record.shim_pid = files.shim_pid()
        began = files.started()
        if began is not None:
            record.app_pid, record.init_pid, record.started_at = began.app_pid, began.init_pid, began.at
            for pid in (record.app_pid, record.init_pid, record.shim_pid):
                if pid:
                    record.start_ticks[str(pid)] = procfs.start_ticks(pid)
        self._read_exit(record, files)

    def _read_exit(self, record: ContainerRecord, files: ShimFiles) -> bool:
        ended = files.exit()
        if ended is None:
            return False
        record.exit_code, record.signal, record.finished_at = ended.code, ended.signal, ended.finished_at
        record.reason, record.message, record.exited = ended.reason, ended.message, True
        if record.signal == signal.SIGKILL and self._placement.oom_killed(record.cgroup):
            record.reason = "OOMKilled"
        self._placement.delete(record.cgroup, record.id)
        return True

    def refresh(self, record: ContainerRecord) -> None:
        """Notice an exit: the shim's exit file, or (shim gone without one) a lost container."""
        if not record.started_at:
            self.settle_start(record)
            return
        if record.exited:
            return
        files = self.files(record)
        if self._read_exit(record, files):
            self._state.save_container(record)
            return
        if self.alive(record, record.shim_pid) or self.alive(record, record.app_pid):
            return
        if self._read_exit(record, files):  # the shim finished between the two checks
            self._state.save_container(record)
            return
        record.exited, record.exit_code, record.reason = True, 137, "ContainerStatusUnknown"
        record.message = "The container could not be located: its shim exited without recording an exit status"
        record.finished_at = self._now_ns()
        self._placement.delete(record.cgroup, record.id)
        self._state.save_container(record)

    def settle_start(self, record: ContainerRecord) -> bool:
        """Decide a start that was begun and not seen through (start_requested, no started_at:
        the agent that began it stopped); False while it is still under way: this agent is
        launching it, or its shim runs and has recorded neither a start nor an exit yet."""
        if started(record) or not record.start_requested:
            return True
        if record.id in self.launching:
            return False
        files = self.files(record)
        recorded = files.recorded()
        if not recorded:
            if files.shim_running():
                return False
            recorded = files.recorded()  # the shim finished between the two looks
        what = f"container {record.id} ({record.config.name!r}): the agent stopped while starting it"
        if recorded:
            self.read_shim_files(record, files)
            self._log.info("process runtime: %s; adopted the start its shim recorded", what)
        elif files.ran():
            self._placement.kill_all(record.cgroup)  # what the vanished shim may have forked
            record.exited, record.exit_code, record.finished_at = True, START_ERROR_CODE, self._now_ns()
            record.reason, record.message = LOST_START
            self._placement.delete(record.cgroup, record.id)
            self._log.warning("process runtime: %s; its shim ran and vanished without a word: %s", what,
                              record.reason)
        else:
            record.start_requested = False  # no shim ever ran: the start is still to be made
            self._log.info("process runtime: %s; no shim ever ran, it starts afresh", what)
        self._state.save_container(record)
        return True

    async def await_start(self, record: ContainerRecord) -> None:
        """Wait until a start under way (this agent's, or one an agent before it began) is decided."""
        deadline = time.monotonic() + START_WAIT_S
        while not self.settle_start(record):
            if time.monotonic() >= deadline:
                raise Unavailable(f"container {record.config.name!r} is still starting after {START_WAIT_S:g}s "
                                  "(its shim has recorded neither a start nor an exit)")
            await asyncio.sleep(STOP_POLL_S)

    def alive(self, record: ContainerRecord, pid: int) -> bool:
        return bool(pid) and procfs.start_ticks(pid) == record.start_ticks.get(str(pid), -1)

    def signal(self, record: ContainerRecord, pid: int, sig: int) -> None:
        if self.alive(record, pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    async def wait_exit(self, record: ContainerRecord, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            self.refresh(record)
            if record.exited:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(STOP_POLL_S)
