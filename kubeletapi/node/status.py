"""The node's status as the kubelet's setters build it, and whether it changed.

Conditions in the kubelet's order (MemoryPressure, DiskPressure, PIDPressure, Ready last): each
keeps its lastTransitionTime while its status does not change; lastHeartbeatTime is now. A
status "changed" ignoring heartbeat times (nodeStatusHasChanged), so the reporter patches it only
then or every nodeStatusReportFrequency.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeletapi.api.gowire import format_time
from kubeletapi.node.facts import NodeFacts

Json = dict[str, Any]


@dataclass(frozen=True)
class Pressure:
    """What the eviction manager says (kubelet/eviction.py EvictionWiring.pressure)."""

    memory: bool = False
    disk: bool = False
    pid: bool = False


# (type, True reason, True message, False reason, False message)
_PRESSURES = (
    ("MemoryPressure", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
     "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasDiskPressure", "kubelet has disk pressure",
     "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasInsufficientPID", "kubelet has insufficient PID available",
     "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)


def conditions(previous: Sequence[Mapping[str, Any]], now: dt.datetime, pressure: Pressure,
               not_ready: Sequence[str]) -> list[Json]:
    """The kubelet's four conditions; `not_ready`: the errors keeping the node NotReady."""
    stamp = format_time(now)
    before = {c.get("type"): c for c in previous}

    def condition(kind: str, status: bool, reason: str, message: str) -> Json:
        value = "True" if status else "False"
        prior = before.get(kind)
        same = prior is not None and prior.get("status") == value
        return {"type": kind, "status": value, "lastHeartbeatTime": stamp,
                "lastTransitionTime": prior.get("lastTransitionTime", stamp) if same and prior else stamp,
                "reason": reason, "message": message}

    flags = (pressure.memory, pressure.disk, pressure.pid)
    out = [condition(kind, flag, t_reason if flag else f_reason, t_msg if flag else f_msg)
           for (kind, t_reason, t_msg, f_reason, f_msg), flag in zip(_PRESSURES, flags, strict=True)]
    if not_ready:
        out.append(condition("Ready", False, "KubeletNotReady", ", ".join(not_ready)))
    else:
        out.append(condition("Ready", True, "KubeletReady", "kubelet is posting ready status"))
    return out


def node_status(facts: NodeFacts, boot_id: str, previous: Mapping[str, Any], now: dt.datetime,
                pressure: Pressure, not_ready: Sequence[str], images: Sequence[Json]) -> Json:
    """Every field of NodeStatus the kubelet owns."""
    return {
        "capacity": {k: v.wire() for k, v in facts.capacity().items()},
        "allocatable": {k: v.wire() for k, v in facts.allocatable().items()},
        "conditions": conditions(previous.get("conditions") or [], now, pressure, not_ready),
        "addresses": [{"type": t, "address": a} for t, a in facts.addresses],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": facts.kubelet_port}},
        "nodeInfo": facts.node_info(boot_id),
        "images": list(images),
    }


def without_heartbeats(status: Mapping[str, Any]) -> Json:
    """`status` with the conditions' heartbeat times left out, conditions sorted by type."""
    conds = sorted(({k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in status.get("conditions") or []),
                   key=lambda c: str(c.get("type")))
    return {**status, "conditions": conds}


def changed(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> bool:
    """nodeStatusHasChanged: anything but a heartbeat time differs."""
    return before is None or without_heartbeats(before) != without_heartbeats(after)


def status_patch(before: Mapping[str, Any] | None, after: Json) -> Json:
    """A strategic merge patch of nodes/<n>/status that sets every field the kubelet owns.

    Conditions merge by type (others' conditions stay); addresses are replaced whole, as the
    kubelet's PatchNodeStatus forces (their patch strategy would merge them otherwise)."""
    status = dict(after)
    status["addresses"] = [*after["addresses"], {"$patch": "replace"}]
    if before is not None:  # resources no longer reported are removed from the maps
        for key in ("capacity", "allocatable"):
            gone = set(before.get(key) or {}) - set(after[key])
            status[key] = {**after[key], **dict.fromkeys(sorted(gone))}
    return {"status": status}


Clock = Callable[[], dt.datetime]
