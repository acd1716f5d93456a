"""The pod startup SLI (pods/startupsli.py) with a fake clock, as the kubelet's
PodStartupLatencyTracker: which pods are tracked, the image pull subtraction, one record per pod,
the first network pod only; then its families on /metrics (metrics/podstartup.py) and the parts
that report to it (the image manager, the status sync, the API server's pod source)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from kubeletapi.api.core_v1 import PodStatus
from kubeletapi.clock import FakeClock
from kubeletapi.errors import Unavailable
from kubeletapi.metrics.exposition import render_registry
from kubeletapi.metrics.podstartup import PodStartupMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.pods.apisource import ApiServerSource
from kubeletapi.pods.apistatus import BoundPod, StatusSync
from kubeletapi.pods.images import ImageManager
from kubeletapi.pods.startupsli import PodStartupTracker, has_started
from tests.pods.test_apisource import ScriptedApi, listed
from tests.pods.test_apistatus import Pods, RecordingApi
from tests.pods.test_images import FakeImages

Json = dict[str, Any]
CREATED = 1_800_000_000.0  # 2027-01-15T08:00:00Z
CREATED_TEXT = "2027-01-15T08:00:00Z"


class Observed:
    def __init__(self) -> None:
        self.seen: list[tuple[float, float, bool]] = []

    def pod_startup_observed(self, sli_s: float, total_s: float, first_network: bool) -> None:
        self.seen.append((sli_s, total_s, first_network))


def pod(uid: str = "u1", phase: str = "Pending", started: bool = False, start_time: bool = False,
        host_network: bool = False, containers: int = 1) -> Json:
    status: Json = {"phase": phase}
    if start_time:
        status["startTime"] = CREATED_TEXT
    state: Json = {"running": {"startedAt": "2027-01-15T08:00:01Z"}} if started else {"waiting": {"reason": "X"}}
    status["containerStatuses"] = [{"name": f"c{i}", "state": state} for i in range(containers)]
    spec: Json = {"containers": [{"name": f"c{i}"} for i in range(containers)]}
    if host_network:
        spec["hostNetwork"] = True
    return {"metadata": {"namespace": "ns", "name": f"p-{uid}", "uid": uid, "creationTimestamp": CREATED_TEXT,
                         "resourceVersion": "7"}, "spec": spec, "status": status}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=CREATED + 1)


def start(tracker: PodStartupTracker, clock: FakeClock, obj: Json, run_after: float, watch_after: float) -> None:
    """Seen pending, written running `run_after` s later, then watched running `watch_after` s later."""
    tracker.observed_on_watch(obj, clock.now())
    clock.advance(run_after)
    statuses = pod(started=True)["status"]["containerStatuses"]
    running = {**obj, "status": {**obj["status"], "containerStatuses": statuses}}
    tracker.status_updated(running)
    clock.advance(watch_after)
    tracker.observed_on_watch(running, clock.now())


def test_a_pod_seen_pending_then_running_is_measured_from_its_creation(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    start(tracker, clock, pod(), 2, 0.5)
    assert seen.seen == [(3.5, 3.5, True)]  # created 1 s before it was first seen


def test_image_pulls_are_subtracted_first_start_to_last_finish(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    tracker.image_started_pulling("u1")
    clock.advance(3)
    tracker.image_started_pulling("u1")  # a second image: the span starts at the first
    clock.advance(1)
    tracker.image_finished_pulling("u1")
    clock.advance(1)
    tracker.image_finished_pulling("u1")  # ... and ends at the last
    tracker.image_started_pulling("other")  # an untracked pod: nothing
    running = pod(started=True)
    tracker.status_updated(running)
    clock.advance(1)
    tracker.observed_on_watch(running, clock.now())
    assert seen.seen == [(7 - 5, 7, True)]


def test_a_pull_that_never_finished_subtracts_nothing(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    tracker.image_started_pulling("u1")
    clock.advance(2)
    tracker.status_updated(pod(started=True))
    tracker.observed_on_watch(pod(started=True), clock.now())
    assert seen.seen == [(3, 3, True)]


def test_a_pod_already_started_when_first_seen_is_never_tracked(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    start(tracker, clock, pod(start_time=True), 1, 1)
    assert seen.seen == [] and tracker.tracked == 0


def test_a_terminal_pod_drops_its_record(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    assert tracker.tracked == 1
    tracker.status_updated(pod(started=True))
    tracker.observed_on_watch(pod(phase="Failed"), clock.now())
    assert tracker.tracked == 0
    tracker.observed_on_watch(pod(phase="Succeeded"), clock.now())  # and is not tracked anew
    tracker.observed_on_watch(pod(started=True), clock.now())  # a first sighting again, not a record
    assert seen.seen == []


def test_running_only_when_every_container_runs_with_a_start_time(clock: FakeClock) -> None:
    assert has_started(pod(started=True, containers=2))
    assert has_started({"status": {}})  # no container statuses: vacuously (as hasPodStartedSLO)
    mixed = pod(started=True, containers=2)
    mixed["status"]["containerStatuses"][1]["state"] = {"waiting": {}}
    assert not has_started(mixed)
    no_time = pod(started=True)
    no_time["status"]["containerStatuses"][0]["state"]["running"] = {}
    assert not has_started(no_time)
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    tracker.status_updated(mixed)  # not all running: not marked
    tracker.observed_on_watch(pod(started=True), clock.now())  # running on the watch, never written: nothing
    assert seen.seen == []


def test_recorded_once_and_the_first_running_write_counts(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    tracker.status_updated(pod(started=True))
    clock.advance(5)
    tracker.status_updated(pod(started=True))  # a later write does not move the running time
    tracker.observed_on_watch(pod(started=True), clock.now())
    clock.advance(5)
    tracker.observed_on_watch(pod(started=True), clock.now())
    tracker.status_updated(pod(started=True))
    assert seen.seen == [(6, 6, True)]


def test_only_the_first_pod_without_host_network_is_the_first_network_pod(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    start(tracker, clock, pod("host", host_network=True), 1, 0)
    start(tracker, clock, pod("net1"), 1, 0)
    start(tracker, clock, pod("net2"), 1, 0)
    assert [first for _, _, first in seen.seen] == [False, True, False]


def test_a_watch_that_shows_the_write_before_its_answer_counts_from_that_watch(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    clock.advance(1)
    tracker.observed_on_watch(pod(containers=0), clock.now())  # no container statuses yet: not running
    clock.advance(1)
    tracker.observed_on_watch(pod(started=True), clock.now())  # the write, on the watch first
    clock.advance(1)
    tracker.observed_on_watch(pod(started=True), clock.now())  # still before the answer: the first counts
    assert seen.seen == []
    clock.advance(1)
    tracker.status_updated(pod(started=True))  # the answer: measured to the first watch that showed it
    tracker.observed_on_watch(pod(started=True), clock.now())
    assert seen.seen == [(3, 3, True)]


def test_a_deleted_pod_is_forgotten(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    tracker.status_updated(pod(started=True))
    tracker.delete("u1")
    tracker.observed_on_watch(pod(started=True), clock.now())  # seen anew: a record, no measure
    assert seen.seen == [] and tracker.tracked == 1


def test_the_log_line_has_the_kubelets_keys(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    tracker = PodStartupTracker(clock)
    with caplog.at_level(logging.INFO, logger="kubeletapi.pods.startupsli"):
        start(tracker, clock, pod(), 61.25, 0)
    line = caplog.messages[-1]
    assert line.startswith('Observed pod startup duration pod="ns/p-u1" podStartSLOduration=62.25 '
                           'podStartE2EDuration="1m2.25s" podCreationTimestamp="2027-01-15 08:00:00 +0000 UTC" '
                           'firstStartedPulling="0001-01-01 00:00:00 +0000 UTC" ')
    assert 'watchObservedRunningTime="2027-01-15 08:01:02.25 +0000 UTC"' in line


# --- /metrics -------------------------------------------------------------------------------------


def test_the_gauge_shows_zero_and_the_histograms_appear_with_the_first_pod() -> None:
    registry = new_registry()
    metrics = PodStartupMetrics(registry)
    text = render_registry(registry).decode()
    assert ("# HELP kubelet_first_network_pod_start_sli_duration_seconds [INTERNAL] Duration in seconds to start "
            "the first network pod, excluding time") in text
    assert "kubelet_first_network_pod_start_sli_duration_seconds 0\n" in text
    assert "kubelet_pod_start_sli_duration_seconds" not in text
    assert "kubelet_pod_start_total_duration_seconds" not in text
    metrics.pod_startup_observed(1.5, 2.5, False)  # a hostNetwork pod: the gauge stays
    metrics.pod_startup_observed(0.7, 0.7, True)
    text = render_registry(registry).decode()
    assert "kubelet_first_network_pod_start_sli_duration_seconds 0.7\n" in text
    assert "# TYPE kubelet_pod_start_sli_duration_seconds histogram" in text
    assert 'kubelet_pod_start_sli_duration_seconds_bucket{le="1"} 1\n' in text
    assert "kubelet_pod_start_sli_duration_seconds_sum 2.2\n" in text
    assert 'kubelet_pod_start_total_duration_seconds_bucket{le="3600"} 2\n' in text
    assert "kubelet_pod_start_total_duration_seconds_count 2\n" in text


# --- the parts that report ------------------------------------------------------------------------


def test_the_image_manager_reports_pulls_that_ran_and_succeeded(clock: FakeClock) -> None:
    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    images = FakeImages(pull_errors=[Unavailable("registry down")])
    manager = ImageManager(images, clock, pulls=tracker)
    assert not asyncio.run(manager.ensure("u1", "app:1", "IfNotPresent")).ok  # started, failed
    clock.advance(20)  # past the back-off
    assert asyncio.run(manager.ensure("u1", "app:1", "IfNotPresent")).ok
    clock.advance(1)
    assert asyncio.run(manager.ensure("u1", "app:1", "IfNotPresent")).ok  # present: no pull
    tracker.status_updated(pod(started=True))
    tracker.observed_on_watch(pod(started=True), clock.now())
    assert seen.seen == [(22 - 20, 22, True)]


def test_the_status_sync_reports_what_the_api_returned_and_forgets_pods_that_left(clock: FakeClock) -> None:
    returned = pod(started=True)

    class Returning(RecordingApi):
        async def patch(self, path: str, body: Json) -> Json:
            await super().patch(path, body)
            return returned

    seen = Observed()
    tracker = PodStartupTracker(clock, seen)
    tracker.observed_on_watch(pod(), clock.now())
    pods = Pods(BoundPod("ns", "p-u1", "u1", PodStatus(phase="Running"), PodStatus()))
    sync = StatusSync(Returning(), pods, clock, startup=tracker)
    asyncio.run(sync.sync())
    clock.advance(2)
    tracker.observed_on_watch(returned, clock.now())
    assert seen.seen == [(3, 3, True)]
    tracker.observed_on_watch(pod("u2"), clock.now())
    pods.pods = [BoundPod("ns", "p-u2", "u2", None, PodStatus())]
    asyncio.run(sync.sync())  # u1 left
    pods.pods = []
    asyncio.run(sync.sync())  # u2 left
    assert tracker.tracked == 0


def test_the_pod_source_shows_every_pod_of_each_set(clock: FakeClock) -> None:
    seen: list[tuple[str, float]] = []

    class Watch:
        def observed_on_watch(self, obj: Mapping[str, Any], when: float) -> None:
            seen.append((obj["metadata"]["uid"], when))

    mirror = pod("m1")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    api = ScriptedApi([listed("5", pod("a1"), mirror)], [])

    async def go() -> None:
        async def ready() -> None:
            return None

        source = ApiServerSource(api, "n1", ready, clock, Watch())
        updates: list[object] = []
        task = asyncio.create_task(source.run(updates.append))
        while not updates:
            await asyncio.sleep(0.002)
        task.cancel()

    asyncio.run(go())
    assert seen == [("a1", clock.now()), ("m1", clock.now())]
