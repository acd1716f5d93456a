"""One probe worker: an asyncio task per (pod, container, probe type), as the kubelet's worker.

Timing: the first run waits a random fraction of the period (so pods added together do not
probe in lockstep), then one run per period on a fixed grid; a run that overruns skips the
ticks it missed (Go's ticker drops them) and the next run starts at once. A readiness worker
can be triggered (the status of a started container that is not ready yet asks for a run now):
the grid restarts from that run, as the kubelet resets its ticker. Runs of different workers
never wait for each other.

Each run (the kubelet's doProbe) reads the pod's latest published status:
- no status or no container id yet: wait; pod Succeeded/Failed: the worker ends;
- a new container id: the previous container's result is dropped and the new one starts at the
  type's initial value (results are keyed by container id, so a restart resets them);
- on hold (after a liveness failure or any startup verdict) until a new container appears;
- a terminated container: its result is Failure; the worker ends if it will not restart;
- initialDelaySeconds after the container started, and startup gating: liveness and
  readiness wait until the container is `started`, the startup probe stops once it is;
- then the handler runs; an errored run is thrown away; the result is stored only after
  successThreshold / failureThreshold identical results in a row.

Every run reports as prober.probe does, to the container's reference: a failure is a Warning
Unhealthy `<Type> probe failed: <output>` (each run, before any threshold), an errored run
Unhealthy `<Type> probe errored and resulted in unknown state: <error>`, a success with a
warning ProbeWarning `<Type> probe warning: <output>`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from kubeletapi.api.core_v1 import TERMINAL_PHASES, Container, ContainerStatus, Pod, PodStatus, Probe
from kubeletapi.clock import Clock
from kubeletapi.events import reasons
from kubeletapi.events.recorder import NullRecorder
from kubeletapi.prober.results import (
    INITIAL,
    Outcome,
    ProbeKey,
    ProbeObserver,
    ProbeRecord,
    ProbeType,
    Result,
    ResultsCache,
    Verdict,
)

log = logging.getLogger(__name__)

DEFAULT_PERIOD_S = 10  # API defaults, for a probe that did not come through the manifest loader
DEFAULT_SUCCESS = 1
DEFAULT_FAILURE = 3


class Runner(Protocol):
    async def run(self, probe: Probe, container: Container, container_id: str, pod_ip: str) -> Outcome: ...


StatusSource = Callable[[str], PodStatus | None]
# pkg/probe's Result strings, as the errored-run event spells them
_PROBE_RESULT = {Result.SUCCESS: "success", Result.FAILURE: "failure", Result.UNKNOWN: "unknown"}


class ProbeEvents(Protocol):
    """Where probe runs are reported (the event recorder)."""

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None: ...


def next_tick(scheduled: float, period: float, now: float) -> float:
    """The next grid point after `scheduled`; when late, the latest one not after `now`."""
    following = scheduled + period
    if following <= now:
        following += ((now - following) // period) * period
    return following


def runtime_id(container_id: str) -> str:
    """`process://abc` -> `abc` (results are keyed by the runtime's id)."""
    return container_id.partition("://")[2] or container_id


class Worker:
    def __init__(
        self,
        key: ProbeKey,
        pod: Pod,
        container: Container,
        probe: Probe,
        *,
        runner: Runner,
        results: ResultsCache,
        status: StatusSource,
        clock: Clock,
        rng: random.Random,
        observers: Sequence[ProbeObserver],
        on_exit: Callable[[Worker], None],
        events: ProbeEvents | None = None,
    ) -> None:
        self.key = key
        self._pod = pod
        self._events: ProbeEvents = events or NullRecorder()
        self.period = float(probe.period_seconds or DEFAULT_PERIOD_S)
        self._pod_policy = pod.spec.restart_policy or "Always"
        self._container = container
        self._probe = probe
        self._success_threshold = probe.success_threshold or DEFAULT_SUCCESS
        self._failure_threshold = probe.failure_threshold or DEFAULT_FAILURE
        self._runner = runner
        self._results = results
        self._status = status
        self._clock = clock
        self._rng = rng
        self._observers = observers
        self._on_exit = on_exit
        self._cid = ""
        self._on_hold = False
        self._last: Result | None = None
        self._streak = 0
        self._wake = asyncio.Event() if key.probe_type is ProbeType.READINESS else None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._in_run = False

    # --- control -------------------------------------------------------------------------------
    def start(self) -> None:
        name = f"probe-{self.key.probe_type.value.lower()}-{self.key.pod}-{self.key.container}"
        first = self._clock.monotonic() + self._rng.random() * self.period
        self._task = asyncio.create_task(self._loop(first), name=name)

    def stop(self) -> None:
        """End the worker: at once when it waits; after the run in flight, as the kubelet's stop
        channel does (an exec probe is not cut off mid-run: its timeout bounds it)."""
        self._stopping = True
        if self._task is not None and not self._in_run:
            self._task.cancel()

    @property
    def task(self) -> asyncio.Task[None] | None:
        return self._task

    def trigger(self) -> None:
        """Run as soon as possible (readiness only; a no-op for the other types)."""
        if self._wake is not None:
            self._wake.set()

    # --- loop ----------------------------------------------------------------------------------
    async def _loop(self, scheduled: float) -> None:
        try:
            while True:
                triggered = await self._wait_until(scheduled)
                if triggered:
                    scheduled = self._clock.monotonic()
                self._in_run = True
                try:
                    keep_going = await self._step(scheduled, triggered)
                except Exception:  # one bad run never ends the worker (the kubelet's HandleCrash)
                    log.exception("%s probe of %s/%s: a run failed", self.key.probe_type.value,
                                  self.key.pod, self.key.container)
                    keep_going = True
                finally:
                    self._in_run = False
                if not keep_going or self._stopping:
                    return
                scheduled = next_tick(scheduled, self.period, self._clock.monotonic())
        finally:
            self._cleanup()

    async def _wait_until(self, deadline: float) -> bool:
        """Sleep until `deadline` on the clock; True when a trigger came first."""
        remaining = deadline - self._clock.monotonic()
        if self._wake is None:
            if remaining > 0:
                await self._clock.sleep(remaining)
            return False
        if self._wake.is_set():
            self._wake.clear()
            return True
        if remaining <= 0:
            return False
        sleeper = asyncio.ensure_future(self._clock.sleep(remaining))
        waiter = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait((sleeper, waiter), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waiter.cancel()
        if self._wake.is_set():
            self._wake.clear()
            return True
        return False

    def _cleanup(self) -> None:
        if self._cid:
            self._results.remove(self._cid)
        self._on_exit(self)

    # --- one run -------------------------------------------------------------------------------
    async def _step(self, scheduled: float, triggered: bool) -> bool:
        """The kubelet's doProbe; False when the worker should end."""
        status = self._status(self.key.pod_uid)
        if status is None:
            return True
        if status.phase in TERMINAL_PHASES:
            return False
        c = next((s for s in status.container_statuses if s.name == self.key.container), None)
        if c is None or not c.container_id:
            return True
        cid = runtime_id(c.container_id)
        if cid != self._cid:
            self._new_container(cid)
        if self._on_hold:
            return True
        if c.state.running is None:
            if c.state.terminated is not None:
                # Only a terminated container: a created one that has not started yet keeps its
                # initial value (a Failure here would kill it the moment it starts).
                self._results.set(cid, Verdict(Result.FAILURE), self.key.pod_uid)
                return self._pod_policy != "Never"
            return True
        if not self._due(c):
            return True
        return await self._probe_once(cid, status.pod_ip, scheduled, triggered)

    def _new_container(self, cid: str) -> None:
        if self._cid:
            self._results.remove(self._cid)
        self._cid = cid
        self._on_hold = False
        self._last, self._streak = None, 0
        self._results.set(cid, Verdict(INITIAL[self.key.probe_type]), self.key.pod_uid)

    def _due(self, c: ContainerStatus) -> bool:
        """Past initialDelaySeconds, and gated by startup: liveness and readiness wait for
        `started`, the startup probe stops once it is."""
        running = c.state.running
        started_at = running.started_at if running is not None else None
        if started_at is not None and self._clock.now() - started_at.timestamp() < self._probe.initial_delay_seconds:
            return False
        if self.key.probe_type is ProbeType.STARTUP:
            return not c.started
        return bool(c.started)

    async def _probe_once(self, cid: str, pod_ip: str, scheduled: float, triggered: bool) -> bool:
        started = self._clock.monotonic()
        began = time.perf_counter()
        outcome = await self._runner.run(self._probe, self._container, cid, pod_ip)
        duration = time.perf_counter() - began
        key = self.key
        if self._stopping:
            return False  # the pod went while this run was in flight: nothing to report
        self._report(outcome)
        if outcome.error is not None:
            log.debug("%s probe of %s/%s:%s errored (result thrown away): %s", key.probe_type.value,
                      key.namespace, key.pod, key.container, outcome.error)
            return True
        record = ProbeRecord(key, outcome.result, outcome.output, scheduled, started, duration, triggered)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s probe of %s/%s:%s scheduled=%.6f started=%.6f lag=%.1fms took=%.1fms: %s%s",
                      key.probe_type.value, key.namespace, key.pod, key.container, scheduled, started,
                      (started - scheduled) * 1e3, duration * 1e3, outcome.result.value,
                      " (warning)" if outcome.warning else "")
        for observer in self._observers:
            observer.probe_finished(record)
        self._record(cid, outcome)
        return True

    def _report(self, outcome: Outcome) -> None:
        kind = self.key.probe_type.value
        if outcome.error is not None:
            reason = reasons.UNHEALTHY
            message = f"{kind} probe errored and resulted in {_PROBE_RESULT[outcome.result]} state: {outcome.error}"
        elif outcome.result is Result.FAILURE:
            reason, message = reasons.UNHEALTHY, f"{kind} probe failed: {outcome.output}"
        elif outcome.warning:
            reason, message = reasons.PROBE_WARNING, f"{kind} probe warning: {outcome.output}"
        else:
            return
        self._events.container_event(self._pod, self._container, reasons.WARNING, reason, message)

    def _record(self, cid: str, outcome: Outcome) -> None:
        result = outcome.result
        if result is self._last:
            self._streak += 1
        else:
            self._last, self._streak = result, 1
        if (result is Result.FAILURE and self._streak < self._failure_threshold) or (
            result is Result.SUCCESS and self._streak < self._success_threshold
        ):
            return
        key = self.key
        if self._results.set(cid, Verdict(result, outcome.output), key.pod_uid):
            level = logging.INFO if result is not Result.SUCCESS else logging.DEBUG
            log.log(level, "%s probe of container %s of pod %s/%s: %s%s", key.probe_type.value, key.container,
                    key.namespace, key.pod, result.value, f": {outcome.output[:200]}" if outcome.output else "")
        if (key.probe_type is ProbeType.LIVENESS and result is Result.FAILURE) or key.probe_type is ProbeType.STARTUP:
            # The container will be restarted (liveness, startup failure) or has started: no more
            # runs until a new container appears (the kubelet's onHold).
            self._on_hold = True
            self._streak = 0
