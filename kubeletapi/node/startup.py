"""The node's startup phases, as the kubelet's NodeStartupLatencyTracker measures them
(pkg/kubelet/util/node_startup_latency_tracker.go) for kubelet_node_startup_*_duration_seconds.

Times are wall-clock seconds: the machine's boot (/proc/stat btime; None when unknown), the
agent's start, its first attempt to register the Node, the creation of a new Node, and the first
status with Ready True the API server accepted. A Node that existed already (a restart) gives no
phase, as in the kubelet; each is measured once.

- pre_kubelet: boot to the agent's start (with the registration);
- pre_registration: the agent's start to the first registration attempt;
- registration: that attempt to the Node created;
- post_registration: the Node created to Ready (kubeletapi registers a Node whose first status
  may already be Ready: then this is ~0; the kubelet's first status patch comes right after);
- total: boot to Ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kubeletapi.clock import Clock


class StartupObserver(Protocol):
    def node_startup_phase(self, phase: str, seconds: float) -> None: ...


class NodeStartupTracker:
    def __init__(self, clock: Clock, agent_start: float, boot_time: float | None,
                 observer: StartupObserver | None = None) -> None:
        self._clock = clock
        self._agent_start = agent_start
        self._boot = boot_time
        self._observer = observer
        self._attempt: float | None = None
        self._registered: float | None = None
        self._ready: float | None = None

    def attempt(self) -> None:
        """The first attempt to register the Node (later ones change nothing)."""
        if self._attempt is None:
            self._attempt = self._clock.now()

    def registered_new(self) -> None:
        """The API server created this Node (after an attempt; once)."""
        if self._attempt is None or self._registered is not None:
            return
        self._registered = self._clock.now()
        if self._boot is not None:
            self._phase("pre_kubelet", self._agent_start - self._boot)
        self._phase("pre_registration", self._attempt - self._agent_start)
        self._phase("registration", self._registered - self._attempt)

    def ready(self) -> None:
        """The API server accepted a status with Ready True (after a new registration; once)."""
        if self._registered is None or self._ready is not None:
            return
        self._ready = self._clock.now()
        self._phase("post_registration", self._ready - self._registered)
        if self._boot is not None:
            self._phase("total", self._ready - self._boot)

    def _phase(self, phase: str, seconds: float) -> None:
        if self._observer is not None:
            self._observer.node_startup_phase(phase, seconds)


def is_ready(status: Mapping[str, Any]) -> bool:
    """A Node status (wire form) with the condition Ready True."""
    return any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
               for c in status.get("conditions") or [])
