"""Pod networking across nodes: two nodes in namespaces of their own (tests.cluster.fabric) with
--network-plugin=cni take the podCIDR the controller-manager allocates to their Node; the fabric
routes each podCIDR to its node. A pod gets an address in its node's podCIDR, a pod on the other
node reaches it by that address, and a pod reaches the API server. hostNetwork pods keep their
node's address. Everything lives in the fabric's namespaces (each node's bridge in its own)."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.node import Node
from tests.cluster.nodes import Nodes
from tests.cri import containerd, images
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

NETWORK = ("--network-plugin", "cni", "--cni-bin-dir", "/usr/lib/cni")
SERVER = ("import socket\n"
          "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "s.bind(('0.0.0.0', 8080)); s.listen()\n"
          "while True:\n"
          "    c, a = s.accept(); c.sendall(('hello ' + a[0]).encode()); c.close()\n")


def _pod(namespace: str, name: str, node: Node, command: list[str], **spec: Any) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node.name, "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                 "containers": [{"name": "c", "image": "busybox:1.36", "command": command}], **spec},
    })


def _get(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    return plane.get_json(f"/api/v1/namespaces/{namespace}/pods/{name}")


def _phase(plane: ControlPlane, namespace: str, name: str, phase: str) -> dict[str, Any] | None:
    pod = _get(plane, namespace, name)
    return pod if (pod.get("status") or {}).get("phase") == phase else None


def _pod_cidr(node: Node) -> str | None:
    return ((node.get() or {}).get("spec") or {}).get("podCIDR")


def test_pods_on_different_nodes_reach_each_other_and_the_api_server(
        control_plane: ControlPlane, fabric: Fabric, nodes: Nodes, namespace: str) -> None:
    a, b = nodes.add(*NETWORK), nodes.add(*NETWORK)
    for node in (a, b):
        node.start()
    cidrs = {}
    for node in (a, b):
        cidrs[node.name] = wait_for(lambda n=node: _pod_cidr(n), timeout=60, what=f"{node.name}'s podCIDR")
        assert ipaddress.ip_network(cidrs[node.name]).subnet_of(ipaddress.ip_network(fabric.cluster_cidr))
        fabric.route(cidrs[node.name], node.address)
    wait_for(lambda: a.ready() and b.ready(), timeout=60, what="nodes Ready")
    plane = control_plane

    plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "server", a, ["python3", "-c", SERVER]))
    plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "host", a, ["sleep", "3600"], hostNetwork=True))
    server = wait_for(lambda: _phase(plane, namespace, "server", "Running"), timeout=90, what="server Running")
    ip = server["status"]["podIP"]
    assert ipaddress.ip_address(ip) in ipaddress.ip_network(cidrs[a.name]), (ip, cidrs)
    assert server["status"]["podIPs"] == [{"ip": ip}] and server["status"]["hostIP"] == a.address
    host = wait_for(lambda: _phase(plane, namespace, "host", "Running"), timeout=90, what="host pod Running")
    assert host["status"]["podIP"] == a.address

    dial = f"import socket; print(socket.create_connection(('{ip}', 8080), 5).recv(99).decode())"
    plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "client", b, ["python3", "-c", dial],
                                                  restartPolicy="Never"))
    api = (f"import ssl, urllib.request; ctx = ssl._create_unverified_context(); "
           f"print(urllib.request.urlopen('https://{fabric.host}:{plane.api_port}/healthz', context=ctx, "
           f"timeout=5).read().decode())")
    plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "api", b, ["python3", "-c", api],
                                                  restartPolicy="Never"))
    client = wait_for(lambda: _phase(plane, namespace, "client", "Succeeded"), timeout=90, what="client done")
    client_ip = client["status"]["podIP"]
    assert ipaddress.ip_address(client_ip) in ipaddress.ip_network(cidrs[b.name])
    logs = plane.kubectl("logs", "-n", namespace, "client").stdout
    assert logs.strip() == f"hello {client_ip}"  # no masquerading: the server saw the pod's own address
    wait_for(lambda: _phase(plane, namespace, "api", "Succeeded"), timeout=90, what="api pod done")
    assert plane.kubectl("logs", "-n", namespace, "api").stdout.strip() == "ok"


@pytest.mark.cri
def test_containerd_pods_on_different_nodes_reach_each_other(
        control_plane: ControlPlane, fabric: Fabric, nodes: Nodes, namespace: str) -> None:
    """The same on containerd: each node's own containerd runs in the node's namespace (its CNI
    makes the bridge there) and reads the conflist kubeletapi writes into its conf dir."""
    missing = containerd.missing_tools() + images.missing_tools()
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    tars = images.build_all()
    daemons: list[containerd.PrivateContainerd] = []
    try:
        pair = []
        for _ in range(2):
            daemon = containerd.PrivateContainerd()
            daemons.append(daemon)
            node = nodes.add(*NETWORK, "--cni-conf-dir", str(daemon.work / "cni"), runtime="containerd",
                             cri_endpoint=daemon.endpoint)
            assert node.net is not None
            daemon.wrapper = node.net.run_in()
            daemon.start()
            daemon.import_images(tars)
            daemon.tag("localhost/busybox:latest", "docker.io/library/busybox:1.36")
            node.start()
            pair.append(node)
        a, b = pair
        cidrs = {}
        for node in pair:
            cidrs[node.name] = wait_for(lambda n=node: _pod_cidr(n), timeout=60, what=f"{node.name}'s podCIDR")
            fabric.route(cidrs[node.name], node.address)
        wait_for(lambda: a.ready() and b.ready(), timeout=60, what="nodes Ready")
        plane = control_plane
        www = "echo hello > /tmp/index.html; exec httpd -f -p 8080 -h /tmp"
        plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "server", a, ["sh", "-c", www]))
        server = wait_for(lambda: _phase(plane, namespace, "server", "Running"), timeout=90, what="server Running")
        ip = server["status"]["podIP"]
        assert ipaddress.ip_address(ip) in ipaddress.ip_network(cidrs[a.name]), (ip, cidrs)
        fetch = ["wget", "-qO-", f"http://{ip}:8080/index.html"]
        plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "client", b, fetch, restartPolicy="Never"))
        # a TCP connection to the API server (busybox's wget speaks no TLS here)
        dial = ["nc", "-w", "5", fabric.host, str(plane.api_port)]
        plane.kubectl("apply", "-f", "-", input_=_pod(namespace, "api", b, dial, restartPolicy="Never"))
        client = wait_for(lambda: _phase(plane, namespace, "client", "Succeeded"), timeout=90, what="client done")
        assert ipaddress.ip_address(client["status"]["podIP"]) in ipaddress.ip_network(cidrs[b.name])
        assert plane.kubectl("logs", "-n", namespace, "client").stdout.strip() == "hello"
        wait_for(lambda: _phase(plane, namespace, "api", "Succeeded"), timeout=90, what="api pod connected")
    finally:
        nodes.remove()  # their containers first, then the daemons that run them
        for daemon in daemons:
            daemon.stop()
