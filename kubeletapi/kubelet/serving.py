"""The secure port's serving certificate: which files it serves, the ServingContext new
handshakes take them from, a rotated certificate swapped in, and the time it has left (the
kubelet_certificate_manager_server_ttl_seconds gauge).

With serverTLSBootstrap (apiserver mode) the certificate the API server issued is served once
there is one, the configured or generated files until then. A rotation loads the new pair for new
handshakes; open connections keep theirs.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kubeletapi.clock import Clock
from kubeletapi.errors import KubeletError
from kubeletapi.pkifiles import serving_not_after
from kubeletapi.server.tls import ServingContext

if TYPE_CHECKING:  # apiserver mode only: the certificate machinery is imported when it is wired
    from kubeletapi.certificate.manager import CertificateManager
    from kubeletapi.certificate.store import KeyPair

log = logging.getLogger(__name__)


class ServingCertificate:
    """The serving certificate of one agent; `issued` is serverTLSBootstrap's manager, if any."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.issued: CertificateManager | None = None
        self.context: ServingContext | None = None  # built with the secure listener
        self._not_after: float | None = None

    def files(self, cert: Path, key: Path) -> tuple[Path, Path]:
        """serverTLSBootstrap: the issued serving certificate once there is one (the generated
        one until then); otherwise the configured or generated files."""
        if self.issued is not None and self.issued.current is not None:
            return self.issued.store.current_path, self.issued.store.current_path
        return cert, key

    def track(self, cert: Path, key: Path) -> None:
        """Read the expiry of what `files` serves (the TTL gauge's figure)."""
        self._not_after = serving_not_after(*self.files(cert, key))

    def serve(self, cert: Path, key: Path, client_ca: Path | None, min_version: str,
              cipher_suites: Sequence[str]) -> ServingContext:
        """The secure listener's ServingContext over what `files` serves."""
        served_cert, served_key = self.files(cert, key)
        self.context = ServingContext(served_cert, served_key, client_ca, min_version, cipher_suites)
        return self.context

    def rotated(self, pair: KeyPair) -> None:
        """A new serving certificate: new handshakes present it, open connections keep theirs."""
        assert self.issued is not None
        path = self.issued.store.current_path
        if self.context is None:
            return
        try:
            self.context.load(path, path)
        except KubeletError as exc:
            log.error("The new serving certificate %s cannot be served, keeping the old one: %s", path, exc)
            return
        self._not_after = pair.not_after
        log.info("Serving certificate %s in use for new connections (serial %x)", path, pair.serial)

    def ttl(self) -> float:
        """Whole seconds, as the kubelet's gauge (math.Trunc of time.Until)."""
        if self._not_after is None:
            return float("inf")
        return float(math.trunc(self._not_after - self._clock.now()))
