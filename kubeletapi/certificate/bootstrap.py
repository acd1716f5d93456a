"""TLS bootstrap: the node's first client certificate, from a bootstrap kubeconfig (the kubelet's
pkg/kubelet/certificate/bootstrap).

`existing()` decides at start-up, without the network: a --kubeconfig whose client certificate
loads and has not expired is used as it is (the bootstrap kubeconfig is then ignored); otherwise
a valid certificate already in the store (a restart after a bootstrap) gets a kubeconfig written
at --kubeconfig pointing at it. Only when neither exists does `run()` bootstrap: with the
bootstrap kubeconfig's credentials (a bootstrap token) it requests a client certificate
(signer kubernetes.io/kube-apiserver-client-kubelet, CN system:node:<name>, O system:nodes),
waits for the controller-manager's approver and signer, stores it in --cert-dir and writes the
kubeconfig at --kubeconfig, whose certificate and key are the store's current file.

Unlike the kubelet, which exits when the bootstrap fails, every failure (refused credentials, a
denied request, a cert dir that cannot be written) is logged with its reason and retried with
back-off, while the agent's local API serves. The request's key waits in <cert-dir>/
kubelet-client.key.tmp, so a restart finds the same request again; a denied or failed request's
key is dropped, so the retry is a new request rather than the refused one.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from cryptography import x509

from kubeletapi.certificate.csr import (
    CLIENT_SIGNER,
    CLIENT_USAGES,
    CertificateRefused,
    CsrApi,
    Template,
    digested_name,
    new_key,
    request_pem,
    submit,
    wait_certificate,
)
from kubeletapi.certificate.manager import backoff_delays
from kubeletapi.certificate.store import KeyPair, PemStore
from kubeletapi.clock import Clock
from kubeletapi.errors import ConfigError, KubeletError, Unauthorized
from kubeletapi.kubeconfig import ClientConfig, load_kubeconfig, write_node_kubeconfig

log = logging.getLogger(__name__)

BOOTSTRAP_WAIT_S = 3600  # the kubelet waits an hour for its bootstrap certificate


class BootstrapApi(CsrApi, Protocol):
    async def close(self) -> None: ...


def client_template(node_name: str) -> Template:
    return Template(f"system:node:{node_name}", ("system:nodes",))


class Bootstrap:
    """The node's client certificate: found, or requested with the bootstrap kubeconfig."""

    def __init__(
        self,
        kubeconfig: Path,
        bootstrap_kubeconfig: Path,
        store: PemStore,
        node_name: str,
        clock: Clock,
        api: Callable[[ClientConfig], BootstrapApi],
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.bootstrap_kubeconfig = bootstrap_kubeconfig
        self.store = store
        self.attempts = 0
        self._template = client_template(node_name)
        self._clock = clock
        self._api = api
        self._delay = backoff_delays(rng)

    def existing(self) -> ClientConfig | None:
        """The client config to use without bootstrapping, or None when a bootstrap is needed."""
        config, reason = self._valid_kubeconfig()
        if config is not None:
            return config
        log.info(
            "No usable client certificate in %s (%s): using the bootstrap kubeconfig %s",
            self.kubeconfig,
            reason,
            self.bootstrap_kubeconfig,
        )
        try:
            pair = self.store.current()
        except KubeletError as exc:
            log.warning("Bootstrap: %s", exc)
            return None
        if pair is None or pair.not_after <= self._clock.now():
            return None
        try:
            return self._write_kubeconfig()
        except (KubeletError, OSError) as exc:
            log.warning(
                "Bootstrap: cannot write the kubeconfig %s for the stored certificate %s: %s",
                self.kubeconfig,
                self.store.current_path,
                exc,
            )
            return None

    async def run(self) -> ClientConfig:
        """Bootstrap until it works; the client config of the new kubeconfig."""
        while True:
            self.attempts += 1
            try:
                return await self._request()
            except (KubeletError, OSError) as exc:
                delay = self._delay(self.attempts - 1)
                log.warning(
                    "Bootstrap with %s failed (attempt %d), retrying in %.1fs: %s",
                    self.bootstrap_kubeconfig,
                    self.attempts,
                    delay,
                    _explain(exc),
                )
                await self._clock.sleep(delay)

    async def _request(self) -> ClientConfig:
        bootstrap = load_kubeconfig(self.bootstrap_kubeconfig)
        key_pem = self.store.pending_key()
        if key_pem is None:
            key_pem = new_key()
            self.store.save_pending_key(key_pem)
        name = digested_name(key_pem, self._template, CLIENT_USAGES)
        api = self._api(bootstrap)
        try:
            name = await submit(api, request_pem(key_pem, self._template), CLIENT_SIGNER, CLIENT_USAGES, name)
            log.info("Bootstrap: requested the client certificate, CertificateSigningRequest %s", name)
            try:
                cert_pem = await wait_certificate(api, name, self._clock, BOOTSTRAP_WAIT_S)
            except CertificateRefused:
                self.store.drop_pending_key()  # the next attempt is a new request
                raise
        finally:
            await api.close()
        pair = KeyPair.parse(cert_pem, key_pem, f"the certificate of CertificateSigningRequest {name}")
        self.store.update(pair, self._clock.now())
        config = self._write_kubeconfig(bootstrap)
        self.store.drop_pending_key()
        log.info(
            "Bootstrap: client certificate issued (serial %x, valid until %s), kubeconfig written to %s",
            pair.serial,
            pair.leaf.not_valid_after_utc.isoformat(),
            self.kubeconfig,
        )
        return config

    def _write_kubeconfig(self, bootstrap: ClientConfig | None = None) -> ClientConfig:
        cluster = bootstrap if bootstrap is not None else load_kubeconfig(self.bootstrap_kubeconfig)
        write_node_kubeconfig(
            self.kubeconfig, cluster.server, cluster.ca_pem, cluster.insecure, self.store.current_path
        )
        return load_kubeconfig(self.kubeconfig)

    def _valid_kubeconfig(self) -> tuple[ClientConfig | None, str]:
        if not self.kubeconfig.exists():
            return None, "no such file"
        try:
            config = load_kubeconfig(self.kubeconfig)
        except ConfigError as exc:
            return None, str(exc)
        if config.client_cert_pem is None:
            return None, "it has no client certificate"
        try:
            leaf = x509.load_pem_x509_certificates(config.client_cert_pem)[0]
        except ValueError as exc:
            return None, f"its client certificate does not parse: {exc}"
        if leaf.not_valid_after_utc <= dt.datetime.fromtimestamp(self._clock.now(), dt.UTC):
            return None, f"its client certificate expired at {leaf.not_valid_after_utc.isoformat()}"
        return config, ""


def _explain(exc: BaseException) -> str:
    if isinstance(exc, Unauthorized):
        return f"the API server did not accept the bootstrap credentials (a wrong or expired token?): {exc}"
    return str(exc)
