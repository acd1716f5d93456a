"""The node's own events: the status setters' condition events (pressure conditions on every
change, including the first status of a start; Ready only on a change of the Node's Ready),
Rebooted once for a Node registered with another boot ID, through the controller and a scripted API."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.node.controller import NodeController
from kubeletapi.node.nodeevents import NodeEvents, condition_events, reboot_event
from tests.node.test_lease_and_registration import Json, ScriptedApi
from tests.node.test_status import facts

P = pytest.param
FALSE3 = [("MemoryPressure", "False"), ("DiskPressure", "False"), ("PIDPressure", "False")]


def conds(*pairs: tuple[str, str]) -> list[Json]:
    return [{"type": kind, "status": status} for kind, status in pairs]


def said(*reasons: str) -> list[tuple[str, str, str]]:
    return [("Normal", r, f"Node n1 status is now: {r}") for r in reasons]


@pytest.mark.parametrize(("before", "after", "reasons"), [
    P([], conds(*FALSE3, ("Ready", "True")),
      ["NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"], id="first-status-no-ready"),
    P(conds(*FALSE3, ("Ready", "True")), conds(*FALSE3, ("Ready", "True")), [], id="unchanged"),
    P(conds(*FALSE3, ("Ready", "True")), conds(*FALSE3, ("Ready", "False")), ["NodeNotReady"], id="not-ready"),
    P(conds(*FALSE3, ("Ready", "False")), conds(*FALSE3, ("Ready", "True")), ["NodeReady"], id="ready"),
    P(conds(("MemoryPressure", "Unknown"), ("DiskPressure", "Unknown"), ("PIDPressure", "Unknown"),
            ("Ready", "Unknown")), conds(*FALSE3, ("Ready", "True")),
      ["NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"],
      id="back-from-unknown"),
    P(conds(*FALSE3), conds(("MemoryPressure", "True"), ("DiskPressure", "True"), ("PIDPressure", "True")),
      ["NodeHasInsufficientMemory", "NodeHasDiskPressure", "NodeHasInsufficientPID"], id="pressure"),
])
def test_condition_events(before: list[Json], after: list[Json], reasons: list[str]) -> None:
    assert condition_events("n1", before, after) == said(*reasons)


def test_reboot_event() -> None:
    assert reboot_event("n1", {"status": {"nodeInfo": {"bootID": "old"}}}, "new") == (
        "Warning", "Rebooted", "Node n1 has been rebooted, boot id: new")
    assert reboot_event("n1", {"status": {"nodeInfo": {"bootID": "new"}}}, "new") is None
    assert reboot_event("n1", {}, "new") is None  # a node created now has no boot ID before


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        self.seen.append((event_type, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.seen]


_: type[NodeEvents] = Events


async def _advance(clock: FakeClock, seconds: float, step: float = 0.1) -> None:
    for _ in range(round(seconds / step)):
        clock.advance(step)
        await asyncio.sleep(0.006)


async def _images() -> list[Json]:
    return []


def _controller(api: ScriptedApi, clock: FakeClock, events: Events, not_ready: Callable[[], list[str]]
                ) -> NodeController:
    return NodeController(api, facts(), clock, boot_id="boot-2", not_ready=not_ready, images=_images,
                          events=events)


def test_a_new_node_then_readiness_changes() -> None:
    api, clock, events = ScriptedApi(), FakeClock(), Events()
    errors: list[str] = []

    async def go() -> None:
        controller = _controller(api, clock, events, lambda: list(errors))
        await controller.start()
        try:
            await _advance(clock, 1)
            assert events.reasons() == ["NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"]
            errors.append("PLEG is not healthy: pleg was last seen active 4m0s ago")
            await _advance(clock, 10)
            errors.clear()
            await _advance(clock, 10)
            await _advance(clock, 10)  # steady: nothing more
        finally:
            await controller.stop()

    asyncio.run(go())
    assert events.seen[3:] == said("NodeNotReady", "NodeReady")


def test_a_node_registered_before_another_boot_and_marked_unknown() -> None:
    api, clock, events = ScriptedApi(), FakeClock(), Events()
    unknown = [{"type": t, "status": "Unknown"} for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")]
    api.objects["/api/v1/nodes/n1"] = {"metadata": {"name": "n1", "uid": "u", "resourceVersion": "1"},
                                       "status": {"nodeInfo": {"bootID": "boot-1"}, "conditions": unknown}}

    async def go() -> None:
        controller = _controller(api, clock, events, list)
        await controller.start()
        try:
            await _advance(clock, 1)
            await _advance(clock, 10)
        finally:
            await controller.stop()

    asyncio.run(go())
    pressure = ["NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"]
    # the fresh first status (as the kubelet's initialNode), then the Node as it was: Unknown
    assert events.reasons() == [*pressure, "Rebooted", *pressure, "NodeReady"]
    assert events.seen[3] == ("Warning", "Rebooted", "Node n1 has been rebooted, boot id: boot-2")
