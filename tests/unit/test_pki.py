"""The node PKI: generation, reuse across restarts, and regeneration with a reason."""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubeletapi.pki import NodePKI, ensure_pki, read_admin_token
from tests.unit.pkitools import NODE_IPS, NOW


def cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificates(path.read_bytes())[0]


def snapshot(pki: NodePKI) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in pki.cert_dir.iterdir()}


def test_generated_files(pki: NodePKI) -> None:
    ca, serving, admin = cert(pki.ca_crt), cert(pki.serving_crt), cert(pki.admin_crt)
    serving.verify_directly_issued_by(ca)
    admin.verify_directly_issued_by(ca)
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["node-a", "localhost"]
    assert {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1", "10.0.0.5"}
    eku = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku
    assert admin.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kubeletapi-admin"
    assert admin.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"
    # kubelet.crt carries the CA after the leaf, as the kubelet's self-signed file does.
    assert len(x509.load_pem_x509_certificates(pki.serving_crt.read_bytes())) == 2
    assert len(read_admin_token(pki.tokens)) >= 32
    for secret in (pki.ca_key, pki.serving_key, pki.admin_key, pki.tokens):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_reused_on_restart(pki: NodePKI, caplog: pytest.LogCaptureFixture) -> None:
    before = snapshot(pki)
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, "node-a", NODE_IPS, NOW + dt.timedelta(days=30))
    assert snapshot(pki) == before
    assert "Generating" not in caplog.text


def test_expiring_leaves_are_regenerated(pki: NodePKI, caplog: pytest.LogCaptureFixture) -> None:
    ca_before = pki.ca_crt.read_bytes()
    later = NOW + dt.timedelta(days=364)
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, "node-a", NODE_IPS, later)
    assert pki.ca_crt.read_bytes() == ca_before
    assert cert(pki.serving_crt).not_valid_after_utc > later + dt.timedelta(days=300)
    assert "Generating serving certificate" in caplog.text and "expires soon" in caplog.text


def test_expired_ca_regenerates_everything(pki: NodePKI, caplog: pytest.LogCaptureFixture) -> None:
    before = snapshot(pki)
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, "node-a", NODE_IPS, NOW + dt.timedelta(days=3700))
    after = snapshot(pki)
    for name in ("ca.crt", "kubelet.crt", "admin.crt"):
        assert after[name] != before[name]
    assert after["tokens.csv"] == before["tokens.csv"]
    assert "CA expired" in caplog.text
    assert "not signed by the current CA" in caplog.text


def test_unreadable_key_is_regenerated(pki: NodePKI, caplog: pytest.LogCaptureFixture) -> None:
    pki.serving_key.write_text("garbage")
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, "node-a", NODE_IPS, NOW)
    assert "cannot read kubelet.crt/kubelet.key" in caplog.text
    assert b"PRIVATE KEY" in pki.serving_key.read_bytes()


def test_new_node_ip_regenerates_serving_cert(pki: NodePKI, caplog: pytest.LogCaptureFixture) -> None:
    admin_before = pki.admin_crt.read_bytes()
    with caplog.at_level(logging.INFO):
        ensure_pki(pki, "node-a", [ipaddress.ip_address("10.0.0.9")], NOW)
    assert "SANs lack 10.0.0.9" in caplog.text
    assert pki.admin_crt.read_bytes() == admin_before


def test_no_token_file_with_token_auth_file(tmp_path: Path) -> None:
    pki = NodePKI.under(tmp_path)
    ensure_pki(pki, "n", [], NOW, write_token=False)
    assert not pki.tokens.exists()
