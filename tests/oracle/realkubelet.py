"""The real kubelet, standalone, as the oracle's reference node.

Built by `make cluster-bin` from the same k8s.io/kubernetes module as the test control plane. It
runs on loopback with its own root dir, pod logs dir, static pod dir, ports and cgroup root, on a
private containerd of its own, with authentication by client certificate only (webhook off,
authorization AlwaysAllow: there is no API server to ask). Every side effect it has on the host is
undone by stop():

- its root dir is made a shared bind mount of itself (kubelet.go setupDataDirs): unmounted;
- the kernel tunables it sets (container_manager_linux.go setupKernelTunables: vm.overcommit_memory,
  kernel.panic, kernel.panic_on_oops, ...) are written back;
- its cgroup root (created here, cgroupsPerQOS under it) is removed with everything below it;
- iptables: it would add KUBE-FIREWALL and hint chains to the host's tables; its PATH holds no
  iptables (kubelet_network_linux.go: "No iptables support on this system"), so it adds none.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from tests.cri.cleanup import remove_cgroup_root
from tests.daemon import log_tail, terminate, wait_answering
from tests.helpers import LOOPBACK, free_ports

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
NODE_NAME = "testnode"
# setupKernelTunables' keys (utilsysctl names), restored after the run
TUNABLES = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
            "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes")


@dataclass(frozen=True)
class Serving:
    """The serving certificate and the client CA the kubelet is given (PEM paths)."""

    cert: Path
    key: Path
    client_ca: Path


def read_tunables() -> dict[str, str]:
    return {name: (Path("/proc/sys") / name).read_text().strip() for name in TUNABLES}


def restore_tunables(saved: dict[str, str]) -> None:
    for name, value in saved.items():
        path = Path("/proc/sys") / name
        if path.read_text().strip() != value:
            path.write_text(value)


class RealKubelet:
    """start() then stop(); `port(listener)` and `url()` as for kubeletapi's agents."""

    def __init__(self, binary: Path, work: Path, endpoint: str, manifests: Path, serving: Serving,
                 extra_config: dict[str, object] | None = None) -> None:
        self.binary = binary
        self.work = work
        self.endpoint = endpoint
        self.manifests = manifests
        self.serving = serving
        self.root_dir = work / "root"
        self.logs_dir = work / "logs"
        self.log_path = work / "kubelet.log"
        self.cgroup_root = f"/kubeletapi-oracle-{work.name[-12:]}-{os.getpid()}"
        secure, read_only, healthz = free_ports(3)
        self.ports = {"secure": secure, "read-only": read_only, "healthz": healthz}
        self.extra_config = extra_config or {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._tunables = read_tunables()

    def port(self, listener: str) -> int:
        return self.ports[listener]

    def url(self, listener: str = "secure", path: str = "/") -> str:
        scheme = "https" if listener == "secure" else "http"
        return f"{scheme}://{LOOPBACK}:{self.ports[listener]}{path}"

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def config(self) -> dict[str, object]:
        """The KubeletConfiguration: the kubelet's defaults except what standalone on loopback needs."""
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": LOOPBACK,
            "port": self.ports["secure"],
            "readOnlyPort": self.ports["read-only"],
            "healthzBindAddress": LOOPBACK,
            "healthzPort": self.ports["healthz"],
            "staticPodPath": str(self.manifests),
            "fileCheckFrequency": "1s",
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": self.cgroup_root,
            "containerRuntimeEndpoint": self.endpoint,
            "podLogsDir": str(self.logs_dir),
            "tlsCertFile": str(self.serving.cert),
            "tlsPrivateKeyFile": str(self.serving.key),
            "authentication": {"x509": {"clientCAFile": str(self.serving.client_ca)},
                               "webhook": {"enabled": False}, "anonymous": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "failSwapOn": False,
            # the host's disks and memory are shared with the rest of the suite: never evict here
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                             "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
            # volume stats within the oracle's life (the default, 1m, jittered up to 2m, is longer)
            "volumeStatsAggPeriod": "2s",
            **self.extra_config,
        }

    def args(self) -> list[str]:
        return ["--config", str(self.work / "kubelet.yaml"), "--root-dir", str(self.root_dir),
                "--cert-dir", str(self.work / "pki"), "--hostname-override", NODE_NAME,
                "--v", "2",
                # cAdvisor's own containerd client (deprecated flag, default /run/containerd/containerd.sock):
                # without it cAdvisor sees the private containerd's containers as bare cgroups, unlabelled
                "--containerd", self.endpoint.removeprefix("unix://")]

    def start(self) -> None:
        for d in (self.root_dir, self.logs_dir, self.work / "pki"):
            d.mkdir(parents=True, exist_ok=True)
        for mount in _cgroup_mounts():
            (mount / self.cgroup_root.strip("/")).mkdir(exist_ok=True)
        (self.work / "kubelet.yaml").write_text(yaml.safe_dump(self.config()))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.work)}  # no /usr/sbin: no iptables (above)
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen([str(self.binary), *self.args()], stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=log, env=env, start_new_session=True)
        wait_answering(self._proc, self._healthy, START_TIMEOUT_S, "kubelet", self.log_path, self.stop)

    def _healthy(self) -> bool:
        try:
            return httpx.get(self.url("healthz", "/healthz"), timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        """SIGTERM by PID (SIGKILL after a while), then undo what it did to the host (see above).
        Its pods stay in its containerd: the caller removes them (purge_cri) and then the cgroups."""
        proc, self._proc = self._proc, None
        terminate(proc, STOP_TIMEOUT_S)
        _unmount_under(self.work)
        restore_tunables(self._tunables)

    def remove_cgroups(self) -> None:
        remove_cgroup_root(self.cgroup_root)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)


def _cgroup_mounts() -> Sequence[Path]:
    from kubeletapi.cgroups import detect
    return detect().mount_points


def _unmount_under(work: Path) -> None:
    prefix = f"{work}/"
    with open("/proc/self/mounts") as mounts:
        points = [line.split()[1] for line in mounts if f"{line.split()[1]}/".startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        with contextlib.suppress(OSError):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
