"""The pod startup SLI, as the kubelet's PodStartupLatencyTracker measures it
(pkg/kubelet/util/pod_startup_latency_tracker.go) for kubelet_pod_start_sli_duration_seconds,
kubelet_pod_start_total_duration_seconds and kubelet_first_network_pod_start_sli_duration_seconds.

Four parts of the node report to it (in apiserver mode; a standalone node's pods are all static
and never tracked, as the kubelet's):
- the API server's pod source, every pod of each watched set, with when it saw it
  (`observed_on_watch`): a pod first seen without status.startTime gets a record (one scheduled
  while this node runs); a terminal pod (Succeeded, Failed) drops its record;
- the image manager, around each pull for a tracked pod (`image_started_pulling`: the first;
  `image_finished_pulling`: the last successful one);
- the status sync, with the pod the API server returned after a status patch that changed it
  (`status_updated`): the first time every container is running (started) is when it ran;
- the status sync again when a pod leaves the node (`delete`).

The watch then shows the running pod: the total is its creationTimestamp to that watch time, the
SLI the same less the span from the first pull's start to the last pull's end; both recorded
once per pod, and the first such pod without hostNetwork sets the first-network gauge. Mirror
pods are tracked like any API pod (the kubelet's config layer exempts only pods whose source is
not the API server). Times are the injected clock's wall clock.

One difference: the watch may deliver the write that shows the pod running before the write's
own answer reaches the status sync (both share one event loop here; in the kubelet they race
too, rarely). The kubelet then measures the pod only at a later watch event, if one comes; here
the first watch time that showed it running is used as soon as the answer comes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubeletapi.api.core_v1 import TERMINAL_PHASES, parse_time
from kubeletapi.clock import Clock
from kubeletapi.gofmt import go_duration, go_time

log = logging.getLogger(__name__)


class PodStartupObserver(Protocol):
    def pod_startup_observed(self, sli_s: float, total_s: float, first_network: bool) -> None:
        """A pod's startup measured (once per pod); `first_network`: the node's first pod
        without hostNetwork to be measured."""


@dataclass
class _State:
    first_started_pulling: float | None = None
    last_finished_pulling: float | None = None
    observed_running: float | None = None  # when a status write first showed it running
    watched_running: float | None = None  # when the watch first showed it running before that write's answer
    recorded: bool = False


class PodStartupTracker:
    def __init__(self, clock: Clock, observer: PodStartupObserver | None = None) -> None:
        self._clock = clock
        self._observer = observer
        self._pods: dict[str, _State] = {}
        self._first_network_seen = False

    def observed_on_watch(self, pod: Mapping[str, Any], when: float) -> None:
        """ObservedPodOnWatch: `pod` (wire form) in a set the API server's watch delivered at `when`."""
        uid = _uid(pod)
        status = pod.get("status") or {}
        if status.get("phase") in TERMINAL_PHASES:
            self._pods.pop(uid, None)
            return
        state = self._pods.get(uid)
        if state is None:
            if not status.get("startTime"):  # only pods this node has not acknowledged yet
                self._pods[uid] = _State()
            return
        if state.recorded or not has_started(pod):
            return
        if state.observed_running is None:
            # Only container statuses the node wrote say so (none at all is "started" vacuously).
            if state.watched_running is None and status.get("containerStatuses"):
                state.watched_running = when
            return
        self._record(pod, state, when)

    def _record(self, pod: Mapping[str, Any], state: _State, when: float) -> None:
        created = _created(pod)
        if created is None:
            return
        total = when - created
        pulling = _span(state.first_started_pulling, state.last_finished_pulling)
        sli = total - pulling
        state.recorded = True
        self._log(pod, state, sli, total, created, when)
        first_network = not (pod.get("spec") or {}).get("hostNetwork") and not self._first_network_seen
        if first_network:
            self._first_network_seen = True
        if self._observer is not None:
            self._observer.pod_startup_observed(sli, total, first_network)

    def image_started_pulling(self, pod_uid: str) -> None:
        state = self._pods.get(pod_uid)
        if state is not None and state.first_started_pulling is None:
            state.first_started_pulling = self._clock.now()

    def image_finished_pulling(self, pod_uid: str) -> None:
        state = self._pods.get(pod_uid)
        if state is not None:
            state.last_finished_pulling = self._clock.now()

    def status_updated(self, pod: Mapping[str, Any]) -> None:
        """RecordStatusUpdated: the API server's pod after a status patch that changed it."""
        state = self._pods.get(_uid(pod))
        if state is None or state.recorded or state.observed_running is not None:
            return
        if has_started(pod):
            log.debug("Mark when the pod was running for the first time pod=%s rv=%s", _ref(pod),
                      (pod.get("metadata") or {}).get("resourceVersion", ""))
            state.observed_running = self._clock.now()
            if state.watched_running is not None:  # the watch showed this write before its answer came
                self._record(pod, state, state.watched_running)

    def delete(self, pod_uid: str) -> None:
        """DeletePodStartupState: the pod's status is dropped from the node."""
        self._pods.pop(pod_uid, None)

    @property
    def tracked(self) -> int:
        return len(self._pods)

    @staticmethod
    def _log(pod: Mapping[str, Any], state: _State, sli: float, total: float, created: float, when: float) -> None:
        log.info("Observed pod startup duration pod=%s podStartSLOduration=%s podStartE2EDuration=%s "
                 "podCreationTimestamp=%s firstStartedPulling=%s lastFinishedPulling=%s observedRunningTime=%s "
                 "watchObservedRunningTime=%s", _quoted(_ref(pod)), sli, _quoted(go_duration(total)),
                 _quoted(go_time(created)), _quoted(go_time(state.first_started_pulling)),
                 _quoted(go_time(state.last_finished_pulling)), _quoted(go_time(state.observed_running)),
                 _quoted(go_time(when)))


def has_started(pod: Mapping[str, Any]) -> bool:
    """hasPodStartedSLO: every container status says running with a startedAt (vacuously true
    for none)."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        running = (cs.get("state") or {}).get("running") if isinstance(cs, dict) else None
        if not isinstance(running, dict) or not running.get("startedAt"):
            return False
    return True


def _uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid", ""))


def _ref(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _created(pod: Mapping[str, Any]) -> float | None:
    try:
        return parse_time((pod.get("metadata") or {}).get("creationTimestamp")).timestamp()
    except ValueError:
        log.warning("pod %s: no valid creationTimestamp; its startup is not measured", _ref(pod))
        return None


def _span(start: float | None, end: float | None) -> float:
    """lastFinishedPulling - firstStartedPulling: 0 without a pull. A pull that started and never
    succeeded (the image then found present) also counts 0 here; the kubelet subtracts Go's zero
    time there and records an overflowed duration."""
    if start is None or end is None:
        return 0.0
    return end - start


def _quoted(text: str) -> str:
    return f'"{text}"'
