"""The probe manager: workers per pod, and what the pod machinery asks of probe results.

- add_pod / remove_pod start and stop one worker per container probe (startup, readiness,
  liveness of each app container); a worker that ends by itself (pod finished, container gone
  for good) leaves the map.
- started / ready answer as the kubelet's UpdatePodStatus does, for a running container:
  started = the startup result is Success, or there is no startup probe; ready (once started)
  = the readiness result is Success, or there is no readiness probe; a readiness worker whose
  container is not ready yet is triggered to run now (so a container becomes Ready without
  waiting for the next period).
- failure: the liveness or startup Failure of a running container that the pod syncer acts on
  (kill, then restart under the restartPolicy), with the failing probe's output.
- Every change of a stored result calls `on_change(pod uid)`: the pod manager syncs the pod.

It reads pod statuses and reports changes through callables, so it never imports the pods
package (pods and prober are siblings: kubelet/pods.py wires them).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

from kubeletapi.aio import cancel_and_wait
from kubeletapi.api.core_v1 import Pod
from kubeletapi.clock import Clock
from kubeletapi.prober.handlers import EXEC_SLOTS, Executor, ProbeRunner
from kubeletapi.prober.results import ProbeKey, ProbeObserver, ProbeType, Result, ResultsCache
from kubeletapi.prober.worker import ProbeEvents, Runner, StatusSource, Worker

log = logging.getLogger(__name__)
STOP_WAIT_S = 2.0

_WorkerKey = tuple[str, str, ProbeType]  # pod uid, container name, probe type


class ProbeManager:
    def __init__(
        self,
        executor: Executor,
        clock: Clock,
        status: StatusSource,
        on_change: Callable[[str], None],
        *,
        user_agent: str,
        exec_slots: int = EXEC_SLOTS,
        runner: Runner | None = None,
        rng: random.Random | None = None,
        events: ProbeEvents | None = None,
    ) -> None:
        self._clock = clock
        self._events = events
        self._status = status
        self._on_change = on_change
        self._runner: Runner = runner or ProbeRunner(executor, user_agent, exec_slots)
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not security
        self._results = {t: ResultsCache(self._changed) for t in ProbeType}
        self._workers: dict[_WorkerKey, Worker] = {}
        self._observers: list[ProbeObserver] = []

    def add_observer(self, observer: ProbeObserver) -> None:
        """Report every probe run to `observer` (metrics; a benchmark's scheduling recorder)."""
        self._observers.append(observer)

    # --- pods ----------------------------------------------------------------------------------
    def add_pod(self, pod: Pod) -> None:
        """Start the pod's workers (those already running are kept)."""
        meta = pod.metadata
        for container in pod.spec.containers:
            for probe_type, probe in (
                (ProbeType.STARTUP, container.startup_probe),
                (ProbeType.READINESS, container.readiness_probe),
                (ProbeType.LIVENESS, container.liveness_probe),
            ):
                wkey = (meta.uid, container.name, probe_type)
                if probe is None or wkey in self._workers:
                    continue
                key = ProbeKey(meta.uid, meta.namespace, meta.name, container.name, probe_type)
                worker = Worker(key, pod, container, probe, runner=self._runner, results=self._results[probe_type],
                                status=self._status, clock=self._clock, rng=self._rng, observers=self._observers,
                                on_exit=self._worker_exited, events=self._events)
                self._workers[wkey] = worker
                worker.start()

    def remove_pod(self, uid: str) -> None:
        """Stop the pod's workers; their results and metric series go with them."""
        for wkey in [k for k in self._workers if k[0] == uid]:
            self._workers.pop(wkey).stop()

    def _worker_exited(self, worker: Worker) -> None:
        key = worker.key
        wkey = (key.pod_uid, key.container, key.probe_type)
        current = self._workers.get(wkey)
        if current is worker:
            del self._workers[wkey]
        elif current is not None:
            return  # a newer worker for the same probe already counts under these labels
        for observer in self._observers:
            observer.worker_stopped(key)

    def _changed(self, uid: str) -> None:
        self._on_change(uid)

    async def stop(self) -> None:
        """Stop every worker; runs in flight get STOP_WAIT_S to finish, then are cancelled."""
        workers = list(self._workers.values())
        for worker in workers:
            worker.stop()
        tasks = [w.task for w in workers if w.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=STOP_WAIT_S)
            await cancel_and_wait(pending)
        self._workers.clear()

    def keys(self) -> list[ProbeKey]:
        return [w.key for w in self._workers.values()]

    # --- what the pod machinery asks ----------------------------------------------------------
    def started(self, pod_uid: str, container: str, container_id: str) -> bool:
        """Whether a running container counts as started."""
        verdict = self._results[ProbeType.STARTUP].get(container_id)
        if verdict is not None:
            return verdict.result is Result.SUCCESS
        return (pod_uid, container, ProbeType.STARTUP) not in self._workers

    def ready(self, pod_uid: str, container: str, container_id: str) -> bool:
        """Whether a running, started container is ready."""
        verdict = self._results[ProbeType.READINESS].get(container_id)
        if verdict is not None and verdict.result is Result.SUCCESS:
            return True
        worker = self._workers.get((pod_uid, container, ProbeType.READINESS))
        if worker is None:
            return True
        worker.trigger()
        return False

    def failure(self, pod_uid: str, container: str, container_id: str) -> tuple[str, str] | None:
        """("liveness" | "startup", output) when that probe failed for this container."""
        for probe_type in (ProbeType.LIVENESS, ProbeType.STARTUP):
            verdict = self._results[probe_type].get(container_id)
            if verdict is not None and verdict.result is Result.FAILURE:
                return probe_type.value.lower(), verdict.output
        return None
