"""Registering the Node (registerWithAPIServer): create it with the kubelet's labels, taints and
annotation and a first status; retry every 100 ms doubling to 7 s; when it exists already (the
node was registered before), reconcile the default labels and the attach-detach annotation."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from kubeletapi.clock import Clock
from kubeletapi.errors import Conflict, Forbidden, KubeletError
from kubeletapi.node.facts import NodeFacts

log = logging.getLogger(__name__)
CMAD_ANNOTATION = "volumes.kubernetes.io/controller-managed-attach-detach"
FIRST_STEP_S = 0.1
MAX_STEP_S = 7.0

Json = dict[str, Any]


class NodeApi(Protocol):
    async def get(self, path: str) -> Json: ...

    async def create(self, path: str, body: Json) -> Json: ...

    async def patch(self, path: str, body: Json) -> Json: ...


def initial_node(facts: NodeFacts, status: Json) -> Json:
    node: Json = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": facts.name, "labels": facts.default_labels(),
                     "annotations": {CMAD_ANNOTATION: "true"}},
        "spec": {},
        "status": status,
    }
    if facts.taints:
        node["spec"]["taints"] = [dict(t) for t in facts.taints]
    return node


async def register(api: NodeApi, facts: NodeFacts, status: Callable[[], Json], clock: Clock) -> tuple[Json, bool]:
    """The registered Node and whether this call created it (else it existed and was reconciled);
    retries until it is registered."""
    step = FIRST_STEP_S
    while True:
        await clock.sleep(step)
        step = min(step * 2, MAX_STEP_S)
        node = initial_node(facts, status())
        log.info("Attempting to register node %s", facts.name)
        try:
            created = await api.create("/api/v1/nodes", node)
            log.info("Successfully registered node %s", facts.name)
            return created, True
        except (Conflict, Forbidden) as exc:
            existing = await _existing(api, facts, exc)
        except KubeletError as exc:
            log.error("Unable to register node %s with API server: %s", facts.name, exc)
            continue
        if existing is not None:
            return existing, False


async def _existing(api: NodeApi, facts: NodeFacts, why: KubeletError) -> Json | None:
    """The node that already exists, its default labels and annotation reconciled."""
    try:
        node = await api.get(f"/api/v1/nodes/{facts.name}")
    except KubeletError as exc:
        log.error("Unable to register node %s with API server (%s), error getting existing node: %s",
                  facts.name, why, exc)
        return None
    log.info("Node %s was previously registered", facts.name)
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    wanted = {k: v for k, v in facts.default_labels().items() if labels.get(k) != v}
    annotations = meta.get("annotations") or {}
    patch: Json = {}
    if wanted:
        patch.setdefault("metadata", {})["labels"] = wanted
    if annotations.get(CMAD_ANNOTATION) != "true":
        patch.setdefault("metadata", {})["annotations"] = {CMAD_ANNOTATION: "true"}
    if not patch:
        return node
    try:
        return await api.patch(f"/api/v1/nodes/{facts.name}/status", patch)
    except KubeletError as exc:
        log.error("Unable to reconcile node %s with API server, error updating node: %s", facts.name, exc)
        return None
