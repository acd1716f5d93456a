"""TLS bootstrap against the real control plane (a plane of this module's own, with bootstrap
token authentication and the bootstrapsigner/tokencleaner controllers): a node joins with a
bootstrap token, its CSR approved and signed by the controller-manager, its certificate in
--cert-dir and a kubeconfig written at --kubeconfig; a restart reuses them. Bad input (a wrong or
expired token, a denied CSR, a cert dir that cannot be written) is logged with its reason and
retried with back-off while the local API serves, and the node joins once the problem is gone.
The process runtime is enough: nothing here depends on the runtime."""

from __future__ import annotations

import base64
import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from cryptography import x509

from tests.cluster.bootstrap import (
    CLIENT_SIGNER,
    MANUAL_GROUP,
    allow_bootstrap,
    bootstrap_node,
    bootstrap_token,
    condition,
    csrs,
    stored_certificate,
    unwritable_dir,
    write_bootstrap_kubeconfig,
)
from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import Fabric
from tests.cluster.node import Node
from tests.helpers import LOOPBACK
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

REFUSED = "did not accept the bootstrap credentials"
GRACE = "16s"  # as the session plane's


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory, fabric: Fabric) -> Iterator[ControlPlane]:
    plane = ControlPlane(
        tmp_path_factory.mktemp("bootstrap-plane"), node_ip=fabric.host, bootstrap_tokens=True
    )
    plane.start(node_monitor_grace_period=GRACE)
    try:
        allow_bootstrap(plane)
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def nodes() -> Iterator[list[Node]]:
    started: list[Node] = []
    try:
        yield started
    finally:
        for node in started:
            node.remove()


def local_api_serves(node: Node) -> None:
    """healthz and the read-only port answer while the node has no API server."""
    assert httpx.get(f"http://{LOOPBACK}:{node.flag('--healthz-port')}/healthz", timeout=5).text == "ok"
    pods = httpx.get(f"http://{node.flag('--address')}:{node.flag('--read-only-port')}/pods", timeout=5)
    assert pods.status_code == 200 and pods.json()["kind"] == "PodList"


def log_count(node: Node, text: str) -> int:
    return node.log.read_text(errors="replace").count(text)


def test_joins_by_token_and_a_restart_reuses_the_certificate(
    plane: ControlPlane, tmp_path: Path, nodes: list[Node]
) -> None:
    token = bootstrap_token(plane)
    node = bootstrap_node(plane, tmp_path, token)
    nodes.append(node)
    started = time.monotonic()
    node.start()
    wait_for(node.ready, timeout=60, interval=0.1, what="node Ready after the bootstrap")
    print(f"bootstrap token to Ready: {time.monotonic() - started:.2f}s")

    [csr] = csrs(plane, CLIENT_SIGNER, node.name)
    assert csr["spec"]["username"] == f"system:bootstrap:{token.split('.')[0]}"
    assert csr["metadata"]["name"].startswith("node-csr-")
    assert sorted(csr["spec"]["usages"]) == ["client auth", "digital signature"]
    assert condition(csr, "Approved") and csr["status"]["certificate"]
    cert_dir = Path(node.flag("--cert-dir"))
    current = cert_dir / "kubelet-client-current.pem"
    assert current.is_symlink() and current.resolve().name.startswith("kubelet-client-20")
    assert current.resolve().stat().st_mode & 0o777 == 0o600
    cert = stored_certificate(cert_dir)
    assert cert is not None
    assert cert.subject.rfc4514_string() == f"CN=system:node:{node.name},O=system:nodes"
    issued = x509.load_pem_x509_certificate(base64.b64decode(csr["status"]["certificate"]))
    assert issued.serial_number == cert.serial_number
    assert issued.issuer == x509.load_pem_x509_certificate(plane.pki.ca_pem).subject
    kubeconfig = yaml.safe_load(Path(node.flag("--kubeconfig")).read_text())
    assert kubeconfig["users"][0]["user"] == {"client-certificate": str(current), "client-key": str(current)}
    assert kubeconfig["clusters"][0]["cluster"]["server"] == plane.server
    assert not (cert_dir / "kubelet-client.key.tmp").exists()

    node.stop()
    restarted = dt.datetime.now(dt.UTC)
    node.start()
    lease = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node.name}"

    def renewed_after_restart() -> bool:
        renew = str(plane.get_json(lease)["spec"]["renewTime"])  # type: ignore[index]
        return dt.datetime.fromisoformat(renew.replace("Z", "+00:00")) > restarted

    wait_for(renewed_after_restart, timeout=30, interval=0.5, what="the lease renewed by the restarted agent")
    assert node.ready()
    assert len(csrs(plane, CLIENT_SIGNER, node.name)) == 1  # no new request
    assert log_count(node, "Bootstrap: requested the client certificate") == 1
    assert stored_certificate(cert_dir).serial_number == cert.serial_number  # type: ignore[union-attr]


