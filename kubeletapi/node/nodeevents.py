"""The node's own events, as the kubelet's status setters record them (nodestatus/setters.go).

- MemoryPressure, DiskPressure, PIDPressure: whenever a condition's status is not what the node
  last had (a condition it did not have counts as Unknown), Normal NodeHasSufficientMemory /
  NodeHasInsufficientMemory, NodeHasNoDiskPressure / NodeHasDiskPressure, NodeHasSufficientPID /
  NodeHasInsufficientPID, `Node <name> status is now: <reason>`. So every start (its first
  status is built afresh) records the three again.
- Ready: only a change of a Ready condition the node had: NodeReady / NodeNotReady, same wording.
- Rebooted (Warning, once per start): the Node's bootID is not this machine's, `Node <name> has
  been rebooted, boot id: <id>`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from kubeletapi.events import reasons

_PRESSURE = {
    ("MemoryPressure", "True"): "NodeHasInsufficientMemory", ("MemoryPressure", "False"): "NodeHasSufficientMemory",
    ("DiskPressure", "True"): "NodeHasDiskPressure", ("DiskPressure", "False"): "NodeHasNoDiskPressure",
    ("PIDPressure", "True"): "NodeHasInsufficientPID", ("PIDPressure", "False"): "NodeHasSufficientPID",
}

Event = tuple[str, str, str]  # type, reason, message


class NodeEvents(Protocol):
    """Where the node's events go (the event recorder)."""

    def node_event(self, event_type: str, reason: str, message: str) -> None: ...


def condition_events(node: str, before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> list[Event]:
    """The events of going from the conditions `before` (the Node's) to `after`, in setter order."""
    prior = {c.get("type"): c.get("status") for c in before}
    out: list[Event] = []
    for condition in after:
        kind, status = condition.get("type"), condition.get("status")
        if kind == "Ready":
            if kind in prior and prior[kind] != status:
                reason = reasons.NODE_READY if status == "True" else reasons.NODE_NOT_READY
                out.append((reasons.NORMAL, reason, f"Node {node} status is now: {reason}"))
        elif (reason := _PRESSURE.get((str(kind), str(status)), "")) and prior.get(kind) != status:
            out.append((reasons.NORMAL, reason, f"Node {node} status is now: {reason}"))
    return out


def reboot_event(node: str, registered: Mapping[str, Any], boot_id: str) -> Event | None:
    """Rebooted, when the Node as registered carries another machine boot's ID."""
    before = ((registered.get("status") or {}).get("nodeInfo") or {}).get("bootID") or ""
    if before and before != boot_id:
        return reasons.WARNING, reasons.REBOOTED, f"Node {node} has been rebooted, boot id: {boot_id}"
    return None
