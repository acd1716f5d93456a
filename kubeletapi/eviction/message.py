"""The words of an eviction, as the kubelet's evictionMessage and admission write them.

`The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container
hog was using 512Mi, request is 0, has larger consumption of memory. ` (every sentence ends with
a space, as the kubelet's format strings do). Quantities print as Go's resource.Quantity
String() does: BinarySI for bytes (the exact byte count when not a whole number of Ki), DecimalSI
for inodes and pids; a percentage threshold's quantity is always BinarySI (GetThresholdQuantity).
"""

from __future__ import annotations

from collections.abc import Sequence

from kubeletapi.api.core_v1 import Pod
from kubeletapi.api.quantity import BINARY_SI, DECIMAL_SI, Quantity
from kubeletapi.eviction import thresholds as t
from kubeletapi.eviction.signals import Observations, PodUse

REASON = "Evicted"
NODE_LOW = "The node was low on resource: {}. "
THRESHOLD_MET = "Threshold quantity: {}, available: {}. "
CONTAINER = "Container {} was using {}, request is {}, has larger consumption of {}. "
POD = "Pod {} was using {}, request is {}, has larger consumption of {}. "
NODE_CONDITION = "The node had condition: [{}]. "
THRESHOLD_MET_REASON = "EvictionThresholdMet"
ATTEMPTING = "Attempting to reclaim {}"


def _available(signal: str, amount: int) -> Quantity:
    """The observation's quantity: BinarySI for bytes, DecimalSI for inodes and pids."""
    return Quantity.from_int(amount, DECIMAL_SI if t.RESOURCE[signal] in (t.INODES, t.PIDS) else BINARY_SI)


def threshold_met_info(resource: str, thresholds: Sequence[t.Threshold],
                       observations: Observations) -> tuple[Quantity, Quantity] | None:
    """getThresholdMetInfo: the first met threshold of `resource` that has an observation."""
    for threshold in thresholds:
        if t.RESOURCE[threshold.signal] != resource:
            continue
        observed = observations.get(threshold.signal)
        if observed is not None:
            return threshold.value.amount(observed.capacity), _available(threshold.signal, observed.available)
    return None


def eviction_message(resource: str, pod: Pod, use: PodUse | None, thresholds: Sequence[t.Threshold],
                     observations: Observations) -> str:
    message = NODE_LOW.format(resource)
    met = threshold_met_info(resource, thresholds, observations)
    if met is not None:
        message += THRESHOLD_MET.format(*met)
    if use is None:
        return message
    level = pod.spec.resources
    if resource == t.MEMORY and level is not None and t.MEMORY in level.requests and use.working_set is not None:
        message += POD.format(pod.metadata.name, Quantity.from_int(use.working_set, BINARY_SI),
                              level.requests[t.MEMORY], resource)
    specs = {c.name: c for c in (*pod.spec.containers, *pod.spec.init_containers)}
    for stats in use.containers:
        spec = specs.get(stats.name)
        if spec is None:
            continue
        usage: int | None = None
        if resource == t.EPHEMERAL_STORAGE and stats.rootfs is not None and stats.logs is not None:
            usage = stats.rootfs.bytes + stats.logs.bytes
        elif resource == t.MEMORY and stats.working_set is not None:
            usage = stats.working_set
        requested = spec.resources.requests.get(resource)
        if usage is not None and usage > (requested.amount if requested is not None else 0):
            message += CONTAINER.format(spec.name, Quantity.from_int(usage, BINARY_SI),
                                        requested if requested is not None else "0", resource)
    return message


def node_condition_message(conditions: Sequence[str]) -> str:
    """nodeConditionMessageFmt with Go's %v of a slice: `[MemoryPressure DiskPressure]`."""
    return NODE_CONDITION.format(" ".join(conditions))
