"""/pods and /runningpods/, the kubelet's and kubeletapi's, side by side: every key and value type,
and the values meant to agree (spec defaults, annotations, conditions, container states, reasons
and messages, restart counts, QoS class) once what must differ between two nodes is blanked: UIDs
(and the config hash, which is the UID of a static pod), times, container IDs. The read-only
port's answer must equal the secure port's on each node."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.oracle.allowed import Findings
from tests.oracle.diff import Comparer, Difference
from tests.oracle.pair import Pair

pytestmark = [pytest.mark.oracle, pytest.mark.cri, pytest.mark.e2e]

CRASHER_WAIT_S = 45.0
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
_UID = re.compile(r"\b[0-9a-f]{32}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_CONTAINER_ID = re.compile(r"^(\w+)://[0-9a-f]{64}$")
# Lists whose elements have a name: matched by it, so a difference says which element.
_POD = "items[metadata.name={}]"
_KEYED = {"items[]": "metadata.name"}
for _name in ("sleeper", "logger", "crasher", "limits", "scratch", "probed"):
    _pod = _POD.format(f"{_name}-testnode")
    _KEYED |= {f"{_pod}.status.conditions[]": "type", f"{_pod}.status.containerStatuses[]": "name",
               f"{_pod}.spec.containers[]": "name", f"{_pod}.spec.volumes[]": "name",
               f"{_pod}.spec.containers[name=main].volumeMounts[]": "name"}


_CRASHER_COUNT = "items[metadata.name=crasher-testnode].status.containerStatuses[name=main].restartCount"
_BACK_OFF = re.compile(r"^back-off \d+s ")


def normalise(path: str, value: Any) -> Any:
    """Blank what must differ between two nodes running the same pods: UIDs (in any string, e.g.
    the CrashLoopBackOff message), the config hash (a static pod's UID), times, container IDs; and
    how far each crash-looper has got (its restart count, once it has restarted, and so the back-off
    its message announces): the two run on their own clocks (see in_step)."""
    if path == _CRASHER_COUNT and isinstance(value, int) and value >= 1:
        return "<restarted>"
    if not isinstance(value, str):
        return value
    value = _BACK_OFF.sub("back-off <n>s ", value)
    if _TIME.match(value):
        return "<time>"
    if match := _CONTAINER_ID.match(value):
        return f"{match.group(1)}://<id>"
    return _UID.sub("<uid>", value)


def generic(path: str) -> str:
    """A pod's name in a path made `<pod>`, so one difference of every pod is one README pattern
    (and no fnmatch bracket in it)."""
    return re.sub(r"items\[metadata\.name=[^\]]*\]", "items.<pod>", path)


def compare(what: str, real: Any, ours: Any) -> list[Difference]:
    found = Comparer(what, _KEYED, normalise=normalise).compare(real, ours)
    return sorted({Difference(d.what, generic(d.path), d.kind, d.detail) for d in found})


def crasher(pods: Any) -> tuple[Any, ...]:
    """The crash-looper's state (and waiting reason): it moves on its own (10 s, 20 s, 40 s back-offs)."""
    (pod,) = [p for p in pods["items"] if p["metadata"]["name"] == "crasher-testnode"]
    (status,) = pod["status"]["containerStatuses"]
    return sorted(status["state"]), (status["state"].get("waiting") or {}).get("reason")


def in_step(pair: Pair, path: str) -> tuple[Any, Any]:
    """Both nodes' answers once their crash-loopers are in the same state. Their timelines differ
    (seen side by side): after an exit the kubelet shows the container `terminated` until its pod
    worker's next sync (about 10 s) and only then CrashLoopBackOff, restarting at that sync after
    the back-off; kubeletapi shows CrashLoopBackOff at once and restarts when the back-off ends, so
    it pulls ahead by a restart over time (normalise blanks the count, not the state)."""
    deadline = time.monotonic() + CRASHER_WAIT_S
    while True:
        real, ours = pair.kubelet.json(path), pair.ours.json(path)
        if crasher(real) == crasher(ours) or time.monotonic() > deadline:
            return real, ours
        time.sleep(0.5)


def test_pods(pair: Pair, findings: Findings) -> None:
    real, ours = in_step(pair, "/pods")
    assert findings.check(compare("/pods", real, ours), "/pods") == []


def test_runningpods(pair: Pair, findings: Findings) -> None:
    real, ours = pair.kubelet.json("/runningpods/"), pair.ours.json("/runningpods/")
    assert findings.check(compare("/runningpods/", real, ours), "/runningpods/") == []


def by_name(pods: Any) -> dict[str, Any]:
    return {**pods, "items": {p["metadata"]["name"]: p for p in pods["items"]}}


def test_the_read_only_port_answers_as_the_secure_one(pair: Pair) -> None:
    """/pods on each node (the kubelet's order of items is a Go map's: compared by name); statuses
    can move between the two reads, so a difference is read again."""
    for side in pair.sides:
        for _ in range(3):
            secure, read_only = by_name(side.json("/pods")), by_name(side.json("/pods", "read-only"))
            if secure == read_only:
                break
        assert secure == read_only, side.name


def test_the_read_only_port_refuses_runningpods_alike(pair: Pair, findings: Findings) -> None:
    """No debugging handlers there: the kubelet's placeholder answer."""
    real, ours = (side.get("/runningpods/", "read-only") for side in pair.sides)
    what = "read-only:/runningpods/"
    diffs = [Difference(what, name, "value", f"{a!r} != {b!r}") for name, a, b in (
        ("status", real.status_code, ours.status_code), ("body", real.text, ours.text),
        ("content_type", real.headers.get("content-type"), ours.headers.get("content-type"))) if a != b]
    assert findings.check(diffs, what) == []
