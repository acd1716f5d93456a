"""Wiring of apiserver mode's node side: the API client from --kubeconfig, the node's facts from
the configuration and the machine, and the node controller (registration, status, lease).

Without --kubeconfig none of this exists: the standalone node is unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from kubeletapi.apiclient.client import ApiClient
from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.kubeconfig import load_kubeconfig
from kubeletapi.kubelet.pods import PodWiring
from kubeletapi.node.controller import NodeController
from kubeletapi.node.facts import NodeFacts, hugepages, rootfs_capacity
from kubeletapi.nodeinfo import IPAddress
from kubeletapi.stats.machine import MachineInfo

log = logging.getLogger(__name__)
KUBERNETES_VERSION = "v1.34.4"  # the kubelet whose behaviour this agent reproduces in a cluster


def kubelet_version() -> str:
    """nodeInfo.kubeletVersion: the Kubernetes version reproduced, with kubeletapi's own as build
    metadata (semver ignores it, so version checks see a 1.34 kubelet)."""
    from kubeletapi import __version__  # noqa: PLC0415 - the package's, at call time

    return f"{KUBERNETES_VERSION}+kubeletapi-{__version__}"


class NodeWiring:
    """The API client and the node controller, when --kubeconfig names an API server."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, node_name: str,
                 node_ips: Sequence[IPAddress], clock: Clock, pods: PodWiring, machine: MachineInfo) -> None:
        assert opts.kubeconfig is not None
        self.api = ApiClient(load_kubeconfig(opts.kubeconfig), clock, qps=cfg.kube_api_qps, burst=cfg.kube_api_burst)
        self._pods = pods
        addresses = [("InternalIP", str(ip)) for ip in node_ips] + [("Hostname", node_name)]
        self.facts = NodeFacts(
            name=node_name, hostname=node_name, addresses=addresses, kubelet_port=cfg.port, machine=machine,
            max_pods=cfg.max_pods, rootfs_bytes=rootfs_capacity(opts.root_dir), hugepages=hugepages(),
            kubelet_version=kubelet_version(), labels=dict(opts.node_labels),
            taints=[t.to_wire() for t in cfg.register_with_taints],
            kube_reserved=cfg.kube_reserved, system_reserved=cfg.system_reserved,
            eviction_hard=cfg.eviction_hard or {},
        )
        self.controller: NodeController | None = None
        self._cfg = cfg
        self._clock = clock
        self._boot_id = machine.boot_id

    async def start(self, runtime_version: str) -> None:
        if not self._cfg.register_node:
            log.info("registerNode is false: the node is not registered with %s", self.api.server)
            return
        facts = NodeFacts(**{**self.facts.__dict__, "runtime_version": runtime_version})
        cfg = self._cfg
        self.controller = NodeController(
            self.api, facts, self._clock, boot_id=self._boot_id, not_ready=self._not_ready, images=self._images,
            update_s=cfg.node_status_update_frequency.seconds, report_s=cfg.node_status_report_frequency.seconds,
            lease_s=cfg.node_lease_duration_seconds,
        )
        await self.controller.start()

    async def stop(self) -> None:
        if self.controller is not None:
            await self.controller.stop()
        await self.api.close()

    def _not_ready(self) -> list[str]:
        reason = self._pods.pleg.unhealthy()
        return [reason] if reason else []

    async def _images(self) -> list[dict[str, Any]]:
        return []  # the process runtime has no images; a CRI runtime's come with its image listing
