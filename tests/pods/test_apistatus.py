"""The pod status sync (pods/apistatus.py) against a recording API: what is patched when, the
final DELETE, and what an outage, a vanished pod or a refusal do."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kubeletapi.api.core_v1 import PodCondition, PodStatus
from kubeletapi.clock import FakeClock
from kubeletapi.errors import Forbidden, KubeletError, NotFound, Unavailable
from kubeletapi.pods.apistatus import BoundPod, StatusSync, foreign_conditions, status_patch

Json = dict[str, Any]


class RecordingApi:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Json | None]] = []
        self.fail: KubeletError | None = None
        self.fail_only: str = ""  # fail only paths containing this

    async def patch(self, path: str, body: Json) -> Json:
        return self._call("PATCH", path, body)

    async def delete(self, path: str, options: Json | None = None) -> Json:
        return self._call("DELETE", path, options)

    def _call(self, verb: str, path: str, body: Json | None) -> Json:
        if self.fail is not None and self.fail_only in path:
            raise self.fail
        self.calls.append((verb, path, body))
        return {}


class Pods:
    def __init__(self, *pods: BoundPod) -> None:
        self.pods = list(pods)

    def bound_pods(self) -> list[BoundPod]:
        return list(self.pods)


def running(ready: bool = True) -> PodStatus:
    return PodStatus(phase="Running", pod_ip="10.0.0.5", conditions=[
        PodCondition(type="Ready", status="True" if ready else "False"),
        PodCondition(type="PodScheduled", status="True")])


def bound(status: PodStatus | None, reported: PodStatus | None = None, **kw: Any) -> BoundPod:
    return BoundPod("ns", "web", "uid-1", status, reported if reported is not None else PodStatus(), **kw)


PATH = "/api/v1/namespaces/ns/pods/web"


# --- the patch ---------------------------------------------------------------------------------
def test_the_patch_keeps_foreign_conditions_replaces_owned_lists_and_clears_what_is_gone() -> None:
    gate = {"type": "example.com/gate", "status": "True"}
    current = {"phase": "Pending", "reason": "Old", "nominatedNodeName": "n1",
               "conditions": [gate, {"type": "PodScheduled", "status": "True"}],
               "podIPs": [{"ip": "10.0.0.9"}]}
    desired = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"},
                                                  {"type": "PodScheduled", "status": "True"}],
               "podIPs": [{"ip": "10.0.0.5"}], "resources": {"limits": {"cpu": "1"}}}
    patch = status_patch(current, desired, foreign_conditions(current))
    assert patch == {
        "phase": "Running",
        "conditions": [gate, {"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"},
                       {"$patch": "replace"}],
        "podIPs": [{"ip": "10.0.0.5"}, {"$patch": "replace"}],
        "resources": {"limits": {"cpu": "1"}, "$patch": "replace"},
        "reason": None,  # the node no longer reports it; nominatedNodeName is the scheduler's
    }


def test_the_atomic_container_status_lists_are_sent_without_a_directive() -> None:
    # containerStatuses & co. have no patch strategy: the API server takes the patch's list as it
    # is, so a `$patch: replace` element there became an empty, nameless container status.
    waiting = {"name": "main", "state": {"waiting": {"reason": "ContainerCreating"}}}
    running_ = {"name": "main", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
    current = {"containerStatuses": [waiting], "initContainerStatuses": [waiting]}
    desired = {"containerStatuses": [running_], "initContainerStatuses": [running_],
               "ephemeralContainerStatuses": [running_]}
    assert status_patch(current, desired, []) == desired


def test_no_patch_when_the_api_already_agrees() -> None:
    status = running().to_wire()
    assert status_patch(status, status, []) == {}


# --- the sync ----------------------------------------------------------------------------------
def test_a_changed_status_is_patched_once_with_the_uid_precondition() -> None:
    api, pods = RecordingApi(), Pods(bound(running()))
    sync = StatusSync(api, pods, FakeClock())
    assert asyncio.run(sync.sync())
    assert asyncio.run(sync.sync())  # nothing changed: nothing sent
    assert len(api.calls) == 1
    verb, path, body = api.calls[0]
    assert (verb, path) == ("PATCH", PATH + "/status")
    assert body is not None and body["metadata"] == {"uid": "uid-1"} and body["status"]["phase"] == "Running"
    pods.pods = [bound(running(ready=False))]
    asyncio.run(sync.sync())
    assert len(api.calls) == 2 and sync.patches == 2


def test_a_resync_repairs_what_the_api_lost_and_is_silent_when_it_agrees() -> None:
    api, pods = RecordingApi(), Pods(bound(running()))
    sync = StatusSync(api, pods, FakeClock())
    asyncio.run(sync.sync())
    pods.pods = [bound(running(), reported=running())]  # the watch shows the write
    asyncio.run(sync.sync(resync=True))
    assert len(api.calls) == 1
    pods.pods = [bound(running(), reported=PodStatus(phase="Pending"))]  # e.g. etcd restored
    asyncio.run(sync.sync(resync=True))
    assert len(api.calls) == 2 and api.calls[1][2]["status"]["phase"] == "Running"  # type: ignore[index]


def test_a_finished_deleted_pod_is_written_then_deleted_with_grace_0() -> None:
    final = PodStatus(phase="Succeeded")
    api, pods = RecordingApi(), Pods(bound(running()))
    sync = StatusSync(api, pods, FakeClock())
    asyncio.run(sync.sync())
    pods.pods = [bound(running(), deleting=True)]  # deleted, still stopping
    asyncio.run(sync.sync())
    assert [c[0] for c in api.calls] == ["PATCH"]
    pods.pods = [bound(final, deleting=True, finished=True)]
    asyncio.run(sync.sync())
    assert [c[0] for c in api.calls] == ["PATCH", "PATCH", "DELETE"]
    assert api.calls[1][2]["status"]["phase"] == "Succeeded"  # type: ignore[index]
    assert api.calls[2] == ("DELETE", PATH, {"gracePeriodSeconds": 0, "preconditions": {"uid": "uid-1"}})
    asyncio.run(sync.sync())
    assert len(api.calls) == 3  # deleted once


def test_a_pod_never_synced_and_deleted_is_deleted_at_once() -> None:
    api = RecordingApi()
    sync = StatusSync(api, Pods(bound(None, deleting=True, finished=True)), FakeClock())
    asyncio.run(sync.sync())
    assert [c[0] for c in api.calls] == ["DELETE"]


def test_an_outage_loses_nothing() -> None:
    api, pods = RecordingApi(), Pods(bound(running()))
    sync = StatusSync(api, pods, FakeClock())
    api.fail = Unavailable("connection refused")
    assert asyncio.run(sync.sync()) is False
    assert asyncio.run(sync.sync()) is False
    api.fail = None
    assert asyncio.run(sync.sync()) is True
    assert len(api.calls) == 1 and api.calls[0][0] == "PATCH"


def test_a_pod_gone_from_the_api_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    api, pods = RecordingApi(), Pods(bound(running()))
    sync = StatusSync(api, pods, FakeClock())
    api.fail = NotFound("pods \"web\" not found")
    with caplog.at_level(logging.INFO):
        assert asyncio.run(sync.sync()) is True
    assert "ns/web (uid-1) is gone from the API server" in caplog.text
    api.fail = None
    pods.pods = [bound(running(ready=False))]
    asyncio.run(sync.sync())
    assert api.calls == []  # never written again under that UID


def test_forbidden_is_logged_with_the_pod_named_and_the_rest_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    api = RecordingApi()
    other = BoundPod("ns", "db", "uid-2", running(), PodStatus())
    sync = StatusSync(api, Pods(bound(running()), other), FakeClock())
    api.fail = Forbidden("pods \"web\" is forbidden: node can only update pods bound to it")
    api.fail_only = "/pods/web/"
    assert asyncio.run(sync.sync()) is True
    assert "pod ns/web: the API server forbids the node's write" in caplog.text
    assert [c[1] for c in api.calls] == ["/api/v1/namespaces/ns/pods/db/status"]


def test_run_writes_on_notify_without_waiting_for_the_resync() -> None:
    async def go() -> None:
        clock = FakeClock()
        api, pods = RecordingApi(), Pods()
        sync = StatusSync(api, pods, clock)
        task = asyncio.create_task(sync.run())
        try:
            pods.pods = [bound(running())]
            sync.notify()
            for _ in range(200):
                if api.calls:
                    break
                await asyncio.sleep(0.005)
            assert len(api.calls) == 1
        finally:
            task.cancel()

    asyncio.run(go())


class Durations:
    def __init__(self) -> None:
        self.seen: list[float] = []

    def status_synced(self, duration_s: float) -> None:
        self.seen.append(duration_s)


def test_status_sync_duration_runs_from_the_change_found_to_its_write() -> None:
    """kubelet_pod_status_sync_duration_seconds: an outage's retries are inside one observation,
    truncated to milliseconds; a resync that writes nothing new observes nothing."""
    clock, api, durations = FakeClock(), RecordingApi(), Durations()
    pods = Pods(bound(running()))
    sync = StatusSync(api, pods, clock, observer=durations)
    api.fail = Unavailable("the API server is away")
    assert not asyncio.run(sync.sync())
    clock.advance(2.5004)
    pods.pods = [bound(running(ready=False))]  # a second change before the write: still one
    assert not asyncio.run(sync.sync())
    api.fail = None
    assert asyncio.run(sync.sync())
    assert durations.seen == [2.5]
    asyncio.run(sync.sync(resync=True))  # repairs the API's copy (empty here): a write, no change found
    asyncio.run(sync.sync())
    assert durations.seen == [2.5] and len(api.calls) == 2
    pods.pods = [bound(running())]
    asyncio.run(sync.sync())
    assert durations.seen == [2.5, 0.0] and len(api.calls) == 3
