"""The node's events in a real cluster, as kubectl shows them: a pod's life (Scheduled from the
scheduler, then Pulled, Created, Started from the node), a crash loop's counted BackOff, a
failing liveness probe's Unhealthy and Killing, the node's own Starting, condition events and
NodeReady (beside the controller-manager's RegisteredNode), and a pod the node cannot run.
Through the `node` fixture every pod test runs on the process runtime and on containerd; the node's
own events on one (conftest.NODE_LEVEL)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.cluster.conftest import NODE_LEVEL
from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

Json = dict[str, Any]


def _events(plane: ControlPlane, namespace: str, selector: str) -> list[Json]:
    out = plane.kubectl("get", "events", "-n", namespace, "--field-selector", selector, "-o", "json").stdout
    items = json.loads(out)["items"]
    assert isinstance(items, list)
    return items


def _pod_events(plane: ControlPlane, namespace: str, name: str) -> list[Json]:
    return _events(plane, namespace, f"involvedObject.kind=Pod,involvedObject.name={name}")


def _node_events(plane: ControlPlane, node: Node) -> list[Json]:
    return _events(plane, "default", f"involvedObject.kind=Node,involvedObject.name={node.name}")


def _kubelet(events: list[Json], reason: str) -> list[Json]:
    return [e for e in events if e["reason"] == reason and e["source"].get("component") == "kubelet"]


def _created_in_order(events: list[Json]) -> list[Json]:
    """The node's events in the order it recorded them: a name ends in its time (hex nanoseconds)."""
    return sorted(events, key=lambda e: int(e["metadata"]["name"].rsplit(".", 1)[1], 16))


def _pod(namespace: str, name: str, container: Json, **spec: Any) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "main", "image": "busybox:1.36", **container}], **spec},
    })


def test_a_running_pod_shows_scheduled_then_pulled_created_started(node: Node, control_plane: ControlPlane,
                                                                  namespace: str) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    control_plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "web", {"command": ["sleep", "3600"]}))

    def started() -> list[Json] | None:
        events = _pod_events(control_plane, namespace, "web")
        return events if _kubelet(events, "Started") and [e for e in events if e["reason"] == "Scheduled"] else None

    events = wait_for(started, timeout=30, what="the pod's Scheduled and Started events")
    pod = json.loads(control_plane.kubectl("get", "pod", "web", "-n", namespace, "-o", "json").stdout)
    (scheduled,) = [e for e in events if e["reason"] == "Scheduled"]
    assert scheduled["message"] == f"Successfully assigned {namespace}/web to {node.name}"
    mine = _created_in_order([e for e in events if e["source"].get("component") == "kubelet"])
    assert [(e["type"], e["reason"], e["message"]) for e in mine] == [
        ("Normal", "Pulled", 'Container image "busybox:1.36" already present on machine'),
        ("Normal", "Created", "Created container: main"),
        ("Normal", "Started", "Started container main"),
    ]
    for event in mine:
        assert event["source"] == {"component": "kubelet", "host": node.name}
        assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", node.name)
        assert event["involvedObject"]["uid"] == pod["metadata"]["uid"]
        assert event["involvedObject"]["fieldPath"] == "spec.containers{main}"
        assert event["count"] == 1 and event["metadata"]["name"].startswith("web.")
    described = control_plane.kubectl("describe", "pod", "web", "-n", namespace).stdout
    for line in ("default-scheduler Successfully assigned", 'kubelet Container image "busybox:1.36" already '
                 "present on machine", "kubelet Created container: main", "kubelet Started container main"):
        assert _in_table(described, line), described


def _in_table(described: str, text: str) -> bool:
    """kubectl's event table pads its columns: compare with runs of spaces collapsed."""
    squash = " ".join(described.split())
    return " ".join(text.split()) in squash


