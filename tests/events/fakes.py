"""Hand-written fakes for the event recorder's tests: the API server's events endpoint and a
clock whose sleeps pass at once (recording how long they were)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kubeletapi.clock import FakeClock
from kubeletapi.errors import Conflict, KubeletError, NotFound
from kubeletapi.events.recorder import EventSink

Json = dict[str, Any]


@dataclass
class FakeEventsApi:
    """POST and PATCH of namespaces/<ns>/events, as the API server stores them; `failures` are
    raised by the next requests, in order."""

    stored: dict[str, Json] = field(default_factory=dict)  # "<ns>/<name>" -> event
    requests: list[tuple[str, str, Json]] = field(default_factory=list)  # (verb, path, body)
    failures: list[KubeletError] = field(default_factory=list)
    version: int = 0

    async def create(self, path: str, body: Json) -> Json:
        self.requests.append(("POST", path, body))
        self._fail()
        meta = body["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        assert path == f"/api/v1/namespaces/{meta['namespace']}/events"
        if key in self.stored:
            raise Conflict(f'events "{meta["name"]}" already exists')
        return self._store(key, copy.deepcopy(body))

    async def patch(self, path: str, body: Json) -> Json:
        self.requests.append(("PATCH", path, body))
        self._fail()
        namespace, name = path.split("/")[4], path.split("/")[6]
        key = f"{namespace}/{name}"
        if key not in self.stored:
            raise NotFound(f'events "{name}" not found')
        return self._store(key, {**self.stored[key], **body})

    def _fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    def _store(self, key: str, event: Json) -> Json:
        self.version += 1
        event["metadata"] = {**event["metadata"], "resourceVersion": str(self.version)}
        self.stored[key] = event
        return copy.deepcopy(event)

    def events(self) -> list[Json]:
        return list(self.stored.values())

    def verbs(self) -> list[str]:
        return [verb for verb, _, _ in self.requests]


_: type[EventSink] = FakeEventsApi  # the fake implements the recorder's protocol


class InstantClock(FakeClock):
    """A fake clock whose sleeps move it forward at once; `slept` records them."""

    def __init__(self) -> None:
        super().__init__(start=1_750_000_000.0)
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(seconds)
