"""Node options: the flags that are not part of KubeletConfiguration (the kubelet's KubeletFlags)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from kubeletapi.config.durations import Duration
from kubeletapi.errors import ConfigError

RUNTIMES = ("process", "remote")
NETWORK_PLUGINS = ("", "cni")
DEFAULT_HOUSEKEEPING = Duration.parse("10s")
DEFAULT_INFLUXDB_TIMEOUT = Duration.parse("5s")
NO_TTL = Duration(0)


@dataclass(frozen=True)
class NodeOptions:
    config_file: Path | None = None
    hostname_override: str = ""
    node_ip: str = ""
    root_dir: Path = Path("/var/lib/kubelet")
    cert_dir: Path | None = None
    kubeconfig: Path | None = None
    # A kubeconfig with bootstrap credentials: the node's client certificate is requested with it
    # when --kubeconfig has none that works, and --kubeconfig written for it.
    bootstrap_kubeconfig: Path | None = None
    node_labels: Mapping[str, str] = field(default_factory=dict)
    container_runtime: str = "process"
    housekeeping_interval: Duration = DEFAULT_HOUSEKEEPING
    token_auth_file: Path | None = None
    authorization_rbac_file: Path | None = None
    influxdb: InfluxDBOptions | None = None  # the InfluxDB sink, off unless --influxdb-url
    cni_bin_dirs: tuple[Path, ...] = (Path("/opt/cni/bin"),)
    cni_conf_dir: Path = Path("/etc/cni/net.d")
    pod_bridge: str = ""  # "": derived from the root dir (effective_pod_bridge)
    # "cni": in apiserver mode the Node's spec.podCIDR becomes the pod network (the old kubelet's
    # --network-plugin); "": pods use the node's network unless --pod-cidr is given.
    network_plugin: str = ""
    # Container GC (the kubelet's deprecated flags, not in KubeletConfiguration): the minimum age
    # of a dead container before it may go, how many dead instances each container keeps (<0:
    # no limit), how many dead containers the node keeps in all (<0: no limit).
    minimum_container_ttl: Duration = NO_TTL
    max_dead_per_container: int = 1
    max_dead_containers: int = -1
    # --runonce: run the static pods once, report, remove them and exit (kubelet.runonce).
    run_once: bool = False
    # The machine's NUMA nodes (the memory manager's topology); a fixture tree in tests.
    numa_node_root: Path = Path("/sys/devices/system/node")
    # PUT/POST /submittedpods on the secure port: the `api-http` pod source (pods/submission.py).
    enable_pod_submission: bool = False
    node_log_dir: Path = Path("/var/log")  # what /logs/ serves (the kubelet's nodeLogDir)
    # --ui-port: the web UI alone on a plain-HTTP port of --address (cAdvisor's 4194); 0: off.
    ui_port: int = 0

    def __post_init__(self) -> None:
        if self.bootstrap_kubeconfig is not None and self.kubeconfig is None:
            raise ConfigError("--bootstrap-kubeconfig needs --kubeconfig: the path where the bootstrap writes "
                              "the node's kubeconfig")
        if self.container_runtime not in RUNTIMES:
            raise ConfigError(
                f"--container-runtime must be one of {', '.join(RUNTIMES)}, got {self.container_runtime!r}"
            )
        if self.network_plugin not in NETWORK_PLUGINS:
            raise ConfigError(f"--network-plugin must be one of {', '.join(map(repr, NETWORK_PLUGINS))}, "
                              f"got {self.network_plugin!r}")
        if self.minimum_container_ttl.ns < 0:
            raise ConfigError("--minimum-container-ttl-duration must not be negative, "
                              f"got {self.minimum_container_ttl}")
        if not Duration.parse("1s") <= self.housekeeping_interval <= Duration.parse("15m"):
            raise ConfigError(
                f"--housekeeping-interval must be between 1s and 15m, got {self.housekeeping_interval}"
            )

    @property
    def effective_pod_bridge(self) -> str:
        """--pod-bridge, else `kla` + 8 hex of the root dir's hash: agents with their own root dirs
        (parallel tests) never share a bridge by accident."""
        if self.pod_bridge:
            return self.pod_bridge
        return "kla" + hashlib.sha256(str(self.root_dir.resolve()).encode()).hexdigest()[:8]

    @property
    def effective_cert_dir(self) -> Path:
        """--cert-dir, defaulting to <root-dir>/pki as in the kubelet."""
        return self.cert_dir if self.cert_dir is not None else self.root_dir / "pki"


@dataclass(frozen=True)
class InfluxDBOptions:
    """--influxdb-*: where the InfluxDB sink writes (1.x /write, or 2.x /api/v2/write with a bucket)."""

    url: str
    database: str = "k8s"
    retention_policy: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)
    org: str = ""
    bucket: str = ""
    batch_size: int = 5000
    buffer_size: int = 50_000
    timeout: Duration = DEFAULT_INFLUXDB_TIMEOUT

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ConfigError(f"--influxdb-url must be an http(s) URL without query, got {self.url!r}")
        if parts.username is not None or parts.password is not None:  # it is logged: keep secrets out
            raise ConfigError("--influxdb-url must not carry credentials: use --influxdb-username and "
                              "--influxdb-password (or $KUBELETAPI_INFLUXDB_PASSWORD)")
        try:
            parts.port  # noqa: B018 - validates the port
        except ValueError as exc:
            raise ConfigError(f"--influxdb-url {self.url!r}: {exc}") from exc
        if self.v2 and not self.org:
            raise ConfigError("--influxdb-bucket (InfluxDB 2.x) needs --influxdb-org")
        if not self.v2 and not self.database:
            raise ConfigError("--influxdb-database must not be empty")
        for flag, value in (("--influxdb-batch-size", self.batch_size), ("--influxdb-buffer-size", self.buffer_size)):
            if value < 1:
                raise ConfigError(f"{flag} must be at least 1, got {value}")
        if not Duration.parse("100ms") <= self.timeout <= Duration.parse("5m"):
            raise ConfigError(f"--influxdb-timeout must be between 100ms and 5m, got {self.timeout}")

    @property
    def effective_batch_size(self) -> int:
        """A batch never exceeds the buffer (a small --influxdb-buffer-size alone is fine)."""
        return min(self.batch_size, self.buffer_size)

    @property
    def v2(self) -> bool:
        """InfluxDB 2.x's API (org + bucket + token) rather than 1.x's database."""
        return bool(self.bucket)
