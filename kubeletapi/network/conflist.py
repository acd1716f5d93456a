"""The CNI network configuration list of a node's pod network, made from its pod CIDR.

One bridge on the node (the pods' default gateway: isGateway gives it the CIDR's first address),
host-local IPAM over the pod CIDR with its own data directory, no masquerading (pod traffic keeps
its source address; routes between nodes carry it). Loopback is not in the list: a CRI runtime
brings up `lo` itself, and the process runtime calls the loopback plugin on its own (cni.py).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeletapi.atomicfile import write_atomic
from kubeletapi.errors import InvalidInput

CNI_VERSION = "1.0.0"
NETWORK_NAME = "kubeletapi"
CONFLIST_NAME = "10-kubeletapi.conflist"
MAX_IFNAME = 15  # IFNAMSIZ - 1


@dataclass(frozen=True)
class PodNetworkConfig:
    """What the conflist is made of: the node's pod CIDR, its bridge, and the IPAM's data dir."""

    pod_cidr: str
    bridge: str
    ipam_dir: Path
    name: str = NETWORK_NAME

    def __post_init__(self) -> None:
        try:
            net = ipaddress.ip_network(self.pod_cidr, strict=True)
        except ValueError as exc:
            raise InvalidInput(f"pod CIDR {self.pod_cidr!r}: {exc}") from None
        if net.num_addresses < 4:
            raise InvalidInput(f"pod CIDR {self.pod_cidr!r} is too small for a gateway and a pod")
        if not self.bridge or len(self.bridge) > MAX_IFNAME or "/" in self.bridge or " " in self.bridge:
            raise InvalidInput(f"bridge name {self.bridge!r}: want 1-{MAX_IFNAME} characters, no '/' or spaces")


def conflist(cfg: PodNetworkConfig) -> dict[str, Any]:
    """The conflist as a JSON object (CNI spec 1.0.0)."""
    default_route = "::/0" if ipaddress.ip_network(cfg.pod_cidr).version == 6 else "0.0.0.0/0"
    bridge = {
        "type": "bridge",
        "bridge": cfg.bridge,
        "isGateway": True,
        "ipMasq": False,
        "hairpinMode": True,
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": cfg.pod_cidr}]],
            "routes": [{"dst": default_route}],
            "dataDir": str(cfg.ipam_dir),
        },
    }
    return {"cniVersion": CNI_VERSION, "name": cfg.name, "plugins": [bridge]}


def write_conflist(directory: Path, cfg: PodNetworkConfig) -> Path:
    """Write the conflist into a CNI conf dir (atomically: a runtime watching the directory never
    reads half a file); returns its path. An unchanged file is left alone."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONFLIST_NAME
    text = json.dumps(conflist(cfg), indent=2, sort_keys=True) + "\n"
    try:
        if path.read_text() == text:
            return path
    except FileNotFoundError:
        pass
    write_atomic(path, text.encode(), sync=False)
    return path
