"""The node's life in the API server: register, then report status and renew the lease.

Every nodeStatusUpdateFrequency the status is computed; it is patched only when it changed
(ignoring heartbeat times) or nodeStatusReportFrequency has passed since the last patch, the
lease carrying the heartbeat in between (the kubelet's tryUpdateNodeStatus with NodeLease). The
status last sent is the base of the comparison, so a steady node sends one lease update per 10 s
and a status patch per 5 min, and no GET of its Node once it knows its pod CIDR. The events of the
conditions' changes (nodeevents.py) are recorded against the conditions the Node last had.

The pod CIDR (spec.podCIDRs, which the controller-manager allocates after registration) is read
from the registered Node, from every status patch's answer, and, until one is known, from a GET of
the Node each nodeStatusUpdateFrequency (the kubelet GETs its Node for every status update and
calls updatePodCIDR with what it finds); each new value is handed to `pod_cidr`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from kubeletapi.aio import cancel_and_wait
from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError
from kubeletapi.node import status as st
from kubeletapi.node.facts import NodeFacts
from kubeletapi.node.lease import LeaseApi, LeaseRenewer
from kubeletapi.node.nodeevents import NodeEvents, condition_events, reboot_event
from kubeletapi.node.registration import NodeApi, register
from kubeletapi.node.startup import NodeStartupTracker, is_ready

log = logging.getLogger(__name__)

Json = dict[str, Any]


class Api(NodeApi, LeaseApi, Protocol):
    pass


class NodeController:
    def __init__(self, api: Api, facts: NodeFacts, clock: Clock, *, boot_id: str,
                 not_ready: Callable[[], Sequence[str]], images: Callable[[], Awaitable[Sequence[Json]]],
                 pressure: Callable[[], st.Pressure] = st.Pressure, update_s: float = 10.0,
                 report_s: float = 300.0, lease_s: int = 40, events: NodeEvents | None = None,
                 pod_cidr: Callable[[str], Awaitable[None]] | None = None,
                 startup: NodeStartupTracker | None = None) -> None:
        self._api = api
        self._startup = startup
        self.facts = facts
        self._clock = clock
        self._boot_id = boot_id
        self._not_ready = not_ready
        self._images = images
        self._pressure = pressure
        self._update_s = update_s
        self._report_s = report_s
        self._lease_s = lease_s
        self._events = events
        self._pod_cidr = pod_cidr
        self.pod_cidr = ""  # the Node's spec.podCIDRs, comma-joined, as last handed on
        self._conditions: list[Json] = []  # the Node's conditions as last sent (or registered)
        self._sent: Json | None = None  # the status last accepted by the API server
        self._sent_at = float("-inf")
        self._tasks: list[asyncio.Task[None]] = []
        self.registered = asyncio.Event()
        self.uid = ""

    async def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._run(), name="node-status"))

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()

    async def _run(self) -> None:
        first: list[Json] = []

        def initial() -> Json:
            first[:] = [self._status(None, [])]
            self._record(condition_events(self.facts.name, [], first[0]["conditions"]))
            return first[0]

        if self._startup is not None:
            self._startup.attempt()
        node, created = await register(self._api, self.facts, initial, self._clock)
        if self._startup is not None and created:
            self._startup.registered_new()
            if is_ready(node.get("status") or {}):
                self._startup.ready()
        self.uid = str((node.get("metadata") or {}).get("uid", ""))
        self._conditions = list((node.get("status") or {}).get("conditions") or [])
        self._record([e for e in [reboot_event(self.facts.name, node, self._boot_id)] if e is not None])
        # A node it created carries the status just computed; one registered before is patched next.
        self._sent = first[0] if created else None
        self._sent_at = self._clock.monotonic()
        self.registered.set()
        await self._take_pod_cidr(node)
        lease = LeaseRenewer(self._api, self.facts.name, self.uid, self._lease_s, self._clock)
        self._tasks.append(asyncio.create_task(lease.run(), name="node-lease"))
        while True:
            try:
                if self._pod_cidr is not None and not self.pod_cidr:
                    await self._take_pod_cidr(await self._api.get(f"/api/v1/nodes/{self.facts.name}"))
                await self.sync_status()
            except KubeletError as exc:
                log.error("Error updating node status, will retry: %s", exc)
            await self._clock.sleep(self._update_s)

    def _status(self, before: Json | None, images: Sequence[Json]) -> Json:
        now = dt.datetime.fromtimestamp(self._clock.now(), dt.UTC)
        return st.node_status(self.facts, self._boot_id, before or {}, now, self._pressure(),
                              list(self._not_ready()), images)

    async def sync_status(self) -> bool:
        """Compute the status; patch it when it changed or a report is due. True when patched."""
        images = await self._images()
        status = self._status(self._sent, images)
        self._record(condition_events(self.facts.name, self._conditions, status["conditions"]))
        due = self._clock.monotonic() - self._sent_at >= self._report_s
        if not due and not st.changed(self._sent, status):
            return False
        node = await self._api.patch(f"/api/v1/nodes/{self.facts.name}/status", st.status_patch(self._sent, status))
        if self._startup is not None and is_ready(status):  # accepted: the Node's conditions are these
            self._startup.ready()
        await self._take_pod_cidr(node)
        self._sent = status  # the fields this node owns, as it sent them (the base of the next comparison)
        self._sent_at = self._clock.monotonic()
        self._conditions = status["conditions"]
        return True

    async def _take_pod_cidr(self, node: Json) -> None:
        """Hand a new spec.podCIDRs (or the older spec.podCIDR alone) on."""
        if self._pod_cidr is None:
            return
        spec = node.get("spec") or {}
        cidrs = spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else [])
        joined = ",".join(str(c) for c in cidrs)
        if joined and joined != self.pod_cidr:
            log.info("Updating Pod CIDR: %r -> %r", self.pod_cidr, joined)
            await self._pod_cidr(joined)
            self.pod_cidr = joined

    def _record(self, events: Sequence[tuple[str, str, str]]) -> None:
        if self._events is not None:
            for event_type, reason, message in events:
                self._events.node_event(event_type, reason, message)