def test_a_crash_looping_pod_shows_a_counted_back_off(node: Node, control_plane: ControlPlane, namespace: str) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    control_plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "crash", {"command": ["sh", "-c", "exit 1"]}))

    def back_off(at_least: int) -> Json | None:
        found = _kubelet(_pod_events(control_plane, namespace, "crash"), "BackOff")
        assert len(found) <= 1, found  # one event, counted: never one per restart
        return found[0] if found and found[0]["count"] >= at_least else None

    event = wait_for(lambda: back_off(2), timeout=60, interval=1, what="a BackOff event counted twice")
    pod = json.loads(control_plane.kubectl("get", "pod", "crash", "-n", namespace, "-o", "json").stdout)
    uid = pod["metadata"]["uid"]
    assert event["type"] == "Warning"
    assert event["message"] == f"Back-off restarting failed container main in pod crash_{namespace}({uid})"
    assert event["involvedObject"]["fieldPath"] == "spec.containers{main}"
    assert event["lastTimestamp"] >= event["firstTimestamp"]
    # the crash loop goes on: the same event counts up (a PATCH of its count), still one object
    later = wait_for(lambda: back_off(event["count"] + 1), timeout=60, interval=1, what="the BackOff count going up")
    assert later["metadata"]["name"] == event["metadata"]["name"]
    assert later["firstTimestamp"] == event["firstTimestamp"] and later["lastTimestamp"] >= event["lastTimestamp"]
    started = _kubelet(_pod_events(control_plane, namespace, "crash"), "Started")
    assert len(started) == 1 and started[0]["count"] >= 2  # the same event again: counted, not posted twice
    described = control_plane.kubectl("describe", "pod", "crash", "-n", namespace).stdout
    assert re.search(r"Warning\s+BackOff\s+\S+ \(x\d+ over \S+\)\s+kubelet\s+Back-off restarting failed container "
                     r"main in pod crash_", described), described


def test_a_failing_liveness_probe_shows_unhealthy_and_killing(node: Node, control_plane: ControlPlane,
                                                             namespace: str) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    probe = {"exec": {"command": ["sh", "-c", "echo not-alive; exit 1"]}, "periodSeconds": 1, "failureThreshold": 2}
    control_plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "sick", {"command": ["sleep", "3600"],
                                                                               "livenessProbe": probe}))

    def killed() -> list[Json] | None:
        events = _pod_events(control_plane, namespace, "sick")
        return events if _kubelet(events, "Killing") and _kubelet(events, "Unhealthy") else None

    events = wait_for(killed, timeout=40, interval=0.5, what="Unhealthy and Killing events")
    (unhealthy,) = _kubelet(events, "Unhealthy")
    assert unhealthy["type"] == "Warning" and unhealthy["message"].startswith("Liveness probe failed: not-alive")
    assert unhealthy["involvedObject"]["fieldPath"] == "spec.containers{main}"
    assert unhealthy["count"] >= 2  # failureThreshold 2: each failure said, the same event counted
    (killing,) = _kubelet(events, "Killing")
    assert killing["type"] == "Normal"
    assert _created_in_order([killing, unhealthy]) == [unhealthy, killing]  # Unhealthy first, then Killing
    assert killing["message"] == "Container main failed liveness probe, will be restarted"
    described = control_plane.kubectl("describe", "pod", "sick", "-n", namespace).stdout
    assert _in_table(described, "Warning Unhealthy") and "Liveness probe failed: not-alive" in described
    assert _in_table(described, "kubelet Container main failed liveness probe, will be restarted"), described


