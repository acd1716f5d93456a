"""The node's capacity, allocatable and conditions for the web UI, as the node controller builds them.

Standalone nodes post no status, so the UI asks here: the same NodeFacts (capacity from the
machine, allocatable less kube/system reserved and the hard eviction thresholds) and the same
conditions builder (node/status.py), fed by the same pressure callable and NotReady reasons the
node controller reads, the pressure being the eviction manager's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.node import status as st
from kubeletapi.node.facts import NodeFacts, hugepages, rootfs_capacity
from kubeletapi.stats.machine import MachineInfo


class NodeView:
    """{"capacity", "allocatable", "conditions"} in wire form; conditions keep their transition times."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, machine: MachineInfo,
                 clock: Clock, pressure: Callable[[], st.Pressure]) -> None:
        self._facts = NodeFacts(
            name=node_name, hostname=node_name, addresses=(), kubelet_port=cfg.port, machine=machine,
            max_pods=cfg.max_pods, rootfs_bytes=rootfs_capacity(opts.root_dir), hugepages=hugepages(),
            kube_reserved=cfg.kube_reserved, system_reserved=cfg.system_reserved,
            eviction_hard=cfg.eviction_hard or {},
        )
        self._clock = clock
        self._pressure = pressure
        self._conditions: list[dict[str, Any]] = []

    def view(self, not_ready: Sequence[str]) -> Mapping[str, Any]:
        now = dt.datetime.fromtimestamp(self._clock.now(), dt.UTC)
        self._conditions = st.conditions(self._conditions, now, self._pressure(), not_ready)
        return {
            "capacity": {k: v.wire() for k, v in self._facts.capacity().items()},
            "allocatable": {k: v.wire() for k, v in self._facts.allocatable().items()},
            "conditions": self._conditions,
        }
