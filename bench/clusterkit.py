"""What the cluster benchmarks share: a real control plane and one kubeletapi node on the test
network (tests/cluster), torn down whatever happens (namespace `bench`, the node and its leftovers,
the control plane's processes, the network namespace)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node
from tests.netns import TestNetwork


@contextlib.contextmanager
def cluster_node(base: Path, audit_nodes: bool = False) -> Iterator[tuple[ControlPlane, Node]]:
    net = TestNetwork.create()
    plane = ControlPlane(base / "plane", node_ip=net.host, audit_nodes=audit_nodes)
    node: Node | None = None
    try:
        plane.start()
        (base / "node").mkdir()
        node = Node(plane, base / "node")
        node.start()
        yield plane, node
    finally:
        if node is not None:
            plane.kubectl("delete", "namespace", "bench", "--wait=false", check=False)
            node.remove()
        plane.stop()
        net.remove()
