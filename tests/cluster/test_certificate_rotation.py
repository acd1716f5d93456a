"""Certificate rotation against the real control plane, on a plane of this module's own whose
controller-manager signs for 150 s (--cluster-signing-duration=150s; its signer backdates
notBefore by 5 minutes, so a certificate lives 7.5 minutes and is renewed 15 to 105 s after it was
issued, at 70-90 % of its lifetime; a shorter duration would put the earliest deadline before the
issuance itself, and every certificate would be renewed at once, again and again).

A node joins by bootstrap token with rotateCertificates and serverTLSBootstrap: its serving
certificate comes from a kubernetes.io/kubelet-serving CSR that the test approves with
`kubectl certificate approve` (nothing approves those automatically), the secure port then
presents it (checked by a real handshake: issuer, subject, SANs), and both certificates are
renewed before expiry (a new CSR each, a new serial) while the node stays Ready and an open
kept-alive HTTPS connection keeps working with the certificate it began with."""

from __future__ import annotations

import datetime as dt
import http.client
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from tests.cluster.bootstrap import (
    CLIENT_SIGNER,
    SERVING_SIGNER,
    allow_bootstrap,
    bootstrap_node,
    bootstrap_token,
    condition,
    csrs,
    sans,
    served_certificate,
    stored_certificate,
)
from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.node import Node
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

SIGNING = 150  # seconds: --cluster-signing-duration (the suite waits out one whole lifetime)
BACKDATE = 300  # the signer's notBefore backdating


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, fabric: Fabric) -> Iterator[ControlPlane]:
    plane = ControlPlane(
        tmp_path_factory.mktemp("rotation-plane"),
        node_ip=fabric.host,
        bootstrap_tokens=True,
        signing_duration=f"{SIGNING}s",
    )
    plane.start(node_monitor_grace_period="16s")
    try:
        allow_bootstrap(plane)
        yield plane
    finally:
        plane.stop()


class ServingApprover:
    """Approves the node's pending kubelet-serving CSRs with kubectl, as an administrator would."""

    def __init__(self, plane: ControlPlane, node_name: str) -> None:
        self.plane = plane
        self.node_name = node_name
        self.approved: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for csr in csrs(self.plane, SERVING_SIGNER, self.node_name):
                name = csr["metadata"]["name"]
                if name not in self.approved and not condition(csr, "Approved") and not condition(csr, "Denied"):
                    self.plane.kubectl("certificate", "approve", name)
                    self.approved.append(name)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


@pytest.mark.timeout(600)
def test_client_and_serving_certificates_rotate_before_expiry_without_dropping_connections(
    plane: ControlPlane, tmp_path: Path
) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "rotateCertificates": True,
                "serverTLSBootstrap": True,
            }
        )
    )
    node = bootstrap_node(plane, tmp_path, bootstrap_token(plane), "--config", str(config))
    approver = ServingApprover(plane, node.name)
    try:
        _rotate(plane, node, approver)
    finally:
        approver.stop()
        node.remove()


def _rotate(plane: ControlPlane, node: Node, approver: ServingApprover) -> None:
    address, port = plane.node_ip, int(node.flag("--port"))
    cert_dir = Path(node.flag("--cert-dir"))
    ca_subject = x509.load_pem_x509_certificate(plane.pki.ca_pem).subject
    started = time.monotonic()
    node.start()
    wait_for(node.ready, timeout=60, interval=0.1, what="node Ready after the bootstrap")
    ready_s = time.monotonic() - started
    served = wait_for(
        lambda: _issued_by(served_certificate(address, port), ca_subject),
        timeout=30,
        interval=0.2,
        what="the secure port presenting the issued serving certificate",
    )
    serving_s = time.monotonic() - started
    assert served.subject.rfc4514_string() == f"CN=system:node:{node.name},O=system:nodes"
    assert sans(served) == ([node.name], [plane.node_ip])
    client = stored_certificate(cert_dir)
    assert client is not None
    print(f"bootstrap token to Ready {ready_s:.2f}s, to the issued serving certificate {serving_s:.2f}s")

    # A kept-alive connection opened with the first serving certificate (verified against the CA).
    ctx = ssl.create_default_context(cafile=str(plane.pki.ca.cert))
    ctx.load_cert_chain(plane.kubelet_client.cert, plane.kubelet_client.key)
    conn = http.client.HTTPSConnection(address, port, context=ctx, timeout=10)
    conn.request("GET", "/healthz")
    assert conn.getresponse().read() == b"ok"
    sock = conn.sock
    assert isinstance(sock, ssl.SSLSocket)
    der = sock.getpeercert(binary_form=True)
    assert der is not None and x509.load_der_x509_certificate(der).serial_number == served.serial_number

    text = _get(conn, "/metrics")
    client_ttl = metric(text, "kubelet_certificate_manager_client_ttl_seconds")
    server_ttl = metric(text, "kubelet_certificate_manager_server_ttl_seconds")
    assert 0 < client_ttl <= SIGNING and 0 < server_ttl <= SIGNING
    assert metric(text, "kubelet_certificate_manager_client_expiration_renew_errors") == 0
    assert "# TYPE kubelet_certificate_manager_client_expiration_renew_errors counter" in text

    new_client, new_served = None, None
    deadline = time.monotonic() + SIGNING + 60
    while (new_client is None or new_served is None) and time.monotonic() < deadline:
        assert node.ready(), "the node left Ready during rotation"
        assert _get(conn, "/healthz") == "ok" and conn.sock is sock  # the same connection throughout
        stored = stored_certificate(cert_dir)
        if new_client is None and stored is not None and stored.serial_number != client.serial_number:
            new_client = (stored, time.monotonic())
        now_served = served_certificate(address, port)
        if new_served is None and now_served.serial_number != served.serial_number:
            new_served = (now_served, time.monotonic())
        time.sleep(2)
    assert new_client is not None, "the client certificate was not renewed"
    assert new_served is not None, "the serving certificate was not renewed"
    for what, old, (new, seen) in (("client", client, new_client), ("serving", served, new_served)):
        # Issuance times: notBefore plus the signer's backdating.
        old_issued, new_issued = (c.not_valid_before_utc.timestamp() + BACKDATE for c in (old, new))
        lifetime = (old.not_valid_after_utc - old.not_valid_before_utc).total_seconds()
        into_life = (new_issued - old.not_valid_before_utc.timestamp()) / lifetime
        print(
            f"{what} certificate renewed {new_issued - old_issued:.0f}s after issuance, at {into_life:.0%} of "
            f"its {lifetime:.0f}s lifetime, {old.not_valid_after_utc.timestamp() - new_issued:.0f}s before expiry; "
            f"seen {seen - started:.0f}s after the agent started"
        )
        assert new.subject == old.subject and new.issuer == ca_subject
        assert 0.7 - 2 / lifetime <= into_life <= 0.9 + 15 / lifetime  # the jittered deadline, plus the CSR's time
    assert sans(new_served[0]) == ([node.name], [plane.node_ip])

    # The open connection still has the first certificate; new handshakes get the new one.
    der = sock.getpeercert(binary_form=True)
    assert der is not None and x509.load_der_x509_certificate(der).serial_number == served.serial_number
    assert _get(conn, "/healthz") == "ok" and conn.sock is sock
    conn.close()

    # Past the first client certificate's expiry the node still renews its lease: its requests
    # use the new certificate (the old one would be refused).
    expired = client.not_valid_after_utc
    lease = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node.name}"

    def renewed_after_expiry() -> bool:
        renew = str(plane.get_json(lease)["spec"]["renewTime"])  # type: ignore[index]
        return dt.datetime.fromisoformat(renew.replace("Z", "+00:00")) > expired

    wait_for(renewed_after_expiry, timeout=SIGNING, interval=1, what="a lease renewed after the old one expired")
    assert "Unauthorized" not in node.log.read_text()

    client_csrs = csrs(plane, CLIENT_SIGNER, node.name)
    assert len(client_csrs) >= 2 and all(condition(c, "Approved") for c in client_csrs)
    assert client_csrs[-1]["spec"]["username"] == f"system:node:{node.name}"  # renewed with its own identity
    assert len(csrs(plane, SERVING_SIGNER, node.name)) >= 2 and len(approver.approved) >= 2
    assert node.ready()
    text = node.log.read_text()
    assert "Rotated the client certificate" in text and "Rotated the serving certificate" in text


def _issued_by(cert: x509.Certificate, issuer: x509.Name) -> x509.Certificate | None:
    return cert if cert.issuer == issuer else None


def _get(conn: http.client.HTTPSConnection, path: str) -> str:
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read().decode()
    assert response.status == 200, (path, response.status, body)
    return body
