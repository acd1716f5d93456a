"""The pod counts the kubelet's HandlePodCleanups sets (pkg/kubelet/kubelet_pods.go) each
housekeeping: kubelet_desired_pods and kubelet_active_pods (count_pods), and kubelet_working_pods
(count_working), the pod workers' pods by lifecycle, config and static, every valid combination.

- lifecycle: `sync` (running or starting), `terminating` (its kill is under way), `terminated`
  (killed, kept for its final status: a deleted API pod awaiting the API server, an evicted pod);
- config: `desired` (its source still defines it), `orphan` (its source dropped it while its worker
  knew it), `runtime_only` (found in the runtime, never known to a worker: its static is `unknown`);
- static: `true` for a pod of the file or HTTP sources, "" for the others.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kubeletapi.api.core_v1 import Pod
from kubeletapi.pods.static import is_static

WorkingKey = tuple[str, str, str]  # (lifecycle, config, static)
LIFECYCLES = ("sync", "terminating", "terminated")
# The combinations the kubelet reports (its PodWorkerSync values that can occur).
CONFIGS = (("desired", "true"), ("desired", ""), ("orphan", "true"), ("orphan", ""), ("runtime_only", "unknown"))


def count_working(desired: Mapping[str, Pod], killing: Mapping[str, Pod], terminated: Collection[str],
                  evicted: Mapping[str, Pod], runtime_only: Collection[str]) -> dict[WorkingKey, int]:
    """Every combination of CONFIGS and LIFECYCLES with its count of pods (0 for most).

    `desired`: admitted pods; `killing`: pods whose kill runs (admitted or not); `terminated`:
    admitted pods killed and kept; `evicted`: pods killed by eviction, kept while defined;
    `runtime_only`: the uids in `killing` found in the runtime alone."""
    counts = {(lifecycle, config, static): 0 for config, static in CONFIGS for lifecycle in LIFECYCLES}
    for uid, pod in desired.items():
        lifecycle = "terminating" if uid in killing else "terminated" if uid in terminated else "sync"
        counts[(lifecycle, "desired", _static(pod))] += 1
    for pod in evicted.values():
        counts[("terminated", "desired", _static(pod))] += 1
    for uid, pod in killing.items():
        if uid in desired:
            continue
        key = ("terminating", "runtime_only", "unknown") if uid in runtime_only else \
            ("terminating", "orphan", _static(pod))
        counts[key] += 1
    return counts


def count_pods(defined: Iterable[Pod], active: Iterable[Pod]) -> dict[bool, tuple[int, int]]:
    """(desired, active) for static pods (True) and the others (False). `defined`: every pod its
    sources define (admitted, refused at admission, kept evicted); `active`: those
    filterOutInactivePods keeps."""
    counts = {True: [0, 0], False: [0, 0]}
    for column, pods in enumerate((defined, active)):
        for pod in pods:
            counts[is_static(pod)][column] += 1
    return {static: (desired, running) for static, (desired, running) in counts.items()}


def _static(pod: Pod) -> str:
    return "true" if is_static(pod) else ""
