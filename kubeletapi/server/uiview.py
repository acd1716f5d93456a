"""The web UI's JSON views: the node overview, the pods table, one pod with its containers.

Every figure comes from what the API serves: usage from the last housekeeping cycle's Summary
(the object /stats/summary is encoded from, kept in stats/history.py with the charts' series),
pods, phases, restarts, QoS, requests and limits from the /pods PodList, capacity, allocatable
and conditions from the node's status. CPU is in cores (usageNanoCores / 1e9), memory the working
set in bytes, network rates in bytes per second. A pod the summary leaves out (no running
container) has no CPU or memory figure (null), as on /stats/summary.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kubeletapi.api import stats_v1alpha1 as api
from kubeletapi.api.quantity import Quantity
from kubeletapi.errors import InvalidInput, NotFound
from kubeletapi.stats.history import NODE_KEY, History, container_key, cores, fs_used, pod_key, working_set

Json = dict[str, Any]
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def _pods(pod_list: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield from pod_list.get("items") or []


def _stats_by_uid(history: History) -> dict[str, api.PodStats]:
    summary = history.latest().summary
    return {p.uid: p for p in summary.pods} if summary is not None else {}


def _fs(fs: api.FsStats | None) -> Json | None:
    if fs is None:
        return None
    return {"used": fs.used_bytes, "capacity": fs.capacity_bytes, "available": fs.available_bytes}


def _quantity(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(Quantity.parse(str(text)).amount)
    except InvalidInput:
        return None


def _statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((pod.get("status") or {}).get("containerStatuses") or [])


def node_overview(history: History, pod_list: Mapping[str, Any], node: Mapping[str, Any], node_name: str,
                  logs: bool) -> Json:
    """The node page's figures; `node`: {"capacity", "allocatable", "conditions"} as in its status."""
    latest = history.latest()
    stats = latest.summary.node if latest.summary is not None else None
    series = history.series(NODE_KEY)
    rates = {name: _last(series.values[name]) if series else None for name in ("rx", "tx")}
    pods = list(_pods(pod_list))
    capacity, allocatable = node.get("capacity") or {}, node.get("allocatable") or {}
    return {
        "node": node_name,
        "generation": latest.generation,
        "time": latest.time_s,
        "logs": logs,
        "cpu": {"cores": cores(stats.cpu) if stats else None, "capacity": _quantity(capacity.get("cpu")),
                "allocatable": _quantity(allocatable.get("cpu"))},
        "memory": {"workingSet": working_set(stats.memory) if stats else None,
                   "capacity": _quantity(capacity.get("memory")),
                   "allocatable": _quantity(allocatable.get("memory"))},
        "network": rates,
        "fs": _fs(stats.fs) if stats else None,
        "imageFs": _fs(stats.image_fs) if stats else None,
        "load": list(latest.load) if latest.load is not None else None,
        "pods": len(pods),
        "containers": sum(len(_statuses(p)) for p in pods),
        "runningContainers": sum(1 for p in pods for s in _statuses(p) if "running" in (s.get("state") or {})),
        "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")}
                       for c in node.get("conditions") or []],
        "series": series.to_wire() if series else None,
    }


def _last(values: Sequence[float | None]) -> float | None:
    return next((v for v in reversed(values) if v is not None), None)


def _row(pod: Mapping[str, Any], stats: api.PodStats | None) -> Json:
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    statuses = _statuses(pod)
    started = status.get("startTime")
    return {
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "phase": status.get("phase", "Pending"),
        "ready": sum(1 for s in statuses if s.get("ready")),
        "containers": len((pod.get("spec") or {}).get("containers") or []),
        "restarts": sum(int(s.get("restartCount") or 0) for s in statuses),
        "cpu": cores(stats.cpu) if stats else None,
        "memory": working_set(stats.memory) if stats else None,
        "startTime": dt.datetime.fromisoformat(started).timestamp() if started else None,
        "qos": status.get("qosClass", ""),
        "reason": status.get("reason", ""),
    }


