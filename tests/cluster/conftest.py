"""The session's control plane (one per test session: starting it takes seconds, and each test
uses its own node name and namespace)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.netns import TestNetwork

GRACE = "16s"  # node-monitor-grace-period: a stopped node turns NotReady within seconds, not 50 s


@pytest.fixture(scope="session")
def cluster_network() -> Iterator[TestNetwork]:
    """The nodes' address: the API server proxies only to global-unicast node addresses."""
    net = TestNetwork.create(subnet=1)
    try:
        yield net
    finally:
        net.remove()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory, cluster_network: TestNetwork) -> Iterator[ControlPlane]:
    plane = ControlPlane(tmp_path_factory.mktemp("cluster"), node_ip=cluster_network.host)
    plane.start(node_monitor_grace_period=GRACE)
    try:
        yield plane
    finally:
        plane.stop()
