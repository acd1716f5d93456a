"""The PEM store of one certificate manager (the layout of client-go's certificate file store).

<dir>/<prefix>-<YYYY-MM-DD-HH-MM-SS>.pem holds a certificate (its chain after it) and its private
key; <dir>/<prefix>-current.pem is a symlink to the newest. A new pair is written to a new file
first and the symlink replaced atomically (a new link renamed over the old), so a reader sees the
old pair or the new one, never half of either. Old files stay, as client-go leaves them.

The pending key (<dir>/<prefix>.key.tmp, the kubelet's kubelet-client.key.tmp) keeps the private
key of a request in flight across restarts: the request's name derives from the key, so a
restarted agent finds its own CSR again instead of creating another.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from kubeletapi.errors import InvalidInput, Unavailable
from kubeletapi.pkifiles import write_private

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeyPair:
    """A certificate chain (leaf first) with its private key, as PEM, and the parsed leaf."""

    cert_pem: bytes
    key_pem: bytes
    leaf: x509.Certificate

    @classmethod
    def parse(cls, cert_pem: bytes, key_pem: bytes, source: str) -> KeyPair:
        """InvalidInput naming `source` when the PEM holds no certificate, no key, or a key that
        is not the certificate's. Either may be a file holding both (the store's own)."""
        cert_pem, key_pem = _blocks(cert_pem, b"CERTIFICATE"), _key_blocks(key_pem)
        try:
            leaf = x509.load_pem_x509_certificates(cert_pem)[0]
            key = serialization.load_pem_private_key(key_pem, password=None)
        except ValueError as exc:
            raise InvalidInput(f"{source}: not a PEM certificate and private key: {exc}") from exc
        if _public_der(key) != leaf.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        ):
            raise InvalidInput(f"{source}: the private key does not match the certificate")
        return cls(cert_pem, key_pem, leaf)

    @property
    def not_before(self) -> float:
        return self.leaf.not_valid_before_utc.timestamp()

    @property
    def not_after(self) -> float:
        return self.leaf.not_valid_after_utc.timestamp()

    @property
    def serial(self) -> int:
        return self.leaf.serial_number

    def combined_pem(self) -> bytes:
        """Certificate chain then key in one file, as the store writes it."""
        return self.cert_pem.rstrip(b"\n") + b"\n" + self.key_pem


def _public_der(key: PrivateKeyTypes) -> bytes:
    public = key.public_key()
    return public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


class PemStore:
    """The pairs of one manager ("kubelet-client", "kubelet-server") in one directory."""

    def __init__(self, directory: Path, prefix: str) -> None:
        self.directory = directory
        self.prefix = prefix
        self.current_path = directory / f"{prefix}-current.pem"
        self.pending_key_path = directory / f"{prefix}.key.tmp"

    def current(self) -> KeyPair | None:
        """The pair the current link names; None when there is none yet. A file that does not
        parse is logged and treated as absent (a new certificate replaces it)."""
        try:
            data = self.current_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._problem(f"cannot read {self.current_path.name}", exc) from exc
        try:
            return KeyPair.parse(data, data, str(self.current_path))
        except InvalidInput as exc:
            log.warning("Ignoring the stored certificate: %s", exc)
            return None

    def update(self, pair: KeyPair, now: float) -> Path:
        """Write `pair` to a new timestamped file and point the current link at it."""
        stamp = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d-%H-%M-%S")
        target = self.directory / f"{self.prefix}-{stamp}.pem"
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o755)
            write_private(target, pair.combined_pem())
            link = self.directory / f".{self.prefix}-current.pem.new"
            link.unlink(missing_ok=True)
            os.symlink(target.name, link)
            os.replace(link, self.current_path)
        except OSError as exc:
            raise self._problem("cannot write the certificate", exc) from exc
        return target

    # --- the key of a request in flight -------------------------------------------------------
    def pending_key(self) -> bytes | None:
        try:
            data = self.pending_key_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._problem(f"cannot read {self.pending_key_path.name}", exc) from exc
        try:
            serialization.load_pem_private_key(data, password=None)
        except ValueError:
            log.warning("Ignoring %s: not a PEM private key", self.pending_key_path)
            return None
        return data

    def save_pending_key(self, key_pem: bytes) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o755)
            write_private(self.pending_key_path, key_pem)
        except OSError as exc:
            raise self._problem("cannot write the private key", exc) from exc

    def _problem(self, what: str, exc: OSError) -> Unavailable:
        return Unavailable(f"cert dir {self.directory}: {what}: {exc.strerror or exc}")

    def drop_pending_key(self) -> None:
        try:
            self.pending_key_path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("Cannot remove %s: %s", self.pending_key_path, exc.strerror)


def _blocks(data: bytes, kind: bytes) -> bytes:
    """The PEM blocks of `data` whose type is `kind`, in order."""
    out: list[bytes] = []
    begin, end = b"-----BEGIN " + kind + b"-----", b"-----END " + kind + b"-----"
    start = data.find(begin)
    while start >= 0:
        stop = data.find(end, start)
        if stop < 0:
            break
        out.append(data[start : stop + len(end)] + b"\n")
        start = data.find(begin, stop)
    return b"".join(out)


def _key_blocks(data: bytes) -> bytes:
    for kind in (b"EC PRIVATE KEY", b"PRIVATE KEY", b"RSA PRIVATE KEY"):
        found = _blocks(data, kind)
        if found:
            return found
    return b""
