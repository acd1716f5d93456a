"""Probe runs reported as the kubelet's prober reports them: Unhealthy for each failed or errored
run (before any threshold), ProbeWarning for a success with a warning, nothing for a success."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kubeletapi.api.core_v1 import Container, Pod, PodStatus
from kubeletapi.clock import FakeClock
from kubeletapi.prober.manager import ProbeManager
from kubeletapi.prober.results import Outcome, Result
from kubeletapi.prober.worker import ProbeEvents
from tests.prober.test_worker import OK, UID, FakeRunner, FixedRandom, World, pod, probe


@dataclass
class Events:
    """A hand-written event sink: what was reported, about which container."""

    seen: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def container_event(self, pod: Pod, container: Container, event_type: str, reason: str, message: str) -> None:
        self.seen.append((pod.metadata.uid, container.name, event_type, reason, message))


_: type[ProbeEvents] = Events


def test_each_run_reports_as_the_kubelet() -> None:
    outcomes = {
        "l": lambda n: OK if n == 1 else Outcome(Result.FAILURE, "HTTP probe failed with statuscode: 500"),
        "r": lambda _: Outcome(Result.UNKNOWN, error='unknown port "web"'),
    }

    async def main() -> None:
        clock = FakeClock()
        runner = FakeRunner(clock, script=outcomes)
        events = Events()
        statuses: dict[str, PodStatus] = {}
        manager = ProbeManager(None, clock, statuses.get, lambda _: None,  # type: ignore[arg-type]
                               user_agent="kube-probe/0.1", runner=runner, rng=FixedRandom(0.0), events=events)
        w = World(clock, runner, manager, None, statuses)  # type: ignore[arg-type]
        try:
            w.running("c1")
            manager.add_pod(pod(liveness_probe=probe("l", failure=5), readiness_probe=probe("r")))
            await w.advance(3.5)
        finally:
            await manager.stop()
        by_reason = {(reason, message) for _, _, _, reason, message in events.seen}
        assert ("Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500") in by_reason
        assert ("Unhealthy", 'Readiness probe errored and resulted in unknown state: unknown port "web"') in by_reason
        failures = [e for e in events.seen if e[4].startswith("Liveness probe failed")]
        assert len(failures) == runner.count("l") - 1  # every failed run, below the threshold of 5 too
        assert all(e[:3] == (UID, "c", "Warning") for e in events.seen)
        assert not [e for e in events.seen if e[3] == "ProbeWarning"]  # plain successes report nothing

    asyncio.run(main())


def test_a_warning_is_probe_warning() -> None:
    async def main() -> None:
        clock = FakeClock()
        runner = FakeRunner(clock, script={"r": lambda _: Outcome(Result.SUCCESS, "redirected", warning=True)})
        events = Events()
        statuses: dict[str, PodStatus] = {}
        manager = ProbeManager(None, clock, statuses.get, lambda _: None,  # type: ignore[arg-type]
                               user_agent="kube-probe/0.1", runner=runner, rng=FixedRandom(0.0), events=events)
        w = World(clock, runner, manager, None, statuses)  # type: ignore[arg-type]
        try:
            w.running("c1")
            manager.add_pod(pod(readiness_probe=probe("r")))
            await w.advance(1.5)
        finally:
            await manager.stop()
        assert events.seen[0] == (UID, "c", "Warning", "ProbeWarning", "Readiness probe warning: redirected")
        assert len(events.seen) == runner.count("r")

    asyncio.run(main())