def pods_table(history: History, pod_list: Mapping[str, Any]) -> Json:
    """Every pod the node manages, one row each, sorted by namespace and name."""
    by_uid = _stats_by_uid(history)
    latest = history.latest()
    rows = [_row(p, by_uid.get((p.get("metadata") or {}).get("uid", ""))) for p in _pods(pod_list)]
    rows.sort(key=lambda r: (r["namespace"], r["name"]))
    return {"generation": latest.generation, "time": latest.time_s, "pods": rows}


def find_pod(pod_list: Mapping[str, Any], namespace: str, name: str) -> Mapping[str, Any]:
    """The pod, or NotFound with the kubelet's words."""
    for pod in _pods(pod_list):
        meta = pod.get("metadata") or {}
        if meta.get("namespace") == namespace and meta.get("name") == name:
            return pod
    raise NotFound(f'pod "{name}" in namespace "{namespace}" does not exist on this node')


def check_container(pod: Mapping[str, Any], container: str) -> None:
    """NotFound unless the pod's spec has the container (init containers included)."""
    spec = pod.get("spec") or {}
    names = {c.get("name") for c in (spec.get("initContainers") or []) + (spec.get("containers") or [])}
    if container not in names:
        meta = pod.get("metadata") or {}
        raise NotFound(f'container "{container}" is not in pod "{meta.get("namespace")}/{meta.get("name")}"')


def _probe(probe: Mapping[str, Any] | None) -> Json | None:
    if not probe:
        return None
    handler = next((k for k in ("httpGet", "tcpSocket", "exec", "grpc") if k in probe), "")
    return {"handler": handler, "periodSeconds": probe.get("periodSeconds", 10),
            "failureThreshold": probe.get("failureThreshold", 3), "initialDelaySeconds": probe.get(
                "initialDelaySeconds", 0)}


def _resources(spec: Mapping[str, Any]) -> Json:
    res = spec.get("resources") or {}
    return {kind: {"cpu": _quantity((res.get(kind) or {}).get("cpu")),
                   "memory": _quantity((res.get(kind) or {}).get("memory"))} for kind in ("requests", "limits")}


def _container(history: History, uid: str, spec: Mapping[str, Any], status: Mapping[str, Any] | None,
               stats: api.ContainerStats | None, init: bool) -> Json:
    name = spec.get("name", "")
    series = history.series(container_key(uid, name))
    status = status or {}
    return {
        "name": name, "image": spec.get("image", ""), "init": init,
        "state": status.get("state") or {}, "lastState": status.get("lastState") or {},
        "ready": bool(status.get("ready")), "restarts": int(status.get("restartCount") or 0),
        "probes": {k: _probe(spec.get(k)) for k in PROBES},
        **_resources(spec),
        "cpu": cores(stats.cpu) if stats else None,
        "memory": working_set(stats.memory) if stats else None,
        "logs": _fs(stats.logs) if stats else None,
        "series": series.to_wire() if series else None,
    }


def pod_detail(history: History, pod: Mapping[str, Any]) -> Json:
    """One pod (as find_pod found it): its row, conditions and containers with their series."""
    uid = (pod.get("metadata") or {}).get("uid", "")
    stats = _stats_by_uid(history).get(uid)
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    by_name = {s.get("name"): s for s in
               (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])}
    used = {c.name: c for c in stats.containers} if stats else {}
    containers = [_container(history, uid, c, by_name.get(c.get("name")), used.get(c.get("name", "")), init)
                  for init, key in ((True, "initContainers"), (False, "containers")) for c in spec.get(key) or []]
    series = history.series(pod_key(uid))
    return {
        "generation": history.latest().generation,
        "pod": _row(pod, stats),
        "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")}
                       for c in status.get("conditions") or []],
        "message": status.get("message", ""),
        "ephemeralStorage": fs_used(stats.ephemeral_storage) if stats else None,
        "containers": containers,
        "series": series.to_wire() if series else None,
        "network": {"rx": _last(series.values["rx"]), "tx": _last(series.values["tx"])} if series else None,
    }
