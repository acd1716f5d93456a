"""Wiring of the pod network from a pod CIDR (--pod-cidr / podCIDR, or the Node's spec.podCIDR).

The process runtime gets SandboxNetworks (its own namespaces, the CNI plugins called directly);
a CRI runtime gets the conflist in its CNI conf dir and the CIDR by UpdateRuntimeConfig. Without
a pod CIDR nothing here runs and every pod stays on the node's network.
"""

from __future__ import annotations

import logging
from pathlib import Path

from kubeletapi.config import NodeOptions
from kubeletapi.errors import ConfigError, InvalidInput, NetworkError, StartupError
from kubeletapi.network.conflist import PodNetworkConfig, write_conflist
from kubeletapi.network.pod import PodNetwork
from kubeletapi.runtime.process.podnet import SandboxNetworks

log = logging.getLogger(__name__)


def network_config(pod_cidr: str, opts: NodeOptions) -> PodNetworkConfig:
    """The conflist's inputs: the CIDR, the bridge, and host-local's data dir under the root dir."""
    try:
        return PodNetworkConfig(pod_cidr, opts.effective_pod_bridge, opts.root_dir / "network" / "ipam")
    except InvalidInput as exc:
        raise ConfigError(f"--pod-cidr / podCIDR: {exc}") from None


def process_networks(pod_cidr: str, opts: NodeOptions, shim: Path) -> SandboxNetworks:
    """The process runtime's pod networks; a missing plugin stops the start-up with its name."""
    cfg = network_config(pod_cidr, opts)
    plugins = PodNetwork(cfg, opts.cni_bin_dirs)
    try:
        plugins.check_plugins()
    except NetworkError as exc:
        raise StartupError(f"pod network {pod_cidr}: {exc} (--cni-bin-dir)") from None
    log.info("pod network %s on bridge %s (CNI plugins in %s)", pod_cidr, cfg.bridge,
             ",".join(map(str, opts.cni_bin_dirs)))
    return SandboxNetworks(plugins, opts.root_dir / "network" / "netns", shim)


def cri_conflist(pod_cidr: str, opts: NodeOptions) -> Path:
    """Write the conflist a CRI runtime's CNI reads (--cni-conf-dir); returns its path."""
    cfg = network_config(pod_cidr, opts)
    try:
        path = write_conflist(opts.cni_conf_dir, cfg)
    except OSError as exc:
        raise StartupError(f"writing the CNI conflist into {opts.cni_conf_dir}: {exc}") from None
    log.info("pod network %s on bridge %s: CNI conflist %s", pod_cidr, cfg.bridge, path)
    return path
