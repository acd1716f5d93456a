"""The Node's pod CIDR reaches the pod wiring: the controller-manager sets spec.podCIDRs after the
registration; the controller GETs its Node each status update until it sees one, hands it on once,
and stops GETting; a later change (the status patch's answer) is handed on too."""

from __future__ import annotations

import asyncio

from kubeletapi.clock import FakeClock
from kubeletapi.node.controller import NodeController
from tests.node.test_lease_and_registration import ScriptedApi
from tests.node.test_node_events import _advance, _images
from tests.node.test_status import facts

NODE = "/api/v1/nodes/n1"


def test_pod_cidr_is_read_until_allocated_then_handed_on_once() -> None:
    api, clock = ScriptedApi(), FakeClock()
    seen: list[str] = []

    async def took(cidr: str) -> None:
        seen.append(cidr)

    async def go() -> None:
        controller = NodeController(api, facts(), clock, boot_id="b", not_ready=list, images=_images,
                                    pod_cidr=took)
        await controller.start()
        try:
            await _advance(clock, 25)  # registered; two status updates without a CIDR: two GETs
            assert seen == []
            api.objects[NODE]["spec"] = {"podCIDR": "10.251.3.0/24", "podCIDRs": ["10.251.3.0/24"]}
            await _advance(clock, 10)
            assert seen == ["10.251.3.0/24"]
            gets = api.calls.count(("GET", NODE))
            await _advance(clock, 30)
            assert api.calls.count(("GET", NODE)) == gets  # known: no more GETs
            api.objects[NODE]["spec"]["podCIDRs"] = ["10.251.4.0/24", "fd00:4::/64"]
            clock.advance(300)  # a status report is due: its answer carries the new spec
            await _advance(clock, 10)
            assert seen == ["10.251.3.0/24", "10.251.4.0/24,fd00:4::/64"]
            assert controller.pod_cidr == "10.251.4.0/24,fd00:4::/64"
        finally:
            await controller.stop()

    asyncio.run(go())
    assert api.calls.count(("GET", NODE)) >= 2


def test_without_a_consumer_the_node_is_never_read() -> None:
    api, clock = ScriptedApi(), FakeClock()

    async def go() -> None:
        controller = NodeController(api, facts(), clock, boot_id="b", not_ready=list, images=_images)
        await controller.start()
        try:
            await _advance(clock, 25)
        finally:
            await controller.stop()

    asyncio.run(go())
    assert ("GET", NODE) not in api.calls
