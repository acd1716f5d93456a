"""CertificateSigningRequests: make one, submit it and wait for its certificate (client-go's
util/certificate/csr behaviour).

Keys are ECDSA P-256, as the kubelet's; their usages are therefore "digital signature" plus
"client auth" or "server auth" (no "key encipherment", which is for RSA keys). A request named
from its key (`digested_name`, the bootstrap's "node-csr-..." name) is found again after a
restart: AlreadyExists means "ours, wait for it". An unnamed request gets generateName "csr-".
Waiting polls the object: approved with a certificate is success; a Denied or Failed condition
is CertificateRefused with the condition's reason and message.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubeletapi.clock import Clock
from kubeletapi.errors import Conflict, KubeletError, Unavailable

log = logging.getLogger(__name__)

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"
CLIENT_USAGES = ("digital signature", "client auth")
SERVING_USAGES = ("digital signature", "server auth")
CSR_PATH = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
POLL_S = 1.0

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Json = dict[str, Any]


class CertificateRefused(KubeletError):
    """The CSR was denied or failed: a new request is needed."""


class CsrApi(Protocol):
    """What this module needs of the API client."""

    async def create(self, path: str, body: Json) -> Json: ...

    async def get(self, path: str) -> Json: ...


@dataclass(frozen=True)
class Template:
    """The subject and names a certificate is requested with."""

    common_name: str
    organizations: tuple[str, ...]
    dns_names: tuple[str, ...] = ()
    ips: tuple[IPAddress, ...] = field(default=())

    def matches(self, cert: x509.Certificate) -> bool:
        """The certificate carries this template's subject and names (client-go's
        certSatisfiesTemplate): otherwise it is renewed at once."""
        subject = cert.subject
        cn = [a.value for a in subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        orgs = sorted(str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
        if cn != [self.common_name] or orgs != sorted(self.organizations):
            return False
        try:
            sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            return not self.dns_names and not self.ips
        return sorted(sans.get_values_for_type(x509.DNSName)) == sorted(self.dns_names) and sorted(
            map(str, sans.get_values_for_type(x509.IPAddress))
        ) == sorted(map(str, self.ips))


def new_key() -> bytes:
    """A fresh ECDSA P-256 private key as PEM (SEC 1, as Go's kubelet writes it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def request_pem(key_pem: bytes, template: Template) -> bytes:
    """A PEM CERTIFICATE REQUEST for `template`, signed by the key."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    names = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in template.organizations]
    names.append(x509.NameAttribute(NameOID.COMMON_NAME, template.common_name))
    builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in template.dns_names]
    sans += [x509.IPAddress(ip) for ip in template.ips]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def digested_name(key_pem: bytes, template: Template, usages: Sequence[str]) -> str:
    """ "node-csr-" and a digest of the public key, subject and usages: the same request after a
    restart has the same name (the kubelet's bootstrap naming)."""
    key = serialization.load_pem_private_key(key_pem, password=None)
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    digest = hashlib.sha512()
    for part in (
        public,
        template.common_name.encode(),
        *(o.encode() for o in template.organizations),
        *(u.encode() for u in usages),
    ):
        digest.update(len(part).to_bytes(4, "big") + part)
    return "node-csr-" + base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")[:43]


async def submit(api: CsrApi, csr_pem: bytes, signer: str, usages: Sequence[str], name: str = "") -> str:
    """Create the CSR object; its name (the one given, or the one the server generated)."""
    meta: Json = {"name": name} if name else {"generateName": "csr-"}
    body = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": meta,
        "spec": {"request": base64.b64encode(csr_pem).decode(), "signerName": signer, "usages": list(usages)},
    }
    try:
        created = await api.create(CSR_PATH, body)
    except Conflict:
        if not name:
            raise
        log.info("CertificateSigningRequest %s already exists: waiting for it", name)
        return name
    return str((created.get("metadata") or {}).get("name", name))


async def wait_certificate(api: CsrApi, name: str, clock: Clock, timeout_s: float) -> bytes:
    """The issued certificate (PEM) of CSR `name`; CertificateRefused when it is denied or
    failed, Unavailable when nothing is issued within `timeout_s`."""
    deadline = clock.monotonic() + timeout_s
    while True:
        csr = await api.get(f"{CSR_PATH}/{name}")
        status = csr.get("status") or {}
        for cond in status.get("conditions") or []:
            if cond.get("type") in ("Denied", "Failed"):
                raise CertificateRefused(
                    f"CertificateSigningRequest {name} is {cond['type'].lower()}: "
                    f"reason={cond.get('reason', '')!r} message={cond.get('message', '')!r}"
                )
        approved = any(c.get("type") == "Approved" for c in status.get("conditions") or [])
        if approved and status.get("certificate"):
            return base64.b64decode(status["certificate"])
        if clock.monotonic() >= deadline:
            state = "approved, no certificate issued" if approved else "not approved"
            raise Unavailable(f"CertificateSigningRequest {name}: {state} after {timeout_s:.0f}s")
        await clock.sleep(POLL_S)
