"""Several kubeletapi nodes of one control plane on one machine: each agent in a network
namespace of its own on the session's fabric, with its own name, root dir, cgroup root, ports,
certificates and address."""

from __future__ import annotations

import contextlib
from pathlib import Path

from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.node import Node


class Nodes:
    """A factory of nodes (not started) under `tmp`; `remove` stops them by PID, purges what their
    runtimes left, deletes their Node objects and namespaces."""

    def __init__(self, plane: ControlPlane, fabric: Fabric, tmp: Path) -> None:
        self.plane = plane
        self.fabric = fabric
        self.tmp = tmp
        self.started: list[Node] = []

    def add(self, *extra: str, runtime: str = "process", cri_endpoint: str = "") -> Node:
        net = self.fabric.add_node()
        try:
            tmp = self.tmp / net.name.rsplit("-", 1)[-1]  # n<i>: the agent's state, certs, log
            tmp.mkdir()
            node = Node(self.plane, tmp, *extra, runtime=runtime, cri_endpoint=cri_endpoint, net=net)
        except BaseException:
            self.fabric.remove_node(net)
            raise
        self.started.append(node)
        return node

    def add_many(self, count: int, *extra: str) -> list[Node]:
        return [self.add(*extra) for _ in range(count)]

    def remove(self) -> None:
        """Every node goes, even when removing one fails (the first failure is raised after)."""
        errors: list[BaseException] = []
        for node in reversed(self.started):
            try:
                node.remove()
            except Exception as exc:  # the others must go too
                errors.append(exc)
            finally:
                if node.net is not None:
                    with contextlib.suppress(ValueError):
                        self.fabric.remove_node(node.net)
        self.started.clear()
        if errors:
            raise errors[0]
