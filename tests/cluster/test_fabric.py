"""The cluster tests' fabric on its own (no control plane): node namespaces reach each other and
the host end on the bridge, a pod CIDR routed to its node is reached from the host and the other
nodes (a node added later too), and nothing of it is left after `remove`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.cluster.fabric import Fabric, NodeNet

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

PORT = 7777
SERVE = ("import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
         "s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(); print('up', flush=True); "
         "c, peer = s.accept(); c.sendall(peer[0].encode())")
DIAL = ("import socket, sys; c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); "
        "print(c.recv(64).decode())")


@pytest.fixture
def fabric() -> Iterator[Fabric]:
    """A fabric of this test's own (the session's is shared by the cluster tests)."""
    made = Fabric.create()
    try:
        yield made
    finally:
        made.remove()


def _connect(server: NodeNet | None, address: str, client: NodeNet | None) -> str:
    """Listen on `address` in `server`'s namespace (None: the host's), dial it from `client`'s;
    the source address the server saw."""
    prefix = server.run_in() if server is not None else []
    with subprocess.Popen([*prefix, sys.executable, "-c", SERVE, address, str(PORT)], stdout=subprocess.PIPE,
                          text=True) as srv:
        try:
            assert srv.stdout is not None and srv.stdout.readline().strip() == "up"
            dial = subprocess.run([*(client.run_in() if client is not None else []), sys.executable, "-c", DIAL,
                                   address, str(PORT)], capture_output=True, text=True, timeout=10, check=True)
            return dial.stdout.strip()
        finally:
            srv.kill()


def test_nodes_and_routed_pod_addresses_reach_each_other(fabric: Fabric) -> None:
    a, b = fabric.add_node(), fabric.add_node()
    assert fabric.host.startswith("10.250.") and fabric.host.endswith(".1")
    assert [a.address, b.address] == [fabric.host.rsplit(".", 1)[0] + f".{i}" for i in (10, 11)]
    assert a.inode() != b.inode()
    assert _connect(a, a.address, None) == fabric.host  # host -> node
    assert _connect(None, fabric.host, a) == a.address  # node -> host (the API server's side)
    assert _connect(b, b.address, a) == a.address  # node -> node over the bridge

    # A "pod" address on node a, inside its podCIDR: routed from the host and from node b, and
    # from a node added after the route.
    cidr = fabric.cluster_cidr.replace(".0.0/16", ".7.0/24")
    pod = cidr.replace(".0/24", ".2")
    subprocess.run(["ip", "-n", a.name, "addr", "add", f"{pod}/32", "dev", "lo"], check=True, timeout=30)
    fabric.route(cidr, a.address)
    c = fabric.add_node()
    assert _connect(a, pod, None) == fabric.host
    assert _connect(a, pod, b) == b.address
    assert _connect(a, pod, c) == c.address

    fabric.remove_node(a)  # its routes go with it, here and in the other nodes
    assert a.name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert cidr not in subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=True).stdout
    assert cidr not in subprocess.run(["ip", "-n", b.name, "-4", "route"], capture_output=True, text=True,
                                      check=True).stdout
    fabric.remove()
    assert not fabric.exists()
