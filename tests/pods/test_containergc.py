"""Container GC's decisions (pods.containergc.select, sandboxes_to_remove), table-driven."""

from __future__ import annotations

import pytest

from kubeletapi.pods.containergc import Dead, GCPolicy, sandboxes_to_remove, select
from kubeletapi.runtime import types as rt

S = 1_000_000_000
NOW = 1000 * S


def dead(cid: str, uid: str = "p1", name: str = "c", age_s: int = 100, attempt: int = 0,
         running: bool = False) -> Dead:
    return Dead(cid, uid, name, NOW - age_s * S, attempt, running)


def chain(uid: str, name: str, n: int, running_last: bool = False) -> list[Dead]:
    """n instances of one container, attempt 0 oldest; the newest may be running."""
    return [dead(f"{uid}-{name}-{i}", uid, name, age_s=100 - i, attempt=i, running=running_last and i == n - 1)
            for i in range(n)]


CASES = [
    # (id, containers, policy, gone uids, sources ready, expected removals in order)
    ("nothing dead", chain("p1", "c", 1, running_last=True), GCPolicy(), set(), True, []),
    ("status keeps current and previous", chain("p1", "c", 2), GCPolicy(0, 0, 0), set(), True, []),
    ("per-container: oldest beyond the newest two go", chain("p1", "c", 5), GCPolicy(), set(), True,
     ["p1-c-0", "p1-c-1", "p1-c-2"]),
    ("running current: one exited kept", chain("p1", "c", 4, running_last=True), GCPolicy(), set(), True,
     ["p1-c-0", "p1-c-1"]),
    ("no per-container limit", chain("p1", "c", 5), GCPolicy(0, -1, -1), set(), True, []),
    ("min age protects the young", [dead("old", age_s=100, attempt=0), dead("mid", age_s=50, attempt=1),
                                    dead("new", age_s=40, attempt=2), dead("newer", age_s=5, attempt=3)],
     GCPolicy(60, 0, -1), set(), True, ["old"]),
    ("gone pod: all of it", chain("p2", "c", 3), GCPolicy(), {"p2"}, True, ["p2-c-0", "p2-c-1", "p2-c-2"]),
    ("gone pod waits for the sources", chain("p2", "c", 3), GCPolicy(0, -1, -1), {"p2"}, False, []),
    ("gone pod: running containers stay", chain("p2", "c", 2, running_last=True), GCPolicy(), {"p2"}, True,
     ["p2-c-0"]),
    ("max containers: an equal share per unit", chain("p1", "a", 4) + chain("p3", "b", 2),
     GCPolicy(0, -1, 3), set(), True, ["p1-a-0", "p1-a-1"]),
    ("max containers: then the oldest over all", chain("p1", "a", 3) + chain("p1", "b", 3) + chain("p1", "c", 3),
     GCPolicy(0, -1, 2), set(), True, ["p1-a-0", "p1-b-0", "p1-c-0"]),
    ("gone pods: every unit, oldest first", chain("p1", "a", 2) + chain("p3", "b", 2),
     GCPolicy(0, -1, 6), {"p1", "p3"}, True, ["p1-a-0", "p1-a-1", "p3-b-0", "p3-b-1"]),
    ("sources not ready: nothing a status may need", chain("p1", "a", 4), GCPolicy(0, 0, 0), {"p1"}, False,
     ["p1-a-0", "p1-a-1"]),
    ("max containers never takes what the status needs", chain("p1", "a", 3) + chain("p3", "b", 3),
     GCPolicy(0, -1, 1), set(), True, ["p1-a-0", "p3-b-0"]),
    ("units are (pod, container)", chain("p1", "a", 3) + chain("p1", "b", 3), GCPolicy(), set(), True,
     ["p1-a-0", "p1-b-0"]),
]


@pytest.mark.parametrize(("containers", "policy", "gone", "ready", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_select(containers: list[Dead], policy: GCPolicy, gone: set[str], ready: bool, expected: list[str]) -> None:
    assert select(containers, policy, NOW, gone.__contains__, ready) == expected


def sandbox(sid: str, uid: str, created: int, ready: bool = False) -> rt.Sandbox:
    state = rt.SandboxState.READY if ready else rt.SandboxState.NOTREADY
    return rt.Sandbox(sid, rt.PodMeta("n", "ns", uid), state, created)


SANDBOX_CASES = [
    ("live pod keeps its newest", [sandbox("a", "p1", 1), sandbox("b", "p1", 2)], set(), set(), ["a"]),
    ("live pod: the ready one stays", [sandbox("a", "p1", 1, ready=True), sandbox("b", "p1", 2)], set(), set(), []),
    ("gone pod: all not ready", [sandbox("a", "p2", 1), sandbox("b", "p2", 2)], set(), {"p2"}, ["a", "b"]),
    ("gone pod: one holding a container stays", [sandbox("a", "p2", 1), sandbox("b", "p2", 2)], {"a"}, {"p2"},
     ["b"]),
    ("gone pod: a ready one stays", [sandbox("a", "p2", 1, ready=True)], set(), {"p2"}, []),
]


@pytest.mark.parametrize(("sandboxes", "busy", "gone", "expected"), [c[1:] for c in SANDBOX_CASES],
                         ids=[c[0] for c in SANDBOX_CASES])
def test_sandboxes(sandboxes: list[rt.Sandbox], busy: set[str], gone: set[str], expected: list[str]) -> None:
    assert sandboxes_to_remove(sandboxes, busy, gone.__contains__) == expected
