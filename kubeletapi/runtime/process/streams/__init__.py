"""Streams of the process runtime: exec sessions, attachments and port-forward connections.

- exec.py: ExecSession (the shim's `exec` with pipes or ptys) and collect();
- attach.py: AttachSession and the CRI log follower it reads;
- killtree.py: what close() kills when an exec still runs;
- net.py: port-forward connections;
- fdio.py: the non-blocking fd plumbing they share.
"""

from __future__ import annotations

from kubeletapi.runtime.process.streams.attach import AttachSession, LogFollower
from kubeletapi.runtime.process.streams.exec import ExecSession, collect
from kubeletapi.runtime.process.streams.killtree import kill_session_tree
from kubeletapi.runtime.process.streams.net import connect

__all__ = ["AttachSession", "ExecSession", "LogFollower", "collect", "connect", "kill_session_tree"]
