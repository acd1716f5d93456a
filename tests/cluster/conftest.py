"""The session's control plane (one per test session: starting it takes seconds, and each test
uses its own node name and namespace)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.node import Node
from tests.cluster.nodes import Nodes
from tests.cri.fixtures import CRIEnv

GRACE = "16s"  # node-monitor-grace-period: a stopped node turns NotReady within seconds, not 50 s


@pytest.fixture(scope="session")
def fabric() -> Iterator[Fabric]:
    """The session's network (tests.cluster.fabric): the API server and the single node on its host
    address (the API server proxies only to global-unicast node addresses), other nodes in
    namespaces of their own."""
    net = Fabric.create()
    try:
        yield net
    finally:
        net.remove()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory, fabric: Fabric) -> Iterator[ControlPlane]:
    plane = ControlPlane(tmp_path_factory.mktemp("cluster"), node_ip=fabric.host, api_address=fabric.host,
                         cluster_cidr=fabric.cluster_cidr)
    plane.start(node_monitor_grace_period=GRACE)
    try:
        yield plane
    finally:
        plane.stop()


RUNTIMES = ("process", "containerd")
# For tests of the node itself (registration retries, lease, NotReady, node events, the API server's
# outage): that logic lives above the runtime (kubeletapi/node, the API pod source and status
# manager), so one runtime shows it; the pods' own behaviour is tested on both. The suite's time
# limit is why: each of these costs 12-90 s per runtime.
NODE_LEVEL = pytest.mark.parametrize("node", ["process"], indirect=True)
# How the cluster tests' manifests name their image; on containerd it is the locally built busybox.
IMAGE = "busybox:1.36"


@pytest.fixture(scope="module")
def cluster_cri(cri_env: CRIEnv) -> Iterator[CRIEnv]:
    """The session's private containerd, with busybox also under the name the manifests use while
    a module of cluster tests runs: the name goes afterwards, since containerd reports an image by
    its first name and the CRI tests that come later expect busybox's own."""
    name = f"docker.io/library/{IMAGE}"
    cri_env.containerd.tag(cri_env.busybox, name)
    try:
        yield cri_env
    finally:
        cri_env.containerd.remove_image(name)


@pytest.fixture(params=RUNTIMES)
def node(control_plane: ControlPlane, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Node]:
    """A node of the session's plane (not started), once per runtime: every cluster test runs on
    the process runtime and on containerd. Extra agent flags by `@pytest.mark.node_args(...)`."""
    runtime = request.param
    endpoint = request.getfixturevalue("cluster_cri").endpoint if runtime == "containerd" else ""
    marker = request.node.get_closest_marker("node_args")
    n = Node(control_plane, tmp_path, *(marker.args if marker is not None else ()), runtime=runtime,
             cri_endpoint=endpoint)
    try:
        yield n
    finally:
        n.remove()


@pytest.fixture
def namespace(control_plane: ControlPlane) -> Iterator[str]:
    """A namespace of this test's own, ready for pods (default ServiceAccount, root CA);
    deleted afterwards (the namespace controller removes what is left in it)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", name)
    try:
        control_plane.wait_namespace_ready(name)
        yield name
    finally:
        control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def nodes(control_plane: ControlPlane, fabric: Fabric, tmp_path: Path) -> Iterator[Nodes]:
    """Nodes of the session's plane, each in its own namespace (`nodes.add()`, not started); all
    removed afterwards, their namespaces with them."""
    made = Nodes(control_plane, fabric, tmp_path)
    try:
        yield made
    finally:
        made.remove()
