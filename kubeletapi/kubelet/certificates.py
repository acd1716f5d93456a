"""Wiring of the node's certificates in apiserver mode: the API clients' credentials (from
--kubeconfig, or from a TLS bootstrap with --bootstrap-kubeconfig), the client certificate's
manager (rotateCertificates) and the serving certificate's (serverTLSBootstrap), both stored in
--cert-dir (kubelet-client-current.pem, kubelet-server-current.pem).

Built before the cluster wiring (whose API clients share `credentials`). `joined` says whether
the node has a client certificate already; otherwise `join()` bootstraps one (in the background:
the local API serves meanwhile) and hands it to the clients. The managers start once the node's
API client exists; a rotated client certificate replaces the credentials (new connections use
it), a rotated serving certificate goes to `on_serving` (the secure port's new handshakes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
from collections.abc import Callable, Sequence

from kubeletapi.aio import cancel_and_wait
from kubeletapi.apiclient.client import ApiClient
from kubeletapi.certificate.bootstrap import Bootstrap, BootstrapApi, client_template
from kubeletapi.certificate.csr import (
    CLIENT_SIGNER,
    CLIENT_USAGES,
    SERVING_SIGNER,
    SERVING_USAGES,
    CsrApi,
    Template,
)
from kubeletapi.certificate.manager import CertificateManager
from kubeletapi.certificate.store import KeyPair, PemStore
from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import InvalidInput
from kubeletapi.kubeconfig import ClientConfig, Credentials, load_kubeconfig
from kubeletapi.nodeinfo import IPAddress

log = logging.getLogger(__name__)


class CertificateWiring:
    def __init__(
        self, cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, node_ips: Sequence[IPAddress], clock: Clock
    ) -> None:
        assert opts.kubeconfig is not None
        self._clock = clock
        self._api: ApiClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        cert_dir = opts.effective_cert_dir
        self.bootstrap: Bootstrap | None = None
        config: ClientConfig | None
        if opts.bootstrap_kubeconfig is not None:
            self.bootstrap = Bootstrap(
                opts.kubeconfig,
                opts.bootstrap_kubeconfig,
                PemStore(cert_dir, "kubelet-client"),
                node_name,
                clock,
                self._bootstrap_api,
            )
            config = self.bootstrap.existing()
        else:
            config = load_kubeconfig(opts.kubeconfig)
        self.joined = config is not None
        # Before the bootstrap: the bootstrap's server and CA, no credentials (nothing is sent yet).
        first = config or _anonymous(load_kubeconfig(opts.bootstrap_kubeconfig or opts.kubeconfig))
        self.credentials = Credentials(first)
        self.client: CertificateManager | None = None
        if cfg.rotate_certificates:
            self.client = CertificateManager(
                "client",
                PemStore(cert_dir, "kubelet-client"),
                lambda: client_template(node_name),
                CLIENT_SIGNER,
                CLIENT_USAGES,
                self._node_api,
                clock,
                initial=_pair(config),
                on_rotated=self._client_rotated,
            )
            stored, given = self.client.current, _pair(config)
            if stored is not None and given is not None and stored.serial != given.serial:
                self._client_rotated(stored)  # a certificate rotated before a restart wins, as in client-go
        self.serving: CertificateManager | None = None
        if cfg.server_tls_bootstrap:
            template = serving_template(node_name, node_ips)
            self.serving = CertificateManager(
                "serving",
                PemStore(cert_dir, "kubelet-server"),
                lambda: template,
                SERVING_SIGNER,
                SERVING_USAGES,
                self._node_api,
                clock,
            )

    async def join(self) -> None:
        """The bootstrap, when the node has no client certificate yet."""
        if self.joined or self.bootstrap is None:
            return
        config = await self.bootstrap.run()
        self.credentials.replace(config)
        if self.client is not None:
            self.client.current = _pair(config)
        self.joined = True

    def start(self, api: ApiClient, on_serving: Callable[[KeyPair], None]) -> None:
        """Run the managers with the node's own API client."""
        self._api = api
        if self.client is not None:
            self._tasks.append(asyncio.create_task(self.client.run(), name="client-certificate"))
        if self.serving is not None:
            self.serving.on_rotated = on_serving
            self._tasks.append(asyncio.create_task(self.serving.run(), name="serving-certificate"))

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()

    def _node_api(self) -> CsrApi:
        assert self._api is not None, "the certificate managers run once the API client exists"
        return self._api

    def _bootstrap_api(self, config: ClientConfig) -> BootstrapApi:
        return ApiClient(config, self._clock)

    def _client_rotated(self, pair: KeyPair) -> None:
        """New connections of every API client present the new certificate."""
        self.credentials.replace(
            dataclasses.replace(
                self.credentials.config, client_cert_pem=pair.cert_pem, client_key_pem=pair.key_pem, token=None
            )
        )


def serving_template(node_name: str, node_ips: Sequence[IPAddress]) -> Template:
    """CN system:node:<name>, O system:nodes, and the node's addresses: its hostname as a DNS
    name (an IP if it is one) and its IPs (the kubelet's addressesToHostnamesAndIPs)."""
    try:
        host_ips: tuple[IPAddress, ...] = (ipaddress.ip_address(node_name),)
        dns: tuple[str, ...] = ()
    except ValueError:
        host_ips, dns = (), (node_name,)
    ips = tuple(dict.fromkeys((*host_ips, *node_ips)))
    return Template(f"system:node:{node_name}", ("system:nodes",), dns, ips)


def _anonymous(config: ClientConfig) -> ClientConfig:
    return dataclasses.replace(config, token=None, client_cert_pem=None, client_key_pem=None)


def _pair(config: ClientConfig | None) -> KeyPair | None:
    if config is None or config.client_cert_pem is None or config.client_key_pem is None:
        return None
    try:
        return KeyPair.parse(config.client_cert_pem, config.client_key_pem, "the kubeconfig's client certificate")
    except InvalidInput as exc:
        log.warning("Client certificate rotation: %s", exc)
        return None
