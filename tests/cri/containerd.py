"""A private containerd for the CRI tests: its own root, state, opt and CNI dirs and socket.

Never the system's containerd: everything lives under one temporary work directory (short, so the
socket path stays below the 108 bytes of sun_path), the process is ours by PID and is stopped by
that PID. The configuration carries the settings these machines need (see the project's CRI
reference): restrict_oom_score_adj (no process may lower its oom_score_adj here), overlayfs, runc
with cgroupfs (no systemd), the locally built pause image as sandbox image, a streaming server
on loopback, and a registry hosts directory of its own (`hosts_dir`, containerd's certs.d layout:
<host:port>/hosts.toml, read at each pull; empty unless a test adds a registry to it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.cri.images import ImageTar
from tests.daemon import log_tail, terminate, wait_answering

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 15.0
# containerd 1.6's shims put their sockets in /run/containerd/s whatever the config says: when this
# run created that directory, stop() removes it again (empty directories only, never anything else).
SHIM_SOCKET_DIRS = (Path("/run/containerd/s"), Path("/run/containerd"))

_CONFIG = """\
version = 2
root = "{work}/root"
state = "{work}/state"
oom_score = 0

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{work}/ttrpc.sock"

[debug]
  level = "{log_level}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{work}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:3.9"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_tls_streaming = false

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{work}/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{work}/cni"

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{work}/certs.d"
"""


def missing_tools() -> list[str]:
    return [tool for tool in ("containerd", "ctr", "runc") if shutil.which(tool) is None]


class PrivateContainerd:
    """start(), import_images(), then stop(); `endpoint` is what a CRI client dials."""

    def __init__(self, log_level: str = "warn", wrapper: Sequence[str] = ()) -> None:
        """`wrapper`: a command prefix containerd runs under (e.g. nsenter into a test network
        namespace: its CNI then makes the pods' bridge and veths there)."""
        self.wrapper = list(wrapper)  # may be set until start()
        self.work = Path(tempfile.mkdtemp(prefix="kcri-", dir="/tmp"))
        self.socket = self.work / "c.sock"
        self.log_path = self.work / "containerd.log"
        self._log_level = log_level
        self.hosts_dir = self.work / "certs.d"
        self._proc: subprocess.Popen[bytes] | None = None
        self._created_dirs = [d for d in SHIM_SOCKET_DIRS if not d.exists()]

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> None:
        for d in ("root", "state", "opt", "cni", "runc", "certs.d"):
            (self.work / d).mkdir(exist_ok=True)  # a restart keeps everything
        config = self.work / "config.toml"
        config.write_text(_CONFIG.format(work=self.work, socket=self.socket, log_level=self._log_level))
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [*self.wrapper, "containerd", "--config", str(config)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True,  # a ^C of the test run reaches it only through stop()
            )
        wait_answering(self._proc, lambda: self._ctr("version").returncode == 0, START_TIMEOUT_S, "containerd",
                       self.log_path, self.stop)

    def kill_daemon(self) -> None:
        """SIGKILL containerd itself, as a crash would: its shims and containers live on, and
        start() brings it back on the same state."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(STOP_TIMEOUT_S)

    def import_images(self, images: list[ImageTar]) -> None:
        for image in images:
            result = self._ctr("-n", "k8s.io", "images", "import", "--base-name", image.name, str(image.path))
            if result.returncode != 0:
                raise RuntimeError(f"ctr images import {image.path} failed: {result.stderr.decode().strip()}")

    def tag(self, source: str, target: str) -> None:
        """A second name for an image (e.g. docker.io/library/busybox:1.36, as manifests name it)."""
        result = self._ctr("-n", "k8s.io", "images", "tag", "--force", source, target)
        if result.returncode != 0:
            raise RuntimeError(f"ctr images tag {source} {target} failed: {result.stderr.decode().strip()}")

    def push(self, ref: str, user: str) -> None:
        """Push a local image to its registry as `user` ("name:password"), trusting what the
        registry's hosts.toml in `hosts_dir` says (its CA)."""
        result = self._ctr("-n", "k8s.io", "images", "push", "--hosts-dir", str(self.hosts_dir), "--user", user,
                           ref)
        if result.returncode != 0:
            raise RuntimeError(f"ctr images push {ref} failed: {result.stderr.decode().strip()}")

    def remove_image(self, ref: str) -> None:
        """Forget an image name (its content goes with the next garbage collection)."""
        result = self._ctr("-n", "k8s.io", "images", "rm", "--sync", ref)
        if result.returncode != 0:
            raise RuntimeError(f"ctr images rm {ref} failed: {result.stderr.decode().strip()}")

    def remove_images(self, prefix: str) -> None:
        """Forget every image name that starts with `prefix` (a pull by tag also leaves the
        repository's digest name, which containerd would report as the image's ID afterwards)."""
        listed = self._ctr("-n", "k8s.io", "images", "ls", "-q")
        for ref in listed.stdout.decode().split():
            if ref.startswith(prefix):
                self.remove_image(ref)

    def stop(self) -> None:
        """SIGTERM our containerd (by PID) and wait until it has exited, then drop the work dir."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            self._kill_tasks()
        terminate(proc, STOP_TIMEOUT_S)
        self._unmount_leftovers()
        shutil.rmtree(self.work, ignore_errors=True)
        for d in self._created_dirs:  # deepest first; a directory someone else uses is not empty
            with contextlib.suppress(OSError):
                d.rmdir()

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log_path, lines)

    def _kill_tasks(self) -> None:
        """Whatever a test left running (its clean-up failed): kill and delete every task, so no
        container and no shim outlives this containerd."""
        listed = self._ctr("-n", "k8s.io", "tasks", "ls", "-q")
        for task in listed.stdout.decode().split():
            self._ctr("-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", "--all", task)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for task in listed.stdout.decode().split():
            while self._ctr("-n", "k8s.io", "tasks", "delete", task).returncode != 0 and time.monotonic() < deadline:
                time.sleep(0.05)

    def _ctr(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["ctr", "-a", str(self.socket), *args], capture_output=True, check=False,
                              timeout=60)

    def _unmount_leftovers(self) -> None:
        """Mounts of sandboxes or snapshots still under the work dir (a test that crashed before its
        clean-up): unmount them, deepest first, so the work dir can be removed."""
        prefix = f"{self.work}/"
        with open("/proc/self/mounts") as mounts:
            points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
        for point in sorted(points, key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def is_root() -> bool:
    return os.geteuid() == 0
