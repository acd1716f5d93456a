"""A generated node PKI for the tests of kubeletapi.pki and kubeletapi.pkifiles (the `pki`
fixture in tests/unit/conftest.py, and any second PKI a test needs)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from kubeletapi.nodeinfo import IPAddress
from kubeletapi.pki import ensure_pki
from kubeletapi.pkifiles import NodePKI

NOW = dt.datetime.now(dt.UTC)
NODE_IPS: list[IPAddress] = [ipaddress.ip_address("10.0.0.5")]  # the `pki` fixture's, unless a module overrides them


def generated_pki(cert_dir: Path, node_ips: Sequence[IPAddress]) -> NodePKI:
    """The CA, serving and admin certificates and the token file of node-a, generated at NOW."""
    pki = NodePKI.under(cert_dir)
    ensure_pki(pki, "node-a", node_ips, NOW)
    return pki
