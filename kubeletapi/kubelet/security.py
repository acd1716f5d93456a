"""Wiring of the secure listener's TLS files, authenticators and authorizer from the config."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kubeletapi.clock import Clock
from kubeletapi.config import KubeletConfiguration, NodeOptions
from kubeletapi.errors import StartupError
from kubeletapi.kubeconfig import Credentials, load_kubeconfig, write_kubeconfig
from kubeletapi.nodeinfo import IPAddress
from kubeletapi.pkifiles import NodePKI, current
from kubeletapi.server.authn import (
    CachedTokenAuthenticator,
    RequestAuthenticator,
    TokenAuthenticator,
    TokenFile,
    X509Authenticator,
)
from kubeletapi.server.authz import AlwaysAllow, Authorizer, CachedAuthorizer
from kubeletapi.server.rbac import RBACAuthorizer

if TYPE_CHECKING:  # the webhooks' API client (httpx) is imported only when a webhook is on
    from kubeletapi.server.webhook import APIClient


@dataclass(frozen=True)
class TLSFiles:
    cert: Path
    key: Path
    client_ca: Path | None
    pki: NodePKI | None


def tls_files(
    cfg: KubeletConfiguration, opts: NodeOptions, node_name: str, node_ips: list[IPAddress], server_url: str,
    clock: Clock,
) -> TLSFiles:
    """Serving certificate, key and client CA: given, or generated in --cert-dir. Like the
    kubelet's InitializeTLS, the generated paths are written back into `cfg` (/configz)."""
    x509 = cfg.authentication.x509
    client_ca = Path(x509.client_ca_file) if x509.client_ca_file else None
    if cfg.tls_cert_file:
        return TLSFiles(Path(cfg.tls_cert_file), Path(cfg.tls_private_key_file), client_ca, None)
    pki = NodePKI.under(opts.effective_cert_dir)
    now = dt.datetime.fromtimestamp(clock.now(), dt.UTC)
    try:
        write_token = opts.token_auth_file is None
        if not current(pki, node_name, node_ips, now, write_token):
            # cryptography (kubeletapi.pki) only when a file must be made or its problem named
            from kubeletapi.pki import ensure_pki  # noqa: PLC0415

            ensure_pki(pki, node_name, node_ips, now, write_token=write_token)
        write_kubeconfig(pki.kubeconfig, "kubeletapi", server_url, pki.ca_crt.read_bytes(),
                         pki.admin_crt.read_bytes(), pki.admin_key.read_bytes())
    except OSError as exc:
        raise StartupError(f"cannot write certificates to {pki.cert_dir}: {exc.strerror}") from exc
    cfg.tls_cert_file = str(pki.serving_crt)
    cfg.tls_private_key_file = str(pki.serving_key)
    if client_ca is None:
        client_ca = pki.ca_crt
        x509.client_ca_file = str(client_ca)
    return TLSFiles(pki.serving_crt, pki.serving_key, client_ca, pki)


class SecurityWiring:
    """Builds the authenticator and authorizer; owns the API client of the webhooks."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, clock: Clock) -> None:
        self._cfg = cfg
        self._opts = opts
        self._clock = clock
        self._api: APIClient | None = None
        self._credentials: Credentials | None = None

    def use_credentials(self, credentials: Credentials) -> None:
        """The node's credentials (they change with a bootstrap or a rotated certificate)."""
        self._credentials = credentials

    def _api_client(self) -> APIClient:
        if self._api is None:
            assert self._opts.kubeconfig is not None  # enforced by config validation
            from kubeletapi.server.webhook import APIClient  # noqa: PLC0415 - see TYPE_CHECKING above

            self._api = APIClient(self._credentials or load_kubeconfig(self._opts.kubeconfig))
        return self._api

    def authenticator(self, tls: TLSFiles) -> RequestAuthenticator:
        authn = self._cfg.authentication
        tokens: list[TokenAuthenticator] = []
        token_file = self._opts.token_auth_file or (tls.pki.tokens if tls.pki else None)
        if token_file is not None:
            tokens.append(TokenFile.load(token_file))
        if authn.webhook.enabled:
            from kubeletapi.server.webhook import WebhookTokenAuthenticator  # noqa: PLC0415

            webhook = WebhookTokenAuthenticator(self._api_client())
            tokens.append(CachedTokenAuthenticator(webhook, authn.webhook.cache_ttl.seconds, self._clock))
        x509_auth = X509Authenticator(self._clock) if tls.client_ca is not None else None
        return RequestAuthenticator(x509_auth, tokens, authn.anonymous.enabled)

    def authorizer(self) -> Authorizer:
        authz = self._cfg.authorization
        if authz.mode == "RBAC":
            assert self._opts.authorization_rbac_file is not None  # enforced by config validation
            return RBACAuthorizer.load(self._opts.authorization_rbac_file)
        if authz.mode == "Webhook":
            from kubeletapi.server.webhook import WebhookAuthorizer  # noqa: PLC0415

            return CachedAuthorizer(
                WebhookAuthorizer(self._api_client()),
                authz.webhook.cache_authorized_ttl.seconds,
                authz.webhook.cache_unauthorized_ttl.seconds,
                self._clock,
            )
        return AlwaysAllow()

    async def close(self) -> None:
        if self._api is not None:
            await self._api.aclose()
