"""What the cluster benchmarks share: a real control plane and one kubeletapi node on the test
network (tests/cluster), or a plane on a fabric for many nodes in namespaces of their own, torn
down whatever happens (namespace `bench`, the nodes and their leftovers, the control plane's
processes, the network namespaces); and the requests a node sent, from the API server's audit log."""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.node import Node
from tests.cluster.nodes import Nodes
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


@contextlib.contextmanager
def fleet(base: Path, audit_nodes: bool = False, bootstrap_tokens: bool = False,
          ) -> Iterator[tuple[ControlPlane, Fabric, Nodes]]:
    """A control plane serving on a fabric (tests.cluster.fabric) and a factory of nodes, each in
    a namespace of its own; the nodes are the caller's to add and start."""
    fabric = Fabric.create()
    plane = ControlPlane(base / "plane", node_ip=fabric.host, api_address=fabric.host,
                         cluster_cidr=fabric.cluster_cidr, audit_nodes=audit_nodes,
                         bootstrap_tokens=bootstrap_tokens)
    (base / "nodes").mkdir()
    nodes = Nodes(plane, fabric, base / "nodes")
    try:
        plane.start()
        yield plane, fabric, nodes
    finally:
        plane.kubectl("delete", "namespace", "bench", "--wait=false", check=False)
        nodes.remove()
        plane.stop()
        fabric.remove()


def audit_counts(plane: ControlPlane, node: str, since: dt.datetime, until: dt.datetime) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for line in plane.audit_log.read_text().splitlines():
        event = json.loads(line)
        if event.get("user", {}).get("username") != f"system:node:{node}":
            continue
        at = dt.datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00"))
        if not since <= at < until:
            continue
        ref = event.get("objectRef") or {}
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        counts[f"{event['verb']} {resource}"] += 1
    return counts