@NODE_LEVEL
def test_the_node_shows_starting_and_its_conditions_then_node_ready(node: Node, control_plane: ControlPlane) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")

    def recorded() -> list[Json] | None:
        events = _node_events(control_plane, node)
        registered = [e for e in events if e["reason"] == "RegisteredNode"]
        return events if _kubelet(events, "NodeHasSufficientPID") and registered else None

    events = _created_in_order(wait_for(recorded, timeout=20, what="the node's events and RegisteredNode"))
    mine = [e for e in events if e["source"].get("component") == "kubelet"]
    assert [(e["type"], e["reason"], e["message"]) for e in mine if e["reason"] != "CgroupV1"][:4] == [
        ("Normal", "Starting", "Starting kubelet."),
        ("Normal", "NodeHasSufficientMemory", f"Node {node.name} status is now: NodeHasSufficientMemory"),
        ("Normal", "NodeHasNoDiskPressure", f"Node {node.name} status is now: NodeHasNoDiskPressure"),
        ("Normal", "NodeHasSufficientPID", f"Node {node.name} status is now: NodeHasSufficientPID"),
    ]
    for event in mine:
        assert event["involvedObject"] == {"kind": "Node", "name": node.name, "uid": node.name}
        assert event["source"] == {"component": "kubelet", "host": node.name}
        assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", node.name)
    # RegisteredNode is the controller-manager's, about the Node object itself (its real UID), not ours
    (registered,) = [e for e in events if e["reason"] == "RegisteredNode"]
    assert registered["source"] == {"component": "node-controller"}
    assert registered["involvedObject"]["uid"] == (node.get() or {})["metadata"]["uid"] != node.name
    assert not [e for e in mine if e["reason"] == "RegisteredNode"]
    # Away for longer than the controller-manager's grace period: the node is marked Unknown; back,
    # the node records its return to Ready (the kubelet's Ready setter, on a condition that changed).
    node.stop()
    wait_for(lambda: (node.condition("Ready") or {}).get("status") == "Unknown", timeout=60, interval=1,
             what="Ready Unknown after the grace period")
    node.start()

    def ready_again() -> list[Json] | None:
        events = _node_events(control_plane, node)
        return events if _kubelet(events, "NodeReady") else None

    events = wait_for(ready_again, timeout=30, interval=0.5, what="a NodeReady event")
    (ready,) = _kubelet(events, "NodeReady")
    assert (ready["type"], ready["message"]) == ("Normal", f"Node {node.name} status is now: NodeReady")
    assert len(_kubelet(events, "Starting")) == 2  # one per start
    described = control_plane.kubectl("describe", "node", node.name).stdout
    assert _in_table(described, "Normal Starting") and _in_table(described, "kubelet Starting kubelet.")
    assert _in_table(described, f"kubelet Node {node.name} status is now: NodeReady"), described
    # kubectl describe node asks for both UIDs: the controllers' (the Node's) and the kubelet's (its name)
    assert _in_table(described, f"node-controller Node {node.name} event: Registered Node {node.name} in Controller")


@pytest.mark.node_args("--max-pods", "1")
def test_a_pod_that_cannot_run_gets_a_warning_saying_why(node: Node, control_plane: ControlPlane,
                                                         namespace: str) -> None:
    node.start()
    wait_for(node.ready, timeout=10, what="node Ready")
    claim = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "nope"}}], "nodeName": node.name}
    control_plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "claim", {"command": ["sleep", "3600"]}, **claim))

    def failed_mount() -> Json | None:
        found = _kubelet(_pod_events(control_plane, namespace, "claim"), "FailedMount")
        return found[0] if found else None

    mount = wait_for(failed_mount, timeout=20, what="a FailedMount event")
    assert mount["type"] == "Warning" and "fieldPath" not in mount["involvedObject"]
    assert mount["message"].startswith('MountVolume.SetUp failed for volume "data" : persistentVolumeClaim volumes'), \
        mount["message"]
    # the node holds one pod (maxPods 1): the next one bound to it is refused at admission
    control_plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "extra", {"command": ["sleep", "3600"]},
                                                          nodeName=node.name))

    def refused() -> Json | None:
        found = _kubelet(_pod_events(control_plane, namespace, "extra"), "OutOfpods")
        return found[0] if found else None

    event = wait_for(refused, timeout=20, what="an OutOfpods event")
    assert event["type"] == "Warning"
    assert event["message"] == "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"

    def phase() -> bool:
        out = control_plane.kubectl("get", "pod", "extra", "-n", namespace, "-o", "jsonpath={.status.phase}").stdout
        return out == "Failed"

    wait_for(phase, timeout=20, interval=0.5, what="the refused pod Failed")
