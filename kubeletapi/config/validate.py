"""Semantic validation of the effective configuration, and the redacted copy for /configz."""

from __future__ import annotations

import ipaddress
from typing import Any

from kubeletapi.config.model import KubeletConfiguration
from kubeletapi.config.options import NodeOptions
from kubeletapi.config.tlsnames import tls_problems
from kubeletapi.errors import ConfigError

REDACTED = "<redacted>"


def validate(cfg: KubeletConfiguration, opts: NodeOptions) -> None:
    """Reject what the kubelet rejects (and what kubeletapi cannot honour), all at once."""
    problems = []
    if not 1 <= cfg.port <= 65535:
        problems.append(f"port (--port) {cfg.port} must be between 1 and 65535, inclusive")
    for name, port in (("readOnlyPort (--read-only-port)", cfg.read_only_port),
                       ("healthzPort (--healthz-port)", cfg.healthz_port)):
        if not 0 <= port <= 65535:
            problems.append(f"{name} {port} must be between 0 and 65535, inclusive")
    for name, addr in (("address", cfg.address), ("healthzBindAddress", cfg.healthz_bind_address)):
        try:
            ipaddress.ip_address(addr)
        except ValueError:
            problems.append(f"{name} {addr!r} is not an IP address")
    if bool(cfg.tls_cert_file) != bool(cfg.tls_private_key_file):
        problems.append("tlsCertFile and tlsPrivateKeyFile must be given together")
    if not 1 <= cfg.max_pods <= 10000:
        problems.append(f"maxPods {cfg.max_pods} must be between 1 and 10000")
    if cfg.authentication.webhook.enabled and opts.kubeconfig is None:
        problems.append("no client provided, cannot use webhook authentication (set --kubeconfig)")
    if cfg.authorization.mode == "Webhook" and opts.kubeconfig is None:
        problems.append("no client provided, cannot use webhook authorization (set --kubeconfig)")
    if cfg.authorization.mode == "RBAC" and opts.authorization_rbac_file is None:
        problems.append("authorization mode RBAC needs --authorization-rbac-file")
    problems += tls_problems(cfg.tls_cipher_suites, cfg.tls_min_version)
    if problems:
        raise ConfigError("invalid configuration: " + "; ".join(problems))


def redacted(cfg: KubeletConfiguration) -> dict[str, Any]:
    """The wire form with secret material removed (header values may carry credentials)."""
    wire = cfg.to_wire()
    if "staticPodURLHeader" in wire:
        wire["staticPodURLHeader"] = {k: [REDACTED for _ in v] for k, v in wire["staticPodURLHeader"].items()}
    return wire
