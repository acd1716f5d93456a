"""What the pods layer knows of its node: identity, directories, cgroup and isolation settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubeletapi.api.quantity import BINARY_SI, Quantity


@dataclass(frozen=True)
class NodeEnv:
    node_name: str
    node_ip: str
    root_dir: Path  # <root>/pods/<uid>/volumes/...
    pod_logs_dir: Path  # <podLogsDir>/<ns>_<name>_<uid>/<container>/<n>.log
    isolated: bool = False  # cgroups and namespaces (running as root)
    cgroup_root: str = "/"
    cgroups_per_qos: bool = True
    cfs_quota: bool = True
    pod_pids_limit: int = -1
    memory_capacity: int = 0
    cpu_capacity_milli: int = 0
    max_pods: int = 110

    def capacity(self) -> dict[str, Quantity]:
        """The cpu and memory the node has: what an unset limit is in the downward API when no
        allocatable is known (a node without an API server)."""
        return {"cpu": Quantity.from_milli(self.cpu_capacity_milli),
                "memory": Quantity.from_int(self.memory_capacity, BINARY_SI)}

    def pod_dir(self, uid: str) -> Path:
        return self.root_dir / "pods" / uid

    def pod_log_dir(self, namespace: str, name: str, uid: str) -> Path:
        return self.pod_logs_dir / f"{namespace}_{name}_{uid}"
