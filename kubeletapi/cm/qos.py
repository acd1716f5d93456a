"""Pod QoS class (pkg/apis/core/v1/helper/qos ComputePodQOS), restated.

Only cpu and memory count. A container's missing request defaults to its limit (as the v1
defaults do). Init containers count like app containers; ephemeral containers do not. When the
pod sets pod-level resources (spec.resources), those decide alone.

- BestEffort: no cpu/memory request or limit above zero anywhere;
- Guaranteed: every container (or the pod level) limits both cpu and memory, and the summed
  requests equal the summed limits for each of them;
- Burstable: everything else.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum

from kubeletapi.api.core_v1 import Pod
from kubeletapi.api.quantity import Quantity

_QOS_RESOURCES = ("cpu", "memory")


class QOSClass(StrEnum):
    """A pod's quality-of-service class (v1.PodQOSClass); its value is the wire string."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


def _accumulate(totals: dict[str, Decimal], resources: dict[str, Quantity]) -> set[str]:
    """Add the positive cpu/memory quantities to `totals`; the names that were positive."""
    found = set()
    for name, quantity in resources.items():
        if name in _QOS_RESOURCES and quantity.amount > 0:
            totals[name] = totals.get(name, Decimal(0)) + quantity.amount
            found.add(name)
    return found


def qos_class(pod: Pod) -> QOSClass:
    """The pod's QoS class, as the kubelet puts it in status.qosClass."""
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    sets = [pod.spec.resources] if pod.spec.resources is not None else [c.resources for c in pod.spec.all_containers()]
    for resources in sets:
        _accumulate(requests, {**resources.limits, **resources.requests})
        if not set(_QOS_RESOURCES) <= _accumulate(limits, resources.limits):
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if guaranteed and requests.keys() == limits.keys() and all(limits[n] == v for n, v in requests.items()):
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE
