"""The cluster's certificates, as kubeadm and local-up-cluster lay them out: one CA, the API
server's serving certificate, client certificates for every component (CN = user, O = groups),
the service-account signing key pair, and kubeconfigs."""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubeletapi.kubeconfig import write_kubeconfig

_DAY = dt.timedelta(days=1)


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


class ClusterPKI:
    """Files under `root`: ca.crt/key, apiserver.crt/key, sa.key/pub, <name>.crt/key per client."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        now = dt.datetime.now(dt.UTC)
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubeletapi-test-cluster-ca")])
        self._ca = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self._key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - _DAY).not_valid_after(now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        self.ca = Pair(root / "ca.crt", root / "ca.key")
        self.ca.cert.write_bytes(self._ca.public_bytes(serialization.Encoding.PEM))
        self.ca.key.write_bytes(_pem_key(self._key))
        sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.sa_key, self.sa_pub = root / "sa.key", root / "sa.pub"
        self.sa_key.write_bytes(_pem_key(sa))
        self.sa_pub.write_bytes(sa.public_key().public_bytes(serialization.Encoding.PEM,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo))

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert.read_bytes()

    def issue(self, name: str, cn: str, orgs: Sequence[str] = (), *, server_ips: Sequence[str] = (),
              server_names: Sequence[str] = ()) -> Pair:
        """A certificate signed by the CA: a client one, or a serving one when SANs are given."""
        now = dt.datetime.now(dt.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
        serving = bool(server_ips or server_names)
        usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH] if serving \
            else [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(self._ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY).not_valid_after(now + 7 * _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        if serving:
            sans: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
            sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = Pair(self.root / f"{name}.crt", self.root / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(_pem_key(key))
        return pair

    def kubeconfig(self, name: str, server: str, pair: Pair) -> Path:
        """A kubeconfig for `pair`'s identity against `server` (inline data, mode 0600)."""
        path = self.root / f"{name}.kubeconfig"
        write_kubeconfig(path, name, server, self.ca_pem, pair.cert.read_bytes(), pair.key.read_bytes())
        return path
