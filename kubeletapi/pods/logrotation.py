"""Rotation of container logs on a CRI runtime, as the kubelet's container log manager does it
(pkg/kubelet/logs/container_log_manager.go).

containerd writes each container's CRI log file but never rotates it: every period, for each
running container whose log has reached max_size, the file is renamed aside, the runtime is asked
to reopen the log (ReopenContainerLog: it writes a new file at the same path from then on), and
the oldest rotated files beyond max_files-1 are removed. When the runtime cannot reopen, the file
is renamed back so that the next pass tries again (as the kubelet), unless the runtime made a new
file there after all (a reopen that timed out late): that one is never replaced. A running
container whose log file is missing gets a ReopenContainerLog to recover it, as in the kubelet.

Rotated files are named and ordered by runtime.logfiles, the grammar the process runtime's shim
follows too, so one reader (runtime/logs.py) follows both: `<log>.<YYYYMMDD-HHMMSS>` in UTC, plus
`.N` when a file of that second exists already. Unlike the kubelet, rotated files are not
compressed (neither are the shim's).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Sequence
from typing import Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import ConfigError, KubeletError, NotFound, NotSupported
from kubeletapi.runtime.logfiles import remove_logs, rotated_files, rotated_name
from kubeletapi.runtime.types import ContainerState, ContainerStatus

log = logging.getLogger(__name__)

ROTATION_PERIOD_S = 10.0  # the kubelet's containerLogMonitorInterval default


class LogRuntime(Protocol):
    """What rotation needs of a CRI runtime (runtime.cri.CRIRuntime has both)."""

    async def list_containers(self) -> Sequence[ContainerStatus]: ...

    async def reopen_container_log(self, container_id: str) -> None: ...


def _size(path: str) -> int | None:
    """The file's size, None when it does not exist."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return None


def _rename_aside(path: str, now: float) -> tuple[str, list[str]]:
    """Rename the log to its rotated name; returns that name and the rotated files that existed
    before (oldest first), the ones pruning chooses from."""
    existing = rotated_files(path)
    target = rotated_name(path, now, existing)
    os.rename(path, target)
    return target, existing


def _rename_back(target: str, path: str) -> bool:
    """Give the rotated file its name back unless the runtime made a new file there meanwhile (a
    reopen that timed out or was cancelled may still have happened): replacing that file would
    leave the runtime writing to an unlinked one. False when the rotation stands after all."""
    try:
        os.link(target, path)  # never replaces an existing file
    except FileExistsError:
        return False
    except OSError:  # no hard links here: the same, with a small race
        if os.path.lexists(path):
            return False
        try:
            os.rename(target, path)
        except OSError as exc:
            log.error("cannot rename the rotated log %s back to %s: %s", target, path, exc)
        return True
    try:
        os.unlink(target)
    except OSError as exc:
        log.error("cannot remove %s, renamed back to %s: %s", target, path, exc)
    return True


def _remove(paths: Sequence[str]) -> None:
    for name, exc in remove_logs(paths):
        log.warning("cannot remove the rotated log %s: %s", name, exc)


class ContainerLogRotator:
    """Rotates the logs of a CRI runtime's running containers: rotate_once() is one pass, run()
    makes one every period. max_files counts the current file: max_files-1 rotated ones are kept."""

    def __init__(self, runtime: LogRuntime, max_size: int, max_files: int, clock: Clock) -> None:
        if max_size <= 0:
            raise ConfigError(f"containerLogMaxSize must be positive to rotate container logs, got {max_size} bytes")
        if max_files < 2:
            raise ConfigError(f"containerLogMaxFiles must be greater than 1, got {max_files}")
        self._runtime = runtime
        self.max_size, self.max_files = max_size, max_files
        self._clock = clock
        self._unsupported_logged = False

    async def run(self, period_s: float = ROTATION_PERIOD_S) -> None:
        """A pass now and one every period, until cancelled; a failing pass never ends the loop."""
        while True:
            try:
                await self.rotate_once()
            except Exception:
                log.exception("container log rotation failed")
            await self._clock.sleep(period_s)

    async def rotate_once(self) -> list[str]:
        """One pass over the running containers; returns the paths of the files rotated aside.

        A container whose rotation fails (gone, its file missing, a runtime error) is logged and
        the pass goes on with the next one."""
        try:
            containers = await self._runtime.list_containers()
        except KubeletError as exc:
            log.warning("container log rotation: cannot list containers: %s", exc)
            return []
        rotated = []
        for c in containers:
            if c.state is not ContainerState.RUNNING or not c.log_path:
                continue
            try:
                target = await self._rotate(c.id, c.log_path)
            except NotFound as exc:
                log.info("container log rotation: container %s is gone: %s", c.id, exc)
            except NotSupported as exc:
                if not self._unsupported_logged:
                    log.warning("container logs are not rotated: the runtime cannot reopen a log: %s", exc)
                    self._unsupported_logged = True
            except (KubeletError, OSError) as exc:
                log.warning("cannot rotate the log %s of container %s: %s", c.log_path, c.id, exc)
            else:
                if target is not None:
                    rotated.append(target)
        return rotated

    async def _rotate(self, container_id: str, path: str) -> str | None:
        size = await asyncio.to_thread(_size, path)
        if size is None:
            # Rotated away without a reopen (an agent stopped in between, a failed rename back):
            # the runtime writes to a file nobody sees. The kubelet asks it to reopen too.
            log.info("the log %s of running container %s is missing: asking the runtime to reopen it",
                     path, container_id)
            await self._reopen(container_id)
            return None
        if size < self.max_size:
            return None
        target, existing = await asyncio.to_thread(_rename_aside, path, self._clock.now())
        try:
            await self._reopen(container_id)
        except BaseException:
            # The runtime still writes to the renamed file: give it its name back (two cheap
            # syscalls, done here so that a cancelled pass does it too), try again next pass.
            if not _rename_back(target, path):
                log.info("the runtime reopened the log %s after all; %s stays rotated", path, target)
            raise
        # `existing` lacks the file just rotated, the newest: keep max_files-2 of them (as the
        # shim; a clock gone backwards can make the new name sort first, it is still kept).
        await asyncio.to_thread(_remove, existing[: max(0, len(existing) - (self.max_files - 2))])
        log.debug("rotated the log of container %s to %s", container_id, target)
        return target

    async def _reopen(self, container_id: str) -> None:
        await self._runtime.reopen_container_log(container_id)
        self._unsupported_logged = False  # a runtime that can again: say so again should it stop
