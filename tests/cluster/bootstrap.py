"""TLS bootstrap on the test control plane, as kubeadm sets it up: bootstrap token Secrets in
kube-system, the ClusterRoleBindings that let a token's group request node client certificates
(and have them approved), nodes renewing their own; a bootstrap kubeconfig; a node that joins
with one; CSRs and the certificates a node serves or stores."""

from __future__ import annotations

import base64
import datetime as dt
import os
import secrets
import socket
import ssl
import string
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509

from tests.cluster.controlplane import ControlPlane
from tests.cluster.node import Node

GROUP = "system:bootstrappers:kubeletapi-test"  # approved automatically (nodeclient)
MANUAL_GROUP = "system:bootstrappers:kubeletapi-manual"  # may request, not auto-approved
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
_ALNUM = string.ascii_lowercase + string.digits


def allow_bootstrap(plane: ControlPlane) -> None:
    """kubeadm's bindings: the token groups may create CSRs, GROUP's are auto-approved, and
    nodes may renew their own client certificates."""
    csr_roles = "system:certificates.k8s.io:certificatesigningrequests"
    for name, role, group in (
        ("kubeletapi:kubelet-bootstrap", "system:node-bootstrapper", GROUP),
        ("kubeletapi:kubelet-bootstrap-manual", "system:node-bootstrapper", MANUAL_GROUP),
        ("kubeletapi:node-autoapprove-bootstrap", f"{csr_roles}:nodeclient", GROUP),
        ("kubeletapi:node-autoapprove-certificate-rotation", f"{csr_roles}:selfnodeclient", "system:nodes"),
    ):
        plane.kubectl("create", "clusterrolebinding", name, f"--clusterrole={role}", f"--group={group}")


def bootstrap_token(plane: ControlPlane, group: str = GROUP, expires: dt.datetime | None = None) -> str:
    """A new token (id.secret) in a bootstrap-token Secret of kube-system."""
    token_id = "".join(secrets.choice(_ALNUM) for _ in range(6))
    secret = "".join(secrets.choice(_ALNUM) for _ in range(16))
    data = {
        "token-id": token_id,
        "token-secret": secret,
        "usage-bootstrap-authentication": "true",
        "usage-bootstrap-signing": "true",
        "auth-extra-groups": group,
    }
    if expires is not None:
        data["expiration"] = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "stringData": data,
    }
    plane.kubectl("apply", "-f", "-", input_=yaml.safe_dump(manifest))
    return f"{token_id}.{secret}"


def write_bootstrap_kubeconfig(plane: ControlPlane, path: Path, token: str) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "tls-bootstrap",
        "clusters": [
            {
                "name": "test",
                "cluster": {
                    "server": plane.server,
                    "certificate-authority-data": base64.b64encode(plane.pki.ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": "tls-bootstrap-token-user", "user": {"token": token}}],
        "contexts": [{"name": "tls-bootstrap", "context": {"cluster": "test", "user": "tls-bootstrap-token-user"}}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def bootstrap_node(plane: ControlPlane, tmp: Path, token: str, *extra: str) -> Node:
    """A process-runtime node whose --kubeconfig does not exist yet and whose bootstrap
    kubeconfig carries `token`."""
    return joins_by_token(Node(plane, tmp, *extra), tmp, token)


def joins_by_token(node: Node, tmp: Path, token: str) -> Node:
    """`node` (not started) joins with `token` instead of its issued identity: its --kubeconfig
    (under `tmp`) is the agent's to write once its CSR is issued."""
    node.args[node.args.index("--kubeconfig") + 1] = str(tmp / "kubelet.kubeconfig")
    bootstrap = write_bootstrap_kubeconfig(node.plane, tmp / "bootstrap.kubeconfig", token)
    node.args += ["--bootstrap-kubeconfig", str(bootstrap)]
    return node


def csrs(plane: ControlPlane, signer: str, node_name: str) -> list[dict[str, Any]]:
    """The CSRs of `signer` whose request names the node, oldest first."""
    items = plane.objects("/apis/certificates.k8s.io/v1/certificatesigningrequests")
    out = []
    for item in items:
        spec: Any = item.get("spec") or {}
        if spec.get("signerName") != signer:
            continue
        request = x509.load_pem_x509_csr(base64.b64decode(spec["request"]))
        if request.subject.rfc4514_string().startswith(f"CN=system:node:{node_name},"):
            out.append(item)
    return sorted(out, key=lambda i: str((i.get("metadata") or {}).get("creationTimestamp", "")))


def condition(csr: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind for c in (csr.get("status") or {}).get("conditions") or [])


def stored_certificate(cert_dir: Path, prefix: str = "kubelet-client") -> x509.Certificate | None:
    try:
        return x509.load_pem_x509_certificates((cert_dir / f"{prefix}-current.pem").read_bytes())[0]
    except (OSError, ValueError):
        return None


def served_certificate(address: str, port: int, timeout: float = 5) -> x509.Certificate:
    """The leaf the secure port presents in a new handshake (no verification: it is inspected)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((address, port), timeout=timeout) as raw, ctx.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def sans(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return ext.get_values_for_type(x509.DNSName), [str(ip) for ip in ext.get_values_for_type(x509.IPAddress)]


def unwritable_dir(tmp: Path) -> Path:
    """A cert dir that cannot be created even by root: its parent is a regular file."""
    blocker = tmp / "not-a-dir"
    blocker.write_text("")
    os.chmod(blocker, 0o444)
    return blocker / "pki"
