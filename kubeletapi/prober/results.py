"""Probe results: the kinds, the per-run record, and the cache keyed by container id.

As the kubelet's results manager: one cache per probe type, keyed by the runtime's container id
(so a restarted container starts with no result), where a set that changes the stored result
reports the pod (the pod manager then syncs it). A worker seeds a new container with its type's
initial value: readiness Failure (not ready until a probe succeeds), liveness Success (alive
until proven otherwise), startup Unknown (not started until a probe succeeds).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class ProbeType(enum.Enum):
    """The `probe_type` label values."""

    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"


class Result(enum.Enum):
    """What a probe concluded, as the `result` label values spell it."""

    SUCCESS = "successful"
    FAILURE = "failed"
    UNKNOWN = "unknown"


INITIAL: dict[ProbeType, Result] = {
    ProbeType.READINESS: Result.FAILURE,
    ProbeType.LIVENESS: Result.SUCCESS,
    ProbeType.STARTUP: Result.UNKNOWN,
}


@dataclass(frozen=True)
class Outcome:
    """What one handler run found (pkg/probe's Result, output, error triple).

    `warning` marks a success the kubelet reports as a warning (an httpGet redirect to another
    host); `error` marks a run that could not decide (an unresolvable port, a body cut short, an
    exec the runtime refused): the kubelet retries it up to 3 times, then throws it away."""

    result: Result
    output: str = ""
    warning: bool = False
    error: str | None = None


@dataclass(frozen=True)
class ProbeKey:
    """One worker: a probe type of a container of a pod (the metric labels come from it)."""

    pod_uid: str
    namespace: str
    pod: str
    container: str
    probe_type: ProbeType


@dataclass(frozen=True)
class ProbeRecord:
    """One probe execution, for observers (metrics; a scheduling benchmark).

    Times are the prober clock's monotonic seconds: `scheduled` is the tick the run belongs to
    (the jittered first tick, then every period; a manual readiness trigger schedules "now"),
    `started` when the handler began (after waiting for an exec slot, if any), so
    `started - scheduled` is the scheduling lag."""

    key: ProbeKey
    result: Result
    output: str
    scheduled: float
    started: float
    duration_s: float
    triggered: bool = False


class ProbeObserver(Protocol):
    """Where workers report (kubeletapi.metrics.probes.ProbeMetrics implements it)."""

    def probe_finished(self, record: ProbeRecord) -> None:
        """A probe ran and its result counts (errored runs are not reported, as the kubelet)."""
        ...

    def worker_stopped(self, key: ProbeKey) -> None:
        """The worker ended: its series go."""
        ...


@dataclass(frozen=True)
class Verdict:
    result: Result
    output: str = ""


class ResultsCache:
    """Latest result per container id for one probe type."""

    def __init__(self, on_change: Callable[[str], None]) -> None:
        self._on_change = on_change
        self._items: dict[str, Verdict] = {}

    def get(self, container_id: str) -> Verdict | None:
        return self._items.get(container_id)

    def set(self, container_id: str, verdict: Verdict, pod_uid: str) -> bool:
        """Store; a new or different result reports the pod (and returns True)."""
        before = self._items.get(container_id)
        self._items[container_id] = verdict
        if before is None or before.result is not verdict.result:
            self._on_change(pod_uid)
            return True
        return False

    def remove(self, container_id: str) -> None:
        self._items.pop(container_id, None)

    def __len__(self) -> int:
        return len(self._items)
