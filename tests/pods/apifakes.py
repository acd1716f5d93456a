"""Hand-written stand-ins for the API server's answers to the pods layer's readers (object lists
and watches, TokenRequests, services): the cluster tests run the real thing."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

Json = dict[str, Any]


async def settle(rounds: int = 20) -> None:
    """Let the loop run every ready task for a while."""
    for _ in range(rounds):
        await asyncio.sleep(0)


@dataclass
class FakeObjects:
    """Namespaced objects of one resource by path: LIST with fieldSelector metadata.name, WATCH
    fed by put()/delete(); `fail` holds errors the next LISTs raise, in order."""

    objects: dict[str, Json] = field(default_factory=dict)  # "<collection path>/<name>" -> object
    calls: list[tuple[str, str]] = field(default_factory=list)  # (verb, path?selector)
    fail: list[Exception] = field(default_factory=list)
    version: int = 100
    _watches: dict[str, asyncio.Queue[Json | Exception | None]] = field(default_factory=dict)

    def _key(self, path: str, params: Mapping[str, str] | None) -> str:
        name = (params or {}).get("fieldSelector", "").removeprefix("metadata.name=")
        return f"{path}/{unquote(name)}" if name else path

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> Json:
        key = self._key(path, params)
        self.calls.append(("LIST", key))
        if self.fail:
            raise self.fail.pop(0)
        if key in self.objects:
            items = [copy.deepcopy(self.objects[key])]
        else:
            items = [copy.deepcopy(o) for k, o in self.objects.items() if k.startswith(path + "/") and key == path]
        return {"metadata": {"resourceVersion": str(self.version)}, "items": items}

    async def watch(self, path: str, resource_version: str, params: Mapping[str, str] | None = None,
                    timeout_s: int = 0) -> AsyncIterator[Json]:
        key = self._key(path, params)
        self.calls.append(("WATCH", key))
        queue: asyncio.Queue[Json | Exception | None] = asyncio.Queue()
        self._watches[key] = queue
        while True:
            event = await queue.get()
            if event is None:
                return
            if isinstance(event, Exception):
                raise event
            yield event

    def _send(self, key: str, event: Json | Exception | None) -> None:
        for watched, queue in self._watches.items():
            if watched == key or key.startswith(watched + "/"):
                queue.put_nowait(event)

    def put(self, path: str, name: str, **body: Any) -> Json:
        self.version += 1
        key = f"{path}/{name}"
        kind = "MODIFIED" if key in self.objects else "ADDED"
        namespace = path.split("/")[4] if path.count("/") >= 5 else ""
        obj = {"metadata": {"name": name, "namespace": namespace, "resourceVersion": str(self.version)}, **body}
        self.objects[key] = obj
        self._send(key, {"type": kind, "object": copy.deepcopy(obj)})
        return obj

    def delete(self, path: str, name: str) -> None:
        self.version += 1
        obj = self.objects.pop(f"{path}/{name}")
        obj["metadata"]["resourceVersion"] = str(self.version)
        self._send(f"{path}/{name}", {"type": "DELETED", "object": obj})

    def end_watch(self, path: str, name: str, error: Exception | None = None) -> None:
        self._send(f"{path}/{name}", error)

    def count(self, verb: str) -> int:
        return sum(1 for v, _ in self.calls if v == verb)