def test_a_wrong_token_is_retried_with_backoff_then_the_right_one_joins(
    plane: ControlPlane, tmp_path: Path, nodes: list[Node]
) -> None:
    node = bootstrap_node(plane, tmp_path, "abcdef.0123456789abcdef")
    nodes.append(node)
    node.start()
    wait_for(lambda: log_count(node, REFUSED) >= 2, timeout=30, interval=0.2, what="two refused attempts")
    text = node.log.read_text()
    assert "failed (attempt 1), retrying in 2." in text and "failed (attempt 2), retrying in 4." in text
    assert "401" in text and str(tmp_path / "bootstrap.kubeconfig") in text
    local_api_serves(node)
    assert node.get() is None
    write_bootstrap_kubeconfig(plane, tmp_path / "bootstrap.kubeconfig", bootstrap_token(plane))
    wait_for(node.ready, timeout=60, interval=0.2, what="node Ready with the right token")


def test_an_expired_token_is_refused_and_retried(plane: ControlPlane, tmp_path: Path, nodes: list[Node]) -> None:
    token = bootstrap_token(plane, expires=dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    node = bootstrap_node(plane, tmp_path, token)
    nodes.append(node)
    node.start()
    wait_for(lambda: log_count(node, REFUSED) >= 2, timeout=30, interval=0.2, what="two refused attempts")
    local_api_serves(node)
    assert node.get() is None and csrs(plane, CLIENT_SIGNER, node.name) == []


def test_a_denied_request_is_logged_and_replaced_by_a_new_one(
    plane: ControlPlane, tmp_path: Path, nodes: list[Node]
) -> None:
    node = bootstrap_node(plane, tmp_path, bootstrap_token(plane, group=MANUAL_GROUP))  # not auto-approved
    nodes.append(node)
    node.start()
    first = wait_for(lambda: csrs(plane, CLIENT_SIGNER, node.name), timeout=30, what="the first CSR")[0]
    first_name = first["metadata"]["name"]
    plane.kubectl("certificate", "deny", first_name)
    wait_for(
        lambda: log_count(node, f"CertificateSigningRequest {first_name} is denied") >= 1,
        timeout=20,
        interval=0.2,
        what="the denial logged",
    )
    second = wait_for(
        lambda: [c for c in csrs(plane, CLIENT_SIGNER, node.name) if c["metadata"]["name"] != first_name],
        timeout=30,
        what="a new CSR",
    )[0]
    local_api_serves(node)
    assert node.get() is None
    plane.kubectl("certificate", "approve", second["metadata"]["name"])
    wait_for(node.ready, timeout=60, interval=0.2, what="node Ready after the approval")


def test_an_unwritable_cert_dir_is_named_and_retried(plane: ControlPlane, tmp_path: Path, nodes: list[Node]) -> None:
    cert_dir = unwritable_dir(tmp_path)
    serving = plane.pki.issue(f"serving-{tmp_path.name}", "kubeletapi-serving", server_ips=[plane.node_ip])
    node = bootstrap_node(
        plane,
        tmp_path,
        bootstrap_token(plane),
        "--tls-cert-file",
        str(serving.cert),
        "--tls-private-key-file",
        str(serving.key),
    )
    node.args[node.args.index("--cert-dir") + 1] = str(cert_dir)
    nodes.append(node)
    node.start()
    wait_for(lambda: log_count(node, "failed (attempt 2)") >= 1, timeout=30, interval=0.2, what="two failed attempts")
    failures = [line for line in node.log.read_text().splitlines() if "Bootstrap with" in line]
    assert len(failures) >= 2 and all(
        f"cert dir {cert_dir}: cannot" in line and "Not a directory" in line for line in failures
    )
    local_api_serves(node)
    cert_dir.parent.unlink()
    cert_dir.parent.mkdir()
    wait_for(node.ready, timeout=60, interval=0.2, what="node Ready once the cert dir can be written")
    assert stored_certificate(cert_dir) is not None
