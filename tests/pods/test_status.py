"""Pod status from the runtime's view: container statuses, getPhase, conditions, transitions, rejection."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from kubeletapi.api.core_v1 import (
    Container,
    ContainerState,
    ContainerStateRunning,
    ContainerStateTerminated,
    ContainerStateWaiting,
    ContainerStatus,
    Pod,
    PodCondition,
    PodStatus,
    ResourceRequirements,
    VolumeMount,
)
from kubeletapi.pods.status import PodView, conditions, container_status, phase, pod_status, rejected_status
from kubeletapi.runtime import types as rt

P = pytest.param
SEC = 1_000_000_000
T0 = 1_700_000_000 * SEC  # 2023-11-14T22:13:20Z


def wire_time(offset_s: int) -> str:
    return (dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC) + dt.timedelta(seconds=offset_s)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


# --- runtime-side builders ------------------------------------------------------------------------


def inst(
    attempt: int,
    state: rt.ContainerState,
    *,
    name: str = "app",
    exit_code: int = 0,
    signal: int = 0,
    reason: str = "",
    message: str = "",
    created: int | None = None,
) -> rt.ContainerStatus:
    """One runtime instance; attempt n started at T0+10n s and (if exited) finished 5 s later."""
    running_or_exited = state in (rt.ContainerState.RUNNING, rt.ContainerState.EXITED)
    return rt.ContainerStatus(
        id=f"{name}-{attempt}",
        sandbox_id="sb",
        name=name,
        attempt=attempt,
        state=state,
        image="nginx:1.25",
        image_ref=IMAGE_REF,
        created_at=T0 + 10 * attempt * SEC if created is None else created,
        started_at=T0 + 10 * attempt * SEC if running_or_exited else 0,
        finished_at=T0 + (10 * attempt + 5) * SEC if state is rt.ContainerState.EXITED else 0,
        exit_code=exit_code,
        signal=signal,
        reason=reason,
        message=message,
    )


def running(attempt: int = 0, name: str = "app") -> rt.ContainerStatus:
    return inst(attempt, rt.ContainerState.RUNNING, name=name)


def exited(attempt: int = 0, code: int = 0, name: str = "app", **kw: Any) -> rt.ContainerStatus:
    return inst(attempt, rt.ContainerState.EXITED, name=name, exit_code=code, **kw)


def sandbox(state: rt.SandboxState = rt.SandboxState.READY, sid: str = "sb") -> rt.Sandbox:
    return rt.Sandbox(id=sid, meta=rt.PodMeta("web", "default", "uid-1"), state=state, created_at=T0)


def terminated_wire(attempt: int, code: int, **extra: Any) -> dict[str, Any]:
    return {
        "terminated": {
            "exitCode": code,
            "startedAt": wire_time(10 * attempt),
            "finishedAt": wire_time(10 * attempt + 5),
            "containerID": f"process://app-{attempt}",
            **extra,
        }
    }


# --- API-side builders (inputs of phase and conditions) -------------------------------------------


def api_running(name: str = "a", ready: bool = True) -> ContainerStatus:
    return ContainerStatus(name=name, state=ContainerState(running=ContainerStateRunning()), ready=ready)


def api_exited(code: int, name: str = "a") -> ContainerStatus:
    return ContainerStatus(name=name, state=ContainerState(terminated=ContainerStateTerminated(exit_code=code)))


def api_waiting(name: str = "a", reason: str = "ContainerCreating") -> ContainerStatus:
    return ContainerStatus(name=name, state=ContainerState(waiting=ContainerStateWaiting(reason=reason)))


def api_restarting(last_code: int, name: str = "a") -> ContainerStatus:
    """Waiting to restart (CrashLoopBackOff) after an exit with `last_code`."""
    return ContainerStatus(
        name=name,
        state=ContainerState(waiting=ContainerStateWaiting(reason="CrashLoopBackOff")),
        last_state=ContainerState(terminated=ContainerStateTerminated(exit_code=last_code)),
    )


def pod(policy: str = "", init: tuple[str, ...] = (), app: tuple[str, ...] = ("a",), **spec: Any) -> Pod:
    return Pod.model_validate(
        {
            "metadata": {"name": "web", "namespace": "default", "uid": "uid-1"},
            "spec": {
                "restartPolicy": policy,
                "initContainers": [{"name": n, "image": "busybox"} for n in init],
                "containers": [{"name": n, "image": "nginx:1.25"} for n in app],
                **spec,
            },
        }
    )


# --- container_status -----------------------------------------------------------------------------

APP = Container(name="app", image="nginx:1.25")
IMAGE_REF = "docker.io/library/nginx@sha256:0123"  # what a runtime reports; imageID is this
BASE = {"name": "app", "image": "nginx:1.25", "imageID": "", "lastState": {}, "ready": False, "restartCount": 0}


@pytest.mark.parametrize(
    ("instances", "waiting", "expected"),
    [
        P([], None, {**BASE, "state": {"waiting": {"reason": "ContainerCreating"}}, "started": False}, id="none-yet"),
        P(
            [],
            ("PodInitializing", ""),
            {**BASE, "state": {"waiting": {"reason": "PodInitializing"}}, "started": False},
            id="none-yet-waiting-reason",
        ),
        P(
            [running(0)],
            None,
            {
                **BASE,
                "state": {"running": {"startedAt": wire_time(0)}},
                "ready": True,
                "started": True,
                "containerID": "process://app-0",
            },
            id="running",
        ),
        P(
            [running(0)],
            ("CrashLoopBackOff", "stale"),
            {
                **BASE,
                "state": {"running": {"startedAt": wire_time(0)}},
                "ready": True,
                "started": True,
                "containerID": "process://app-0",
            },
            id="running-wins-over-a-waiting-reason",
        ),
        P(
            # given out of order: the newest attempt is the state, the one before it the lastState
            [exited(0, 1), running(2), exited(1, 2, reason="Error", message="boom")],
            None,
            {
                **BASE,
                "state": {"running": {"startedAt": wire_time(20)}},
                "lastState": terminated_wire(1, 2, reason="Error", message="boom"),
                "ready": True,
                "started": True,
                "restartCount": 2,
                "containerID": "process://app-2",
            },
            id="running-after-restarts",
        ),
        P(
            [exited(0, 137, signal=9, reason="OOMKilled", message="killed")],
            None,
            {
                **BASE,
                "state": terminated_wire(0, 137, signal=9, reason="OOMKilled", message="killed"),
                "started": False,
                "containerID": "process://app-0",
            },
            id="exited",
        ),
        P(
            [exited(0, 0), exited(1, 3)],
            None,
            {
                **BASE,
                "state": terminated_wire(1, 3),
                "lastState": terminated_wire(0, 0),
                "started": False,
                "restartCount": 1,
                "containerID": "process://app-1",
            },
            id="exited-twice",
        ),
        P(
            [exited(2, 1), exited(3, 1)],
            ("CrashLoopBackOff", "back-off 40s restarting failed container=app"),
            {
                **BASE,
                "state": {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": "back-off 40s restarting failed container=app",
                    }
                },
                "lastState": terminated_wire(3, 1),
                "started": False,
                "restartCount": 3,
                "containerID": "process://app-3",
            },
            id="crash-loop-last-state-is-the-newest-exit",
        ),
        P(
            [exited(0, 1), inst(1, rt.ContainerState.CREATED)],
            None,
            {
                **BASE,
                "state": {"waiting": {"reason": "ContainerCreating"}},
                "lastState": terminated_wire(0, 1),
                "started": False,
                "restartCount": 1,
                "containerID": "process://app-1",
            },
            id="created-not-started",
        ),
        P(
            [inst(0, rt.ContainerState.CREATED)],
            ("RunContainerError", "exec: not found"),
            {
                **BASE,
                "state": {"waiting": {"reason": "RunContainerError", "message": "exec: not found"}},
                "started": False,
                "containerID": "process://app-0",
            },
            id="created-start-failed",
        ),
    ],
)
def test_container_status(
    instances: list[rt.ContainerStatus], waiting: tuple[str, str] | None, expected: dict[str, Any]
) -> None:
    view = PodView.of([sandbox()], instances)
    if "containerID" in expected:  # once an instance exists, imageID is the runtime's image ref
        expected = {**expected, "imageID": IMAGE_REF, "resources": {}}  # and the (empty) allocated resources
    assert container_status(APP, view, waiting).to_wire() == expected


def test_container_status_resources_and_volume_mounts_as_the_kubelet() -> None:
    """As the 1.34 kubelet (the oracle's): allocatedResources (the requests) and resources once the
    runtime has an instance; volumeMounts always, a read-only one with its recursive mode."""
    limits, requests = {"cpu": "200m", "memory": "64Mi"}, {"cpu": "100m", "memory": "32Mi"}
    resources = ResourceRequirements(limits=limits, requests=requests)
    mounts = [VolumeMount(name="data", mount_path="/data"),
              VolumeMount(name="cfg", mount_path="/cfg", read_only=True),
              VolumeMount(name="ro", mount_path="/ro", read_only=True, recursive_read_only="Enabled")]
    spec = Container(name="app", image="nginx:1.25", resources=resources, volume_mounts=mounts)
    wire_mounts = [{"name": "data", "mountPath": "/data"},
                   {"name": "cfg", "mountPath": "/cfg", "readOnly": True, "recursiveReadOnly": "Disabled"},
                   {"name": "ro", "mountPath": "/ro", "readOnly": True, "recursiveReadOnly": "Enabled"}]
    waiting = container_status(spec, PodView.of([sandbox()], []), None).to_wire()
    assert waiting["volumeMounts"] == wire_mounts
    assert "resources" not in waiting and "allocatedResources" not in waiting
    ran = container_status(spec, PodView.of([sandbox()], [running()]), None).to_wire()
    assert ran["allocatedResources"] == requests
    assert ran["resources"] == {"limits": limits, "requests": requests}
    assert ran["volumeMounts"] == wire_mounts


def test_container_status_scheme_and_other_containers_ignored() -> None:
    view = PodView.of([], [running(0), running(5, name="sidecar")])
    status = container_status(APP, view, None, scheme="containerd")
    assert status.container_id == "containerd://app-0"
    assert status.restart_count == 0


def test_same_attempt_newest_created_wins() -> None:
    older = inst(1, rt.ContainerState.EXITED, exit_code=1, created=T0)
    newer = dataclasses.replace(older, id="app-1b", created_at=T0 + SEC, state=rt.ContainerState.RUNNING)
    status = container_status(APP, PodView.of([], [older, newer]), None)
    assert status.container_id == "process://app-1b"
    assert status.state.running is not None
    assert status.last_state.terminated is not None and status.last_state.terminated.exit_code == 1


@pytest.mark.parametrize(
    ("sandboxes", "ready"),
    [
        P([], False, id="no-sandbox"),
        P([sandbox(rt.SandboxState.NOTREADY)], False, id="not-ready"),
        P([sandbox(rt.SandboxState.NOTREADY), sandbox(sid="sb2")], True, id="one-ready-of-two"),
    ],
)
def test_view_sandbox_ready(sandboxes: list[rt.Sandbox], ready: bool) -> None:
    assert PodView.of(sandboxes, []).sandbox_ready is ready


# --- phase (getPhase) -----------------------------------------------------------------------------

GETPHASE_ONFAILURE = (
    "getPhase: with restartPolicy OnFailure and any container failed, the phase is Running (the "
    "container is restarting); status.py phase() returns Failed when every container is terminated"
)
GETPHASE_SUCCEEDED = (
    "getPhase counts only State.Terminated exit 0 as succeeded; status.py phase() also counts a "
    "waiting container whose lastState exited 0, so OnFailure reports Succeeded instead of Running"
)


@pytest.mark.parametrize(
    ("policy", "init", "app", "expected"),
    [
        P("Always", [], [], "Pending", id="no-containers"),
        P("Always", [], [api_waiting()], "Pending", id="creating"),
        P("Always", [], [api_running("a"), api_waiting("b")], "Pending", id="one-still-waiting"),
        P("Always", [], [api_running("a"), api_running("b")], "Running", id="all-running"),
        P("Never", [], [api_running("a"), api_exited(1, "b")], "Running", id="one-running-one-failed"),
        # init containers
        P("Always", [api_running("i")], [api_waiting(reason="PodInitializing")], "Pending", id="init-running"),
        P("Always", [api_waiting("i")], [api_waiting(reason="PodInitializing")], "Pending", id="init-waiting"),
        P("OnFailure", [api_restarting(1, "i")], [api_waiting()], "Pending", id="init-restarting"),
        P("Always", [api_exited(0, "i"), api_running("j")], [api_waiting()], "Pending", id="second-init-running"),
        P("Always", [api_exited(0, "i")], [api_running()], "Running", id="init-done-app-running"),
        P("Never", [api_exited(1, "i")], [api_waiting(reason="PodInitializing")], "Failed", id="init-failed-never"),
        P("OnFailure", [api_exited(1, "i")], [api_waiting()], "Pending", id="init-failed-onfailure"),
        P("Always", [api_exited(1, "i")], [api_waiting()], "Pending", id="init-failed-always"),
        # all stopped: Always
        P("Always", [], [api_exited(0)], "Running", id="always-exited-ok"),
        P("Always", [], [api_exited(1)], "Running", id="always-exited-failed"),
        P("Always", [], [api_restarting(1)], "Running", id="always-restarting"),
        P("", [], [api_exited(0)], "Running", id="default-policy-is-always"),
        # OnFailure
        P("OnFailure", [], [api_exited(0, "a"), api_exited(0, "b")], "Succeeded", id="onfailure-all-ok"),
        P("OnFailure", [], [api_restarting(1)], "Running", id="onfailure-restarting"),
        P("OnFailure", [], [api_exited(0, "a"), api_restarting(2, "b")], "Running", id="onfailure-one-restarting"),
        P("OnFailure", [], [api_running("a"), api_exited(0, "b")], "Running", id="onfailure-one-running"),
        P(
            "OnFailure",
            [],
            [api_exited(0, "a"), api_exited(1, "b")],
            "Running",
            id="onfailure-all-terminated-one-failed",
        ),
        P(
            "OnFailure",
            [],
            [api_restarting(0)],
            "Running",
            id="onfailure-waiting-after-exit-0",
        ),
        # Never
        P("Never", [], [api_exited(0)], "Succeeded", id="never-ok"),
        P("Never", [], [api_exited(1)], "Failed", id="never-failed"),
        P("Never", [], [api_exited(0, "a"), api_exited(2, "b")], "Failed", id="never-one-failed"),
        P("Never", [api_exited(0, "i")], [api_exited(0)], "Succeeded", id="never-init-and-app-ok"),
    ],
)
def test_phase(policy: str, init: list[ContainerStatus], app: list[ContainerStatus], expected: str) -> None:
    subject = pod(policy, init=tuple(s.name for s in init), app=tuple(s.name for s in app))
    assert phase(subject, init, app) == expected


# --- conditions -----------------------------------------------------------------------------------

TYPES = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
OK = ("True", "", "")
PODFAILED = (
    "kubelet status/generate.go generateContainersReadyConditionForTerminalPhase: a Failed pod's Ready "
    "and ContainersReady carry reason PodFailed; status.py conditions() uses PodCompleted for both phases"
)
INIT_COMPLETED = (
    "kubelet GeneratePodInitializedCondition: a Succeeded pod's Initialized condition is True with "
    "reason PodCompleted; status.py conditions() drops the reason whenever a condition is True"
)


Row = tuple[str, str, str]  # status, reason, message


def expect(ready_to_start: Row, init: Row, ready: Row) -> list[tuple[str, str, str, str]]:
    """The five conditions in order; Ready and ContainersReady agree (no readiness gates)."""
    rows = [ready_to_start, init, ready, ready, OK]
    return [(kind, *row) for kind, row in zip(TYPES, rows, strict=True)]


@pytest.mark.parametrize(
    ("sandbox_ready", "init", "app", "pod_phase", "expected"),
    [
        P(True, [], [api_running("a")], "Running", expect(OK, OK, OK), id="all-ready"),
        P(True, [api_exited(0, "i")], [api_running("a"), api_running("b")], "Running", expect(OK, OK, OK),
          id="initialized-and-ready"),
        P(False, [], [api_waiting("a")], "Pending",
          expect(("False", "", ""), OK, ("False", "ContainersNotReady", "containers with unready status: [a]")),
          id="no-sandbox-yet"),
        P(True, [], [api_waiting("a"), api_running("b"), api_restarting(1, "c")], "Running",
          expect(OK, OK, ("False", "ContainersNotReady", "containers with unready status: [a c]")),
          id="some-not-ready"),
        P(True, [], [api_running("a", ready=False)], "Running",
          expect(OK, OK, ("False", "ContainersNotReady", "containers with unready status: [a]")),
          id="running-not-ready"),
        P(True, [api_exited(0, "i1"), api_running("i2"), api_waiting("i3")], [api_waiting("a", "PodInitializing")],
          "Pending",
          expect(OK, ("False", "ContainersNotInitialized", "containers with incomplete status: [i2 i3]"),
                 ("False", "ContainersNotReady", "containers with unready status: [a]")),
          id="init-incomplete"),
        P(True, [api_exited(1, "i")], [api_waiting("a", "PodInitializing")], "Failed",
          expect(("False", "", ""), ("False", "ContainersNotInitialized", "containers with incomplete status: [i]"),
                 ("False", "PodFailed", "")),
          id="init-failed-never"),
        P(True, [], [api_exited(0, "a")], "Succeeded",
          expect(("False", "", ""), OK, ("False", "PodCompleted", "")), id="succeeded"),
        P(True, [], [api_exited(1, "a")], "Failed",
          expect(("False", "", ""), OK, ("False", "PodFailed", "")), id="failed"),
        P(True, [api_exited(0, "i")], [api_exited(0, "a")], "Succeeded",
          expect(("False", "", ""), ("True", "PodCompleted", ""), ("False", "PodCompleted", "")),
          id="succeeded-initialized-reason"),
    ],
)
def test_conditions(
    sandbox_ready: bool,
    init: list[ContainerStatus],
    app: list[ContainerStatus],
    pod_phase: str,
    expected: list[tuple[str, str, str, str]],
) -> None:
    view = PodView(sandbox_ready=sandbox_ready)
    got = conditions(view, init, app, pod_phase)
    assert [(c.type, c.status, c.reason, c.message) for c in got] == expected
    assert all(c.last_transition_time is None for c in got)  # pod_status sets them


# --- pod_status -----------------------------------------------------------------------------------

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, 987654, tzinfo=dt.UTC)
START = dt.datetime(2024, 5, 1, 11, 59, 0, tzinfo=dt.UTC)


def test_pod_status_fields() -> None:
    guaranteed = {"limits": {"cpu": "1", "memory": "64Mi"}}
    subject = Pod.model_validate(
        {
            "spec": {
                "initContainers": [{"name": "i2", "image": "x", "resources": guaranteed},
                                   {"name": "i1", "image": "x", "resources": guaranteed}],
                "containers": [{"name": "b", "image": "x", "resources": guaranteed},
                               {"name": "a", "image": "x", "resources": guaranteed}],
            }
        }
    )
    view = PodView.of(
        [sandbox()],
        [running(0, "a"), exited(0, 0, "i1"), running(1, "b"), exited(0, 0, "i2"), exited(0, 1, "b")],
    )
    status = pod_status(subject, view, {}, "10.0.0.5", START, None, NOW)
    wire = status.to_wire()
    assert wire["phase"] == "Running"
    assert (wire["hostIP"], wire["hostIPs"], wire["podIP"], wire["podIPs"]) == (
        "10.0.0.5", [{"ip": "10.0.0.5"}], "10.0.0.5", [{"ip": "10.0.0.5"}]
    )
    assert wire["startTime"] == "2024-05-01T11:59:00Z"
    assert wire["qosClass"] == "Guaranteed"
    assert [s["name"] for s in wire["initContainerStatuses"]] == ["i2", "i1"]  # spec order
    assert [s["name"] for s in wire["containerStatuses"]] == ["b", "a"]
    assert [s["restartCount"] for s in wire["containerStatuses"]] == [1, 0]
    assert [(c["type"], c["status"]) for c in wire["conditions"]] == [(t, "True") for t in TYPES]
    # no previous status: every condition transitions now, to the second (metav1.Time precision)
    assert {c["lastTransitionTime"] for c in wire["conditions"]} == {"2024-05-01T12:00:00Z"}


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        P({}, "BestEffort", id="best-effort"),
        P({"requests": {"cpu": "100m"}}, "Burstable", id="burstable"),
    ],
)
def test_pod_status_qos_class(resources: dict[str, Any], qos: str) -> None:
    subject = Pod.model_validate({"spec": {"containers": [{"name": "a", "image": "x", "resources": resources}]}})
    assert pod_status(subject, PodView(), {}, "10.0.0.5", None, None, NOW).qos_class == qos


def test_pod_status_waiting_reasons_reach_the_right_container() -> None:
    subject = pod(init=("i",), app=("a", "b"))
    waiting = {"i": ("ErrImagePull", "nope"), "b": ("PodInitializing", "")}
    status = pod_status(subject, PodView(), waiting, "10.0.0.5", None, None, NOW)
    reasons = [s.state.waiting.reason for s in [*status.init_container_statuses, *status.container_statuses]
               if s.state.waiting is not None]
    assert reasons == ["ErrImagePull", "ContainerCreating", "PodInitializing"]
    assert status.phase == "Pending"


def test_last_transition_time_kept_while_status_unchanged() -> None:
    subject = pod(init=("i",), app=("a",))
    earlier = NOW - dt.timedelta(minutes=5)
    # before: sandbox ready, init done, app still being created
    before = pod_status(subject, PodView.of([sandbox()], [exited(0, 0, "i")]), {}, "10.0.0.5", START, None, earlier)
    before_times = {c.type: c.last_transition_time for c in before.conditions}
    assert set(before_times.values()) == {earlier.replace(microsecond=0)}
    assert {c.type: c.status for c in before.conditions}["Ready"] == "False"
    # after: the app container runs; only Ready and ContainersReady change status
    view = PodView.of([sandbox()], [exited(0, 0, "i"), running(0, "a")])
    after = pod_status(subject, view, {}, "10.0.0.5", START, before, NOW)
    got = {c.type: c.last_transition_time for c in after.conditions}
    assert got == {
        "PodReadyToStartContainers": earlier.replace(microsecond=0),
        "Initialized": earlier.replace(microsecond=0),
        "Ready": NOW.replace(microsecond=0),
        "ContainersReady": NOW.replace(microsecond=0),
        "PodScheduled": earlier.replace(microsecond=0),
    }
    # a third status with nothing changed keeps every time
    again = pod_status(subject, view, {}, "10.0.0.5", START, after, NOW + dt.timedelta(minutes=1))
    assert {c.type: c.last_transition_time for c in again.conditions} == got


def test_last_transition_time_for_a_condition_missing_before() -> None:
    old_time = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    previous = PodStatus(conditions=[PodCondition(type="PodScheduled", status="True", last_transition_time=old_time)])
    status = pod_status(pod(), PodView(), {}, "10.0.0.5", None, previous, NOW)
    times = {c.type: c.last_transition_time for c in status.conditions}
    assert times.pop("PodScheduled") == old_time
    assert set(times.values()) == {NOW.replace(microsecond=0)}


# --- rejected_status ------------------------------------------------------------------------------

MESSAGE = "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110"


def test_rejected_status() -> None:
    status = rejected_status("OutOfpods", MESSAGE, NOW)
    assert status.phase == "Failed"
    assert status.reason == "OutOfpods"
    assert status.start_time == NOW.replace(microsecond=0)
    assert not status.conditions and not status.container_statuses and not status.init_container_statuses
    assert MESSAGE in status.message


def test_rejected_status_message_prefix() -> None:
    assert rejected_status("OutOfpods", MESSAGE, NOW).message == "Pod was rejected: " + MESSAGE


def test_completed_init_container_is_ready() -> None:
    status = pod_status(pod(init=("i",), app=("a",)), PodView.of([sandbox()], [exited(0, 0, "i"), running(0, "a")]),
                        {}, "10.0.0.5", None, None, NOW)
    assert status.init_container_statuses[0].ready is True
