"""Node options: the flags that are not part of KubeletConfiguration (the kubelet's KubeletFlags)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubeletapi.config.durations import Duration
from kubeletapi.errors import ConfigError

RUNTIMES = ("process", "remote")
DEFAULT_HOUSEKEEPING = Duration.parse("10s")


@dataclass(frozen=True)
class NodeOptions:
    config_file: Path | None = None
    hostname_override: str = ""
    node_ip: str = ""
    root_dir: Path = Path("/var/lib/kubelet")
    cert_dir: Path | None = None
    kubeconfig: Path | None = None
    container_runtime: str = "process"
    housekeeping_interval: Duration = DEFAULT_HOUSEKEEPING
    token_auth_file: Path | None = None
    authorization_rbac_file: Path | None = None

    def __post_init__(self) -> None:
        if self.container_runtime not in RUNTIMES:
            raise ConfigError(
                f"--container-runtime must be one of {', '.join(RUNTIMES)}, got {self.container_runtime!r}"
            )
        if not Duration.parse("1s") <= self.housekeeping_interval <= Duration.parse("15m"):
            raise ConfigError(
                f"--housekeeping-interval must be between 1s and 15m, got {self.housekeeping_interval}"
            )

    @property
    def effective_cert_dir(self) -> Path:
        """--cert-dir, defaulting to <root-dir>/pki as in the kubelet."""
        return self.cert_dir if self.cert_dir is not None else self.root_dir / "pki"
