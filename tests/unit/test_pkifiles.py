"""pkifiles.current: the ssl-only check that a generated PKI needs nothing, never looser than
ensure_pki (whenever it says "current", ensure_pki would have generated nothing)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509

from kubeletapi.nodeinfo import IPAddress
from kubeletapi.pki import ensure_pki
from kubeletapi.pkifiles import NodePKI, current, serving_not_after
from tests.unit.pkitools import NOW, generated_pki

NODE_IPS: list[IPAddress] = [ipaddress.ip_address("10.0.0.5"), ipaddress.ip_address("fd00::5")]


@pytest.fixture
def pki_node_ips() -> list[IPAddress]:
    """The `pki` fixture (tests/unit/conftest.py) here covers an IPv6 address too."""
    return NODE_IPS


def other_pki(tmp_path: Path) -> NodePKI:
    return generated_pki(tmp_path / "other", NODE_IPS)


def test_fresh_files_are_current_and_so_ensure_pki_agrees(pki: NodePKI, caplog: pytest.LogCaptureFixture) -> None:
    assert current(pki, "node-a", NODE_IPS, NOW)
    assert current(pki, "node-a", NODE_IPS, NOW + dt.timedelta(days=30))
    assert current(pki, "node-a", NODE_IPS[:1], NOW)  # fewer node IPs: the SANs still cover them
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, "node-a", NODE_IPS, NOW + dt.timedelta(days=30))
    assert "Generating" not in caplog.text


def _swap_serving_for_another_cas(pki: NodePKI, tmp: Path) -> None:
    other = other_pki(tmp)
    shutil.copy(other.serving_crt, pki.serving_crt)
    shutil.copy(other.serving_key, pki.serving_key)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param(lambda p, t: p.tokens.unlink(), "Generating admin token file", id="no-token-file"),
        pytest.param(lambda p, t: p.serving_key.write_text("garbage"), "cannot read kubelet.crt/kubelet.key",
                     id="unreadable-key"),
        pytest.param(lambda p, t: p.admin_crt.unlink(), "admin.crt does not exist", id="missing-admin"),
        pytest.param(lambda p, t: shutil.copy(other_pki(t).admin_key, p.admin_key), "does not match",
                     id="key-of-another-pair"),
        pytest.param(_swap_serving_for_another_cas, "not signed by the current CA", id="another-ca"),
        pytest.param(lambda p, t: shutil.copy(other_pki(t).ca_key, p.ca_key), "does not match",
                     id="ca-key-of-another-ca"),
    ],
)
def test_any_problem_is_not_current_and_ensure_pki_names_it(
    pki: NodePKI, tmp_path: Path, caplog: pytest.LogCaptureFixture, change: Callable[[NodePKI, Path], object],
    reason: str,
) -> None:
    change(pki, tmp_path)
    assert not current(pki, "node-a", NODE_IPS, NOW)
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, "node-a", NODE_IPS, NOW)
    assert reason in caplog.text
    assert current(pki, "node-a", NODE_IPS, NOW)  # repaired


@pytest.mark.parametrize(
    ("hostname", "node_ips", "days"),
    [
        pytest.param("node-b", NODE_IPS, 0, id="new-hostname"),
        pytest.param("node-a", [ipaddress.ip_address("10.0.0.9")], 0, id="new-node-ip"),
        pytest.param("node-a", NODE_IPS, 360, id="leaves-expire-soon"),
        pytest.param("node-a", NODE_IPS, 3700, id="ca-expired"),
        pytest.param("node-a", NODE_IPS, -1, id="not-yet-valid"),
    ],
)
def test_names_and_times_ensure_pki_would_regenerate_for_are_not_current(
    pki: NodePKI, hostname: str, node_ips: list[ipaddress.IPv4Address], days: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = NOW + dt.timedelta(days=days)
    assert not current(pki, hostname, node_ips, now)
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, hostname, node_ips, now)
    assert "Generating" in caplog.text


def test_without_the_token_file_the_token_is_not_needed(pki: NodePKI) -> None:
    pki.tokens.unlink()
    assert current(pki, "node-a", NODE_IPS, NOW, write_token=False)


def test_serving_not_after_is_the_certificates(pki: NodePKI) -> None:
    want = x509.load_pem_x509_certificate(pki.serving_crt.read_bytes()).not_valid_after_utc.timestamp()
    assert serving_not_after(pki.serving_crt, pki.serving_key) == want  # OpenSSL's reading
    assert serving_not_after(pki.serving_crt, pki.admin_key) == want  # not its key: cryptography's
    assert serving_not_after(pki.cert_dir / "absent.crt", pki.serving_key) is None
    pki.admin_key.write_text("garbage")
    assert serving_not_after(pki.admin_key, pki.serving_key) is None  # no certificate at all
