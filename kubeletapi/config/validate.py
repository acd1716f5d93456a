"""Semantic validation of the effective configuration, and the redacted copy for /configz.

validate() runs, before anything starts, every check the kubelet makes (kubeletrules: its
ValidateKubeletConfiguration; startrules: what it parses while starting) and then kubeletapi's own
(what it cannot honour, what it needs), and raises one ConfigError naming the file and, on each line,
the field, its flag and where the value came from.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from kubeletapi.api.quantity import Quantity, QuantityError
from kubeletapi.config.featuregates import FeatureGates
from kubeletapi.config.kubeletrules import kubelet_problems
from kubeletapi.config.model import KubeletConfiguration
from kubeletapi.config.options import NodeOptions
from kubeletapi.config.problems import HostFacts, Origin, Problem, problem, raise_if_any
from kubeletapi.config.startrules import start_problems
from kubeletapi.config.tlsnames import tls_problems
from kubeletapi.gofmt import go_quote

REDACTED = "<redacted>"
MAX_PODS = 10000  # kubeletapi's limit (the kubelet has none)
MAX_LOG_FILES = 100000  # the container shim's limit on containerLogMaxFiles


def _addresses(cfg: KubeletConfiguration) -> Iterable[Problem]:
    for name, addr in (("address", cfg.address), ("healthzBindAddress", cfg.healthz_bind_address)):
        try:
            ipaddress.ip_address(addr)
        except ValueError:
            yield problem(name, f"{name} {addr!r} is not an IP address")
    if bool(cfg.tls_cert_file) != bool(cfg.tls_private_key_file):
        yield problem(("tlsCertFile", "tlsPrivateKeyFile"), "tlsCertFile and tlsPrivateKeyFile must be given together")


def _access(cfg: KubeletConfiguration, opts: NodeOptions) -> Iterable[Problem]:
    if cfg.authentication.webhook.enabled and opts.kubeconfig is None:
        yield problem("authentication.webhook.enabled",
                      "no client provided, cannot use webhook authentication (set --kubeconfig)")
    if cfg.authorization.mode == "Webhook" and opts.kubeconfig is None:
        yield problem("authorization.mode", "no client provided, cannot use webhook authorization (set --kubeconfig)")
    if cfg.authorization.mode == "RBAC" and opts.authorization_rbac_file is None:
        yield problem("authorization.mode", "authorization mode RBAC needs --authorization-rbac-file")


def _capacity(cfg: KubeletConfiguration) -> Iterable[Problem]:
    """What kubeletapi cannot honour although the kubelet accepts it."""
    if cfg.max_pods > MAX_PODS:
        yield problem("maxPods", f"maxPods {cfg.max_pods} must be between 1 and {MAX_PODS} (kubeletapi's limit)")
    try:
        size = Quantity.parse(cfg.container_log_max_size).as_int64()
    except QuantityError:
        size = None  # the kubelet's own error (startrules)
    if size is not None and size <= 0:
        yield problem("containerLogMaxSize", f"containerLogMaxSize {go_quote(cfg.container_log_max_size)} must be "
                      "greater than 0: kubeletapi always rotates container logs (the kubelet turns rotation off for a "
                      "negative size)")
    if cfg.container_log_max_files > MAX_LOG_FILES:
        yield problem("containerLogMaxFiles", f"containerLogMaxFiles {cfg.container_log_max_files} must be at most "
                      f"{MAX_LOG_FILES} (kubeletapi's container shim keeps no more)")
    if cfg.volume_stats_agg_period.ns < 0:
        yield problem("volumeStatsAggPeriod", f"volumeStatsAggPeriod {cfg.volume_stats_agg_period} must not be "
                      "negative: kubeletapi cannot turn volume stats off (the kubelet does for a negative period)")


def problems(cfg: KubeletConfiguration, opts: NodeOptions, host: HostFacts | None = None) -> list[Problem]:
    """Every problem, the kubelet's first and in its order, then kubeletapi's."""
    gates = FeatureGates(cfg.feature_gates)
    known = host or HostFacts()
    return [*kubelet_problems(cfg, gates, known), *start_problems(cfg, gates, known), *_addresses(cfg),
            *_access(cfg, opts), *tls_problems(cfg.tls_cipher_suites, cfg.tls_min_version), *_capacity(cfg)]


def validate(cfg: KubeletConfiguration, opts: NodeOptions, origin: Origin | None = None,
             host: HostFacts | None = None) -> None:
    """Reject what the kubelet rejects and what kubeletapi cannot honour, all at once."""
    raise_if_any(problems(cfg, opts, host), origin or Origin())


def redacted(cfg: KubeletConfiguration) -> dict[str, Any]:
    """The wire form with secret material removed (header values may carry credentials), as the
    kubelet's /configz shows it: its internal configuration converted back to v1beta1, where a
    pointer the internal type holds as a plain value is never nil (enableSystemLogQuery: false)."""
    wire = cfg.to_wire()
    if "enableSystemLogQuery" not in wire:
        wire = _inserted_after(wire, "enableSystemLogHandler", "enableSystemLogQuery", False)
    if "staticPodURLHeader" in wire:
        wire["staticPodURLHeader"] = {k: [REDACTED for _ in v] for k, v in wire["staticPodURLHeader"].items()}
    return wire


def _inserted_after(wire: dict[str, Any], anchor: str, key: str, value: Any) -> dict[str, Any]:
    """`wire` with `key` right after `anchor` (the v1beta1 field order), or last without it."""
    out: dict[str, Any] = {}
    for name, item in wire.items():
        out[name] = item
        if name == anchor:
            out[key] = value
    out.setdefault(key, value)
    return out
