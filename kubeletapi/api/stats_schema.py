"""The JSON Schema of the stats/v1alpha1 Summary as stats_v1alpha1.to_wire() writes it (the
published API document's `Summary`; tests/unit/test_stats_schema.py validates encoded summaries
against it, so the two cannot drift apart).

Closed objects (additionalProperties: false): a key the encoder adds must be added here. Counters
are Go uint64 (non-negative integers), times metav1.Time (RFC 3339 to the second, or null for the
zero time), optional pointers absent when nil.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
REF = "#/components/schemas/"
UINT64: Schema = {"type": "integer", "minimum": 0, "maximum": 2**64 - 1}
TIME: Schema = {"type": ["string", "null"], "format": "date-time"}


def _object(required: list[str], **properties: Schema) -> Schema:
    return {"type": "object", "required": required, "properties": properties, "additionalProperties": False}


def _uints(*names: str) -> dict[str, Schema]:
    return dict.fromkeys(names, UINT64)


def _ref(name: str) -> Schema:
    return {"$ref": REF + name}


def _fs_keys() -> dict[str, Schema]:
    return {"time": TIME, **_uints("availableBytes", "capacityBytes", "usedBytes", "inodesFree", "inodes",
                                    "inodesUsed")}


def _interface_keys() -> dict[str, Schema]:
    return {"name": {"type": "string"}, **_uints("rxBytes", "rxErrors", "txBytes", "txErrors")}


SCHEMAS: dict[str, Schema] = {
    # Pressure stall information: cumulative stall time (us) and 10/60/300 s averages (percent).
    "PSIData": _object(["total", "avg10", "avg60", "avg300"], total=UINT64, avg10={"type": "number"},
                       avg60={"type": "number"}, avg300={"type": "number"}),
    "PSIStats": _object(["full", "some"], full=_ref("PSIData"), some=_ref("PSIData")),
    "IOStats": _object(["time"], time=TIME, psi=_ref("PSIStats")),
    "CPUStats": _object(["time"], time=TIME, **_uints("usageNanoCores", "usageCoreNanoSeconds"),
                        psi=_ref("PSIStats")),
    "MemoryStats": _object(["time"], time=TIME, **_uints("availableBytes", "usageBytes", "workingSetBytes",
                                                         "rssBytes", "pageFaults", "majorPageFaults"),
                           psi=_ref("PSIStats")),
    "SwapStats": _object(["time"], time=TIME, **_uints("swapAvailableBytes", "swapUsageBytes")),
    "InterfaceStats": _object(["name"], **_interface_keys()),
    # The default interface (eth0) is embedded: its keys sit beside `time`.
    "NetworkStats": _object(["time", "name"], time=TIME, **_interface_keys(),
                            interfaces={"type": "array", "items": _ref("InterfaceStats")}),
    "FsStats": _object(["time"], **_fs_keys()),
    # FsStats embedded, then the volume's name.
    "VolumeStats": _object(["time"], **_fs_keys(), name={"type": "string"},
                           pvcRef=_object(["name", "namespace"], name={"type": "string"},
                                          namespace={"type": "string"})),
    "RlimitStats": _object(["time"], time=TIME, maxpid={"type": "integer"}, curproc={"type": "integer"}),
    "ContainerStats": _object(["name", "startTime"], name={"type": "string"}, startTime=TIME,
                              cpu=_ref("CPUStats"), memory=_ref("MemoryStats"), io=_ref("IOStats"),
                              rootfs=_ref("FsStats"),
                              logs=_ref("FsStats"), swap=_ref("SwapStats")),
    "PodStats": _object(
        ["podRef", "startTime", "containers"],
        podRef=_object(["name", "namespace", "uid"], name={"type": "string"}, namespace={"type": "string"},
                       uid={"type": "string"}),
        startTime=TIME,
        containers={"type": "array", "items": _ref("ContainerStats")},
        cpu=_ref("CPUStats"), memory=_ref("MemoryStats"), io=_ref("IOStats"), network=_ref("NetworkStats"),
        volume={"type": "array", "items": _ref("VolumeStats")},
        **{"ephemeral-storage": _ref("FsStats")},
        process_stats=_object([], process_count=UINT64),
        swap=_ref("SwapStats"),
    ),
    "NodeStats": _object(
        ["nodeName", "startTime"],
        nodeName={"type": "string"},
        systemContainers={"type": "array", "items": _ref("ContainerStats")},
        startTime=TIME,
        cpu=_ref("CPUStats"), memory=_ref("MemoryStats"), io=_ref("IOStats"), network=_ref("NetworkStats"),
        fs=_ref("FsStats"),
        runtime=_object([], imageFs=_ref("FsStats"), containerFs=_ref("FsStats")),
        rlimit=_ref("RlimitStats"),
        swap=_ref("SwapStats"),
    ),
    "Summary": {
        **_object(["node", "pods"], node=_ref("NodeStats"), pods={"type": "array", "items": _ref("PodStats")}),
        "description": "stats/v1alpha1 Summary: the node's and every pod's stats of the last housekeeping cycle "
                       "(only_cpu_and_memory: CPU, memory and swap only).",
    },
}
