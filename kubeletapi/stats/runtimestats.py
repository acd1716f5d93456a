"""What the stats provider asks of a CRI runtime: its pod, container and image filesystem stats.

With a CRI runtime the summary (and /metrics/resource, built from it) takes pod and container CPU
and memory from the runtime (ListPodSandboxStats, ListContainerStats), as the kubelet's CRI stats
provider does, plus what only the runtime knows: each container's writable layer and the image
filesystem (ImageFsInfo). /metrics/cadvisor stays on the cgroup readers, which have every family.

CPU rates: the runtime's usageNanoCores when it gave a non-zero one, else computed by the
collector from the cumulative counter of two cycles (containerd leaves it empty on the first call
and on list calls).

The housekeeper asks a RuntimeStatsSource on the event loop once per cycle (before the reads in
the worker thread) and hands the collector the RuntimeStats (runtime.stats) it answered. The CRI
runtime implements the protocol (runtime.cri.stats.CRIStatsSource); the composition root wires it.
"""

from __future__ import annotations

from typing import Protocol

from kubeletapi.runtime.stats import RuntimeStats


class RuntimeStatsSource(Protocol):
    async def runtime_stats(self) -> RuntimeStats:
        """This cycle's runtime stats; KubeletError when the runtime cannot answer (the cycle then
        goes on with cgroups alone and the previous image filesystem figures)."""
        ...
