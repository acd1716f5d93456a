"""The node's heartbeat: a Lease in kube-node-lease named after the node, renewed every
leaseDuration x 0.25 (10 s for the default 40 s), as the kubelet's node lease controller does:
an update from the last lease it wrote first, a GET or CREATE only when that fails; the lease's
owner is the Node (so it goes with it)."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any, Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import Conflict, KubeletError, NotFound

log = logging.getLogger(__name__)
NAMESPACE = "kube-node-lease"
RENEW_FRACTION = 0.25
MAX_BACKOFF_S = 7.0

Json = dict[str, Any]


class LeaseApi(Protocol):
    async def get(self, path: str) -> Json: ...

    async def create(self, path: str, body: Json) -> Json: ...

    async def replace(self, path: str, body: Json) -> Json: ...


def micro_time(moment: float) -> str:
    """metav1.MicroTime: RFC 3339 in UTC with microseconds."""
    return dt.datetime.fromtimestamp(moment, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseRenewer:
    def __init__(self, api: LeaseApi, node: str, node_uid: str, duration_s: int, clock: Clock) -> None:
        self._api = api
        self._node = node
        self._node_uid = node_uid
        self._duration = duration_s
        self._clock = clock
        self._latest: Json | None = None
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{node}"
        self.interval_s = duration_s * RENEW_FRACTION

    async def run(self) -> None:
        backoff = 0.2
        while True:
            try:
                await self.renew()
            except KubeletError as exc:
                log.warning("failed to renew the node lease %s/%s: %s; retrying in %.1fs",
                            NAMESPACE, self._node, exc, backoff)
                await self._clock.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                continue
            backoff = 0.2
            await self._clock.sleep(self.interval_s)

    async def renew(self) -> None:
        """One renewal: update the last lease written; on a conflict or none yet, GET or CREATE."""
        if self._latest is not None:
            try:
                self._latest = await self._api.replace(self._path, self._renewed(self._latest))
                return
            except (Conflict, NotFound):
                self._latest = None
        try:
            current = await self._api.get(self._path)
        except NotFound:
            self._latest = await self._api.create(
                f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases", self._renewed(self._new()))
            return
        self._latest = await self._api.replace(self._path, self._renewed(current))

    def _new(self) -> Json:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self._node, "namespace": NAMESPACE}, "spec": {}}

    def _renewed(self, lease: Json) -> Json:
        meta = dict(lease.get("metadata") or {})
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": self._node, "uid": self._node_uid}]
        spec = {**(lease.get("spec") or {}), "holderIdentity": self._node, "leaseDurationSeconds": self._duration,
                "renewTime": micro_time(self._clock.now())}
        return {**lease, "metadata": meta, "spec": spec}
