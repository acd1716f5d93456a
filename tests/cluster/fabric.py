"""The cluster tests' network: several nodes on one machine, each in a network namespace of its
own, all on one test-owned /24.

    host namespace  kla<tag> 10.250.S.1/24 ──┐
                                             │   hub namespace kla-test-<tag>: bridge br0
    kla-test-<tag>-n<i>  eth0 10.250.S.(10+i)/24 ──┘

The host end carries the session's API server and the single-node tests' agent (the API server
refuses to proxy to loopback node addresses, so nodes need a global-unicast one). `route` adds a
pod CIDR's route towards its node in the host namespace and in every other node's, so pods of
different nodes and the API server reach each other. Nothing leaves the machine: no namespace has
a default route, and `remove` deletes the namespaces (their links and routes go with them).
"""

from __future__ import annotations

import ipaddress
import os
import random
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tests.netns import _free_subnet, _ip

BRIDGE = "br0"
FIRST_NODE = 10  # node i is 10.250.S.(10 + i)
CLUSTER_CIDR_OCTETS = range(200, 250)  # a session's pod range: 10.<n>.0.0/16, one free n


@dataclass(frozen=True)
class NodeNet:
    """One node's namespace: `address` on its `eth0`, the only interface besides lo."""

    name: str
    address: str

    def run_in(self) -> list[str]:
        """A command prefix that runs a program in the namespace (network only: the mount
        namespace, and with it the cgroup file system and every path, stays the host's)."""
        return ["nsenter", f"--net=/run/netns/{self.name}", "--"]

    def inode(self) -> int:
        """The namespace's identity: /proc/<pid>/ns/net of a process inside has this inode."""
        return os.stat(f"/run/netns/{self.name}").st_ino


def _free_cluster_octet() -> int:
    """n for a pod range 10.n.0.0/16 no address or route of this machine's namespace touches
    (several sessions may run at once; each adds its pod routes here)."""
    used = subprocess.run(["ip", "-4", "-o", "route", "show", "table", "all"], capture_output=True, text=True,
                          check=True, timeout=30).stdout
    used += subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=True, timeout=30).stdout
    free = [n for n in CLUSTER_CIDR_OCTETS if f"10.{n}." not in used]
    if not free:
        raise RuntimeError("no free 10.n.0.0/16 for a test cluster's pods")
    return random.choice(free)


@dataclass
class Fabric:
    """`host`: the host namespace's address; `nodes`: the node namespaces added so far;
    `cluster_cidr`: the pod range the session's controller-manager allocates node podCIDRs from."""

    tag: str
    subnet: int
    cluster_cidr: str
    nodes: list[NodeNet] = field(default_factory=list)
    _routes: list[tuple[str, str]] = field(default_factory=list)
    _added: int = 0  # nodes ever added: an address is not reused within a session

    @property
    def hub(self) -> str:
        return f"kla-test-{self.tag}"

    @property
    def host(self) -> str:
        return f"10.250.{self.subnet}.1"

    @property
    def host_if(self) -> str:
        return f"kla{self.tag}"

    @classmethod
    def create(cls) -> Fabric:
        fabric = cls(tag=uuid.uuid4().hex[:6], subnet=_free_subnet(),
                     cluster_cidr=f"10.{_free_cluster_octet()}.0.0/16")
        try:
            fabric._build_hub()
        except BaseException:
            fabric.remove()
            raise
        return fabric

    def _build_hub(self) -> None:
        _ip("netns", "add", self.hub)
        _ip("-n", self.hub, "link", "add", BRIDGE, "type", "bridge")
        _ip("-n", self.hub, "link", "set", BRIDGE, "up")
        _ip("-n", self.hub, "link", "set", "lo", "up")
        _ip("link", "add", self.host_if, "type", "veth", "peer", "name", "host", "netns", self.hub)
        _ip("-n", self.hub, "link", "set", "host", "master", BRIDGE, "up")
        _ip("addr", "add", f"{self.host}/24", "dev", self.host_if)
        _ip("link", "set", self.host_if, "up")

    def add_node(self) -> NodeNet:
        """A new node namespace on the bridge, forwarding (its pods' traffic passes through it)."""
        i = self._added
        if FIRST_NODE + i > 254:
            raise RuntimeError(f"the fabric's /24 has no address left for node {i}")
        self._added += 1
        node = NodeNet(name=f"{self.hub}-n{i}", address=f"10.250.{self.subnet}.{FIRST_NODE + i}")
        _ip("netns", "add", node.name)
        self.nodes.append(node)
        _ip("-n", self.hub, "link", "add", f"n{i}", "type", "veth", "peer", "name", "eth0", "netns", node.name)
        _ip("-n", self.hub, "link", "set", f"n{i}", "master", BRIDGE, "up")
        _ip("-n", node.name, "addr", "add", f"{node.address}/24", "dev", "eth0")
        _ip("-n", node.name, "link", "set", "eth0", "up")
        _ip("-n", node.name, "link", "set", "lo", "up")
        subprocess.run(["ip", "netns", "exec", node.name, "sysctl", "-qw", "net.ipv4.ip_forward=1"],
                       check=True, capture_output=True, timeout=30)
        for cidr, via in self._routes:  # the pod ranges of the nodes before it
            _ip("-n", node.name, "route", "add", cidr, "via", via, "dev", "eth0")
        return node

    def route(self, cidr: str, via: str) -> None:
        """`cidr` (a node's podCIDR) reached through `via` (that node's address): from the host
        namespace and from every other node's."""
        ipaddress.ip_network(cidr)  # a malformed CIDR is the caller's error, not ip's
        _ip("route", "add", cidr, "via", via, "dev", self.host_if)
        self._routes.append((cidr, via))
        for node in self.nodes:
            if node.address != via:
                _ip("-n", node.name, "route", "add", cidr, "via", via, "dev", "eth0")

    def remove_node(self, node: NodeNet) -> None:
        """The node's namespace goes (its bridge port with it), and the routes through it."""
        for cidr, via in [r for r in self._routes if r[1] == node.address]:
            self._routes.remove((cidr, via))
            subprocess.run(["ip", "route", "del", cidr, "via", via], capture_output=True, check=False, timeout=30)
            for other in self.nodes:
                subprocess.run(["ip", "-n", other.name, "route", "del", cidr, "via", via], capture_output=True,
                               check=False, timeout=30)
        subprocess.run(["ip", "netns", "del", node.name], capture_output=True, check=False, timeout=30)
        self.nodes.remove(node)

    def remove(self) -> None:
        """Every namespace goes, and its links and routes with it; the host's routes through the
        host end go when that end does."""
        for cidr, via in self._routes:
            subprocess.run(["ip", "route", "del", cidr, "via", via], capture_output=True, check=False, timeout=30)
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True, check=False, timeout=30)
        for name in [n.name for n in self.nodes] + [self.hub]:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False, timeout=30)
        self.nodes.clear()
        self._routes.clear()

    def exists(self) -> bool:
        """Whether anything of it is left (for tests of the clean-up)."""
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True, timeout=30).stdout
        return Path(f"/sys/class/net/{self.host_if}").exists() or self.hub in names
