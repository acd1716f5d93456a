"""Fixtures the unit tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeletapi.nodeinfo import IPAddress
from kubeletapi.pkifiles import NodePKI
from tests.unit.pkitools import NODE_IPS, generated_pki


@pytest.fixture
def pki_node_ips() -> list[IPAddress]:
    """The node IPs the `pki` fixture's serving certificate is made for (a module may override it)."""
    return NODE_IPS


@pytest.fixture
def pki(tmp_path: Path, pki_node_ips: list[IPAddress]) -> NodePKI:
    """node-a's PKI, generated at pkitools.NOW in tmp_path/certs."""
    return generated_pki(tmp_path / "certs", pki_node_ips)
