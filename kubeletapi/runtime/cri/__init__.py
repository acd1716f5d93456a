"""The CRI runtime: kubeletapi's client of a CRI v1 runtime (containerd) over gRPC.

The only package that imports grpc for the runtime (the prober's gRPC health checks have their
own). Modules:
- api.proto and gen/: kubeletapi's subset of the CRI v1 API and its generated stubs (`make proto`);
- client.py: the channel, typed calls with deadlines, the gRPC status -> kubeletapi.errors mapping;
- convert.py: runtime.types values <-> CRI messages (sandboxes as host-network pods);
- runtime.py: CRIRuntime (Runtime, Streamer, images, ReopenContainerLog, its stats_source);
- streams.py: exec/attach/port-forward through the runtime's streaming server (WebSocket v4);
- stats.py: CRIStatsSource, the pod, container and image filesystem stats the stats provider
  takes (calls, fallbacks, conversion to runtime.stats values).
"""

from kubeletapi.runtime.cri.runtime import CRIRuntime, RuntimeCondition
from kubeletapi.runtime.cri.stats import CRIStatsSource

__all__ = ["CRIRuntime", "CRIStatsSource", "RuntimeCondition"]
