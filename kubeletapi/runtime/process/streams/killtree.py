"""Killing what an exec left running.

close() of a session whose shim still runs SIGKILLs everything in the shim's session and in the
sessions its descendants lead (the tty command's), found by a scan of /proc that repeats until a
scan finds nothing new: a process cannot fork once SIGKILL is pending, so the second scan sees
whatever was forked before the first kill. Sessions are followed rather than process groups
because both the shim's group and the tty command's session cross into the container's pid
namespace; the pids seen in /proc are the host's. After a normal exit nothing is killed: a
daemon the command started stays, as with containerd.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from kubeletapi.procread import ProcStat, read_stat
from kubeletapi.runtime.process import procfs

KILL_ROUNDS = 10


def _processes(proc: Path = procfs.PROC) -> dict[int, ProcStat]:
    """Every live (not zombie) process (its parent, session and start time are what is used)."""
    table: dict[int, ProcStat] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = read_stat(int(entry.name), proc)
        except (OSError, IndexError, ValueError):
            continue  # exited mid-scan, or a torn record
        if stat.state != "Z":
            table[stat.pid] = stat
    return table


def _session_tree(table: dict[int, ProcStat], root: int) -> set[int]:
    """`root`, its descendants, and every member of its session or of one a descendant leads."""
    children: dict[int, list[int]] = {}
    for pid, p in table.items():
        children.setdefault(p.ppid, []).append(pid)
    found = {root} if root in table else set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    sessions = {root} | {pid for pid in found if table[pid].session == pid}
    return found | {pid for pid, p in table.items() if p.session in sessions}


def _kill(pid: int, ticks: int) -> None:
    """SIGKILL `pid` if it is still the process seen (same start time): pid reuse is no risk."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:
        if procfs.start_ticks(pid) == ticks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        if procfs.start_ticks(pid) == ticks:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass
    finally:
        os.close(pidfd)


def kill_session_tree(root: int) -> int:
    """SIGKILL what _session_tree finds, scanning again until a scan finds nothing new (a process
    with SIGKILL pending cannot fork, so what escaped one scan shows in the next). The number of
    processes killed."""
    killed: set[int] = set()
    for _ in range(KILL_ROUNDS):
        table = _processes()
        new = _session_tree(table, root) - killed
        if not new:
            break
        for pid in new:
            _kill(pid, table[pid].start_ticks)
        killed |= new
    return len(killed)
