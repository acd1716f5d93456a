"""kubelet_node_startup_*_duration_seconds: the phases of a new Node's startup, as the kubelet's
NodeStartupLatencyTracker measures them, each once; a Node that existed already gives none."""

from __future__ import annotations

import asyncio

from kubeletapi.clock import FakeClock
from kubeletapi.metrics.exposition import render_registry
from kubeletapi.metrics.node import NodeStartupMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.node.controller import NodeController
from kubeletapi.node.startup import NodeStartupTracker, is_ready
from tests.node.test_lease_and_registration import ScriptedApi
from tests.node.test_node_events import _advance, _images
from tests.node.test_status import facts

START = 1_800_000_000.0


class Phases:
    def __init__(self) -> None:
        self.seen: dict[str, float] = {}

    def node_startup_phase(self, phase: str, seconds: float) -> None:
        assert phase not in self.seen, f"{phase} measured twice"
        self.seen[phase] = seconds


def test_the_tracker_measures_each_phase_once() -> None:
    clock, phases = FakeClock(start=START), Phases()
    tracker = NodeStartupTracker(clock, START - 2, START - 60, phases)
    tracker.ready()  # not registered yet: nothing
    tracker.registered_new()  # no attempt yet: nothing
    assert phases.seen == {}
    tracker.attempt()
    clock.advance(1.5)
    tracker.attempt()  # a retry: the first attempt counts
    tracker.registered_new()
    clock.advance(4)
    tracker.ready()
    tracker.registered_new()
    tracker.ready()
    assert phases.seen == {"pre_kubelet": 58, "pre_registration": 2, "registration": 1.5,
                           "post_registration": 4, "total": 65.5}


def test_without_a_boot_time_the_phases_from_boot_are_left_out() -> None:
    clock, phases = FakeClock(start=START), Phases()
    tracker = NodeStartupTracker(clock, START, None, phases)
    tracker.attempt()
    tracker.registered_new()
    tracker.ready()
    assert set(phases.seen) == {"pre_registration", "registration", "post_registration"}


def test_is_ready_reads_the_ready_condition() -> None:
    assert is_ready({"conditions": [{"type": "MemoryPressure", "status": "False"},
                                    {"type": "Ready", "status": "True"}]})
    assert not is_ready({"conditions": [{"type": "Ready", "status": "False"}]})
    assert not is_ready({})


def test_the_controller_measures_a_new_node_and_the_gauges_show_it() -> None:
    """Registration is the controller's first request, its Node created Ready; a not-ready node
    is measured at the first accepted Ready status instead."""
    registry = new_registry()
    metrics = NodeStartupMetrics(registry)
    assert "kubelet_node_startup_duration_seconds 0\n" in render_registry(registry).decode()

    async def run(not_ready: list[str], ready_after: float) -> dict[str, float]:
        api, clock, phases = ScriptedApi(), FakeClock(start=START), Phases()
        reasons = list(not_ready)
        controller = NodeController(api, facts(), clock, boot_id="b", not_ready=lambda: reasons, images=_images,
                                    startup=NodeStartupTracker(clock, START - 3, START - 100, phases))
        await controller.start()
        try:
            await _advance(clock, 1)
            reasons.clear()  # e.g. the runtime answers now
            await _advance(clock, ready_after)
        finally:
            await controller.stop()
        return phases.seen

    # The controller's task first runs after the test's first 0.1 s step; registering waits 0.1 s
    # (the kubelet's first step) before its request.
    ready = {phase: round(seconds, 3) for phase, seconds in asyncio.run(run([], 1)).items()}
    assert ready == {"pre_kubelet": 97, "pre_registration": 3.1, "registration": 0.1, "post_registration": 0,
                     "total": 100.2}
    late = {phase: round(seconds, 3) for phase, seconds in asyncio.run(run(["runtime is down"], 12)).items()}
    assert late["registration"] == 0.1 and late["post_registration"] > 0.8
    assert late["total"] == round(100.2 + late["post_registration"], 3)
    for phase, seconds in ready.items():
        metrics.node_startup_phase(phase, seconds)
    assert "kubelet_node_startup_pre_registration_duration_seconds 3.1\n" in render_registry(registry).decode()


def test_a_node_registered_before_is_not_measured() -> None:
    async def go() -> dict[str, float]:
        api, clock, phases = ScriptedApi(), FakeClock(start=START), Phases()
        api.objects["/api/v1/nodes/n1"] = {"metadata": {"name": "n1", "uid": "u"}, "status": {}}
        controller = NodeController(api, facts(), clock, boot_id="b", not_ready=list, images=_images,
                                    startup=NodeStartupTracker(clock, START, START - 100, phases))
        await controller.start()
        try:
            await _advance(clock, 12)  # registered, and a status update
        finally:
            await controller.stop()
        return phases.seen

    assert asyncio.run(go()) == {}
