"""A private image registry on loopback that requires authentication, for the imagePullSecrets test.

The distribution registry v2 (Debian's docker-registry, /usr/bin/docker-registry) with a config
of its own: storage in its work dir, htpasswd auth (bcrypt, the only hash it accepts) and TLS
with a serving certificate from the cluster's CA, on 127.0.0.1 and a free port. Never the system's
registry service (the package's config listens on :5000): this process is ours by PID and is
stopped by that PID. `trust(hosts_dir)` tells a containerd (its registry config_path) to reach it
with that CA; nothing is pulled from or pushed to anywhere but this loopback address.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import ssl
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import bcrypt
import httpx

from tests.cluster.pki import ClusterPKI
from tests.daemon import log_tail, terminate, wait_answering

BINARY = "docker-registry"
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
LOOPBACK = "127.0.0.1"

_CONFIG = """\
version: 0.1
log:
  level: info
  formatter: json
storage:
  filesystem:
    rootdirectory: {work}/data
  delete:
    enabled: true
http:
  addr: {addr}
  tls:
    certificate: {cert}
    key: {key}
auth:
  htpasswd:
    realm: kubeletapi-test-registry
    path: {work}/htpasswd
"""


def missing() -> str:
    return "" if shutil.which(BINARY) else f"{BINARY} (Debian: docker-registry; `make deb` installs it)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


class PrivateRegistry:
    """start(), then stop(); `host` ("127.0.0.1:<port>") is what image references start with."""

    def __init__(self, work: Path, pki: ClusterPKI, users: Mapping[str, str]) -> None:
        self.work = work
        self.log_path = work / "registry.log"
        self.ca = pki.ca.cert
        self.host = f"{LOOPBACK}:{_free_port()}"
        work.mkdir(parents=True, exist_ok=True)
        (work / "data").mkdir(exist_ok=True)
        (work / "htpasswd").write_text("".join(
            f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=5)).decode()}\n"
            for user, password in users.items()))
        pair = pki.issue("registry", "kubeletapi-test-registry", server_ips=[LOOPBACK])
        self._config = work / "config.yml"
        self._config.write_text(_CONFIG.format(work=work, addr=self.host, cert=pair.cert, key=pair.key))
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen([BINARY, "serve", str(self._config)], stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=log, start_new_session=True)
        wait_answering(self._proc, self._answers, START_TIMEOUT_S, BINARY, self.log_path, self.stop)

    def _answers(self) -> bool:
        """The API root answers (401 without credentials: the auth is on)."""
        try:
            response = httpx.get(f"https://{self.host}/v2/", verify=ssl.create_default_context(cafile=str(self.ca)),
                                 timeout=2)
        except httpx.HTTPError:
            return False
        return response.status_code == 401

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        terminate(proc, STOP_TIMEOUT_S)

    def trust(self, hosts_dir: Path) -> None:
        """Tell a containerd with registry config_path `hosts_dir` to reach this registry by TLS
        with the cluster's CA (containerd's certs.d layout, read at each pull)."""
        host_dir = hosts_dir / self.host
        host_dir.mkdir(parents=True, exist_ok=True)
        # containerd 1.6 refuses a hosts.toml without a [host] table ("invalid `host` tree");
        # the server (tried last) is the same one, with the same CA
        (host_dir / "hosts.toml").write_text(
            f'server = "https://{self.host}"\nca = "{self.ca}"\n\n[host."https://{self.host}"]\n'
            f'  capabilities = ["pull", "resolve", "push"]\n  ca = "{self.ca}"\n')

    def requests(self) -> list[dict[str, Any]]:
        """The registry's "response completed" log entries (method, uri, status, user)."""
        entries = []
        with contextlib.suppress(OSError):
            for line in self.log_path.read_text(errors="replace").splitlines():
                with contextlib.suppress(ValueError):
                    entry = json.loads(line)
                    if isinstance(entry, dict) and entry.get("msg") == "response completed":
                        entries.append(entry)
        return entries

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log_path, lines)
