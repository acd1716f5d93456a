"""A container's oom_score_adj (pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust)."""

from __future__ import annotations

from kubeletapi.cm.qos import QOSClass
from kubeletapi.errors import InvalidInput

GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000
KUBELET_OOM_SCORE_ADJ = -999


def oom_score_adj(
    qos: QOSClass,
    memory_request: int | None,
    memory_capacity: int,
    *,
    node_critical: bool = False,
    sidecar_min_regular_request: int | None = None,
) -> int:
    """Guaranteed and node-critical pods get -997, BestEffort 1000, Burstable
    `1000 - 1000*request/capacity` kept within [3, 999]. For a sidecar pass the smallest memory
    request of the pod's regular containers: its score never exceeds theirs.
    """
    if node_critical or qos is QOSClass.GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos is QOSClass.BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ
    if memory_capacity <= 0:
        raise InvalidInput(f"memory capacity must be positive, got {memory_capacity}")
    adj = _burstable_adj(memory_request or 0, memory_capacity)
    if sidecar_min_regular_request is not None:
        adj = min(adj, _burstable_adj(sidecar_min_regular_request, memory_capacity))
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adj == BEST_EFFORT_OOM_SCORE_ADJ:
        return adj - 1
    return adj


def _burstable_adj(request: int, capacity: int) -> int:
    # Go's int64 division truncates toward zero; requests are non-negative so // matches.
    return 1000 - (1000 * request) // capacity
