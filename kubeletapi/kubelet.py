"""The composition root: builds every component from the configuration and implements Host.

Start-up order: node identity, PKI, authenticators and authorizer, metrics registries, apps,
then every listener is bound (so a port in use fails before anything is served), then served.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography import x509
from prometheus_client import CollectorRegistry

from kubeletapi import nodeinfo
from kubeletapi.clock import Clock, RealClock
from kubeletapi.config import KubeletConfiguration, NodeOptions, redacted
from kubeletapi.errors import StartupError
from kubeletapi.health import HealthCheck, LogFlushMonitor, PingCheck, SyncLoopCheck
from kubeletapi.kubeconfig import load_kubeconfig, write_kubeconfig
from kubeletapi.metrics.kubelet import KubeletMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.pki import NodePKI, ensure_pki
from kubeletapi.server.app import create_app, create_healthz_app
from kubeletapi.server.auth import Security
from kubeletapi.server.authn import (
    CachedTokenAuthenticator,
    RequestAuthenticator,
    TokenAuthenticator,
    TokenFile,
    X509Authenticator,
)
from kubeletapi.server.authz import AlwaysAllow, Authorizer, CachedAuthorizer
from kubeletapi.server.listeners import Listener, ListenerSpec
from kubeletapi.server.rbac import RBACAuthorizer
from kubeletapi.server.tls import server_context
from kubeletapi.server.webhook import APIClient, WebhookAuthorizer, WebhookTokenAuthenticator

log = logging.getLogger(__name__)
SYNC_LOOP_PERIOD_S = 1.0


class Kubelet:
    """One node agent: call start(), then stop()."""

    def __init__(self, cfg: KubeletConfiguration, opts: NodeOptions, clock: Clock | None = None) -> None:
        self.cfg = cfg.model_copy(deep=True)  # effective values (generated TLS files) are filled in
        self.opts = opts
        self.clock: Clock = clock or RealClock()
        self._node_name = nodeinfo.node_name(opts.hostname_override)
        self.node_ips = nodeinfo.node_ips(opts.node_ip)
        self.pki: NodePKI | None = None
        self.listeners: dict[str, Listener] = {}
        self._api: APIClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._sync_entry = 0.0
        self._configz: dict[str, Any] | None = None
        self._sync_handlers: list[Callable[[], Awaitable[None]]] = []
        self._serving_not_after: float | None = None
        # Real time on purpose: the flush thread waits in real time, whatever clock runs the loops.
        self._log_monitor = LogFlushMonitor(RealClock())
        self._checks: list[HealthCheck] = [
            PingCheck(),
            self._log_monitor,
            SyncLoopCheck(self.clock, cfg.sync_frequency.seconds, lambda: self._sync_entry),
        ]
        self._registries: dict[str, CollectorRegistry] = {"metrics": new_registry()}

    # --- Host -------------------------------------------------------------------------------
    @property
    def node_name(self) -> str:
        return self._node_name

    def health_checks(self) -> Sequence[HealthCheck]:
        return self._checks

    def configz(self) -> Mapping[str, Any]:
        if self._configz is None:  # the configuration is fixed once the listeners are up
            self._configz = {"kubeletconfig": redacted(self.cfg)}
        return self._configz

    def metrics_registry(self, endpoint: str) -> CollectorRegistry:
        return self._registries[endpoint]

    # --- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Build and bind everything; raise StartupError (nothing left running) on failure."""
        try:
            specs = self._listener_specs()
            for spec in specs:
                self.listeners[spec.name] = Listener(spec)
            for listener in self.listeners.values():
                await listener.start()
        except BaseException:
            await self.stop()
            raise
        if self.cfg.static_pod_path or self.cfg.static_pod_url:
            log.warning("static pod sources are not implemented in this version: staticPodPath and "
                        "staticPodURL are recorded in /configz but no pods are started")
        self._log_monitor.start()
        self._tasks.append(asyncio.create_task(self._sync_loop(), name="sync-loop"))
        log.info("kubeletapi started on node %s", self.node_name)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        await asyncio.gather(*(listener.stop() for listener in self.listeners.values()))
        self._log_monitor.stop()
        if self._api is not None:
            await self._api.aclose()

    def port(self, name: str) -> int:
        return self.listeners[name].port

    # --- wiring -------------------------------------------------------------------------------
    def _listener_specs(self) -> list[ListenerSpec]:
        cfg = self.cfg
        cert, key, client_ca = self._tls_files()
        metrics = KubeletMetrics(self._registries["metrics"], self.node_name, self._serving_ttl)
        self._serving_not_after = _not_after(cert)
        specs = []
        if cfg.enable_server:
            security = Security(self._authenticator(client_ca), self._authorizer(), self.node_name)
            app = create_app(self, "secure", metrics, security, cfg.enable_debugging_handlers)
            ctx = server_context(cert, key, client_ca, cfg.tls_min_version)
            specs.append(ListenerSpec("secure", cfg.address, cfg.port, app, ctx))
        if cfg.read_only_port > 0:
            app = create_app(self, "readonly", metrics)
            specs.append(ListenerSpec("read-only", cfg.address, cfg.read_only_port, app))
        if cfg.healthz_port > 0:
            specs.append(ListenerSpec("healthz", cfg.healthz_bind_address, cfg.healthz_port, create_healthz_app(self)))
        return specs

    def _tls_files(self) -> tuple[Path, Path, Path | None]:
        """Serving certificate, key and client CA: given, or generated in --cert-dir."""
        cfg = self.cfg
        client_ca = Path(cfg.authentication.x509.client_ca_file) if cfg.authentication.x509.client_ca_file else None
        if cfg.tls_cert_file:
            return Path(cfg.tls_cert_file), Path(cfg.tls_private_key_file), client_ca
        pki = NodePKI.under(self.opts.effective_cert_dir)
        now = dt.datetime.fromtimestamp(self.clock.now(), dt.UTC)
        try:
            ensure_pki(pki, self.node_name, self.node_ips, now, write_token=self.opts.token_auth_file is None)
            write_kubeconfig(
                pki.kubeconfig, "kubeletapi", self.server_url(), pki.ca_crt.read_bytes(),
                pki.admin_crt.read_bytes(), pki.admin_key.read_bytes(),
            )
        except OSError as exc:
            raise StartupError(f"cannot write certificates to {pki.cert_dir}: {exc.strerror}") from exc
        self.pki = pki
        # As the kubelet's InitializeTLS: /configz shows the files actually served with.
        self.cfg.tls_cert_file = str(pki.serving_crt)
        self.cfg.tls_private_key_file = str(pki.serving_key)
        if client_ca is None:
            client_ca = pki.ca_crt
            self.cfg.authentication.x509.client_ca_file = str(client_ca)
        return pki.serving_crt, pki.serving_key, client_ca

    def server_url(self) -> str:
        """https://<address>:<port> for clients on this host (loopback for a wildcard address)."""
        addr = ipaddress.ip_address(self.cfg.address)
        if addr.is_unspecified:
            addr = ipaddress.ip_address("::1" if addr.version == 6 else "127.0.0.1")
        host = f"[{addr}]" if addr.version == 6 else str(addr)
        return f"https://{host}:{self.cfg.port}"

    def _api_client(self) -> APIClient:
        if self._api is None:
            assert self.opts.kubeconfig is not None  # enforced by config validation
            self._api = APIClient(load_kubeconfig(self.opts.kubeconfig))
        return self._api

    def _authenticator(self, client_ca: Path | None) -> RequestAuthenticator:
        authn = self.cfg.authentication
        tokens: list[TokenAuthenticator] = []
        token_file = self.opts.token_auth_file or (self.pki.tokens if self.pki else None)
        if token_file is not None:
            tokens.append(TokenFile.load(token_file))
        if authn.webhook.enabled:
            webhook = WebhookTokenAuthenticator(self._api_client())
            tokens.append(CachedTokenAuthenticator(webhook, authn.webhook.cache_ttl.seconds, self.clock))
        x509_auth = X509Authenticator(self.clock) if client_ca is not None else None
        return RequestAuthenticator(x509_auth, tokens, authn.anonymous.enabled)

    def _authorizer(self) -> Authorizer:
        authz = self.cfg.authorization
        if authz.mode == "RBAC":
            assert self.opts.authorization_rbac_file is not None  # enforced by config validation
            return RBACAuthorizer.load(self.opts.authorization_rbac_file)
        if authz.mode == "Webhook":
            return CachedAuthorizer(
                WebhookAuthorizer(self._api_client()),
                authz.webhook.cache_authorized_ttl.seconds,
                authz.webhook.cache_unauthorized_ttl.seconds,
                self.clock,
            )
        return AlwaysAllow()

    def _serving_ttl(self) -> float:
        if self._serving_not_after is None:
            return float("inf")
        return self._serving_not_after - self.clock.now()

    def add_sync_handler(self, handler: Callable[[], Awaitable[None]]) -> None:
        """Run `handler` on every sync-loop iteration (the pod manager plugs in here)."""
        self._sync_handlers.append(handler)

    async def _sync_loop(self) -> None:
        """The kubelet's main loop: every iteration records its entry time (the syncloop health
        check) and runs the sync handlers; a handler that hangs makes /healthz fail."""
        while True:
            self._sync_entry = self.clock.monotonic()
            for handler in self._sync_handlers:
                try:
                    await handler()
                except Exception:
                    log.exception("sync handler %s failed", getattr(handler, "__qualname__", handler))
            await self.clock.sleep(SYNC_LOOP_PERIOD_S)


def _not_after(cert_file: Path) -> float | None:
    try:
        return x509.load_pem_x509_certificate(cert_file.read_bytes()).not_valid_after_utc.timestamp()
    except (OSError, ValueError):
        return None  # server_context() reports the unreadable file
