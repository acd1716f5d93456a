"""The session's control plane (one per test session: starting it takes seconds, and each test
uses its own node name and namespace)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.controlplane import ControlPlane

GRACE = "16s"  # node-monitor-grace-period: a stopped node turns NotReady within seconds, not 50 s


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    plane = ControlPlane(tmp_path_factory.mktemp("cluster"))
    plane.start(node_monitor_grace_period=GRACE)
    try:
        yield plane
    finally:
        plane.stop()
