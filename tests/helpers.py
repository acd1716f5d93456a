"""Test harness: real agents on loopback, TLS clients, and certificate helpers."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubeletapi.cli import configuration
from kubeletapi.clock import Clock
from kubeletapi.gofmt import go_float
from kubeletapi.kubelet import Kubelet
from kubeletapi.runtime.streaming import STDOUT, StreamSession
from kubeletapi.server.limits import Limits
from tests.cri.cleanup import cgroup_pids, remove_cgroup_root

LOOPBACK = "127.0.0.1"


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_PICKER = random.Random()  # spreading ports, not security


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports, below the kernel's ephemeral range: a port the kernel
    hands out with bind(0) may be taken as the source port of any outgoing connection before the
    agent binds it (seen under load), one below that range only by a server binding it."""
    picked: list[int] = []
    held: list[socket.socket] = []
    try:
        while len(picked) < count:
            port = _PICKER.randrange(10000, _ephemeral_low())
            sock = socket.socket()
            try:
                sock.bind((LOOPBACK, port))
            except OSError:
                sock.close()
                continue
            held.append(sock)
            picked.append(port)
        return picked
    finally:
        for sock in held:
            sock.close()


def free_port() -> int:
    return free_ports(1)[0]


def agent_args(tmp: Path, *extra: str, read_only: bool = True, healthz: bool = True) -> list[str]:
    """Flags for an agent on random loopback ports with its state under `tmp` and a private
    cgroup root (removed by `purge`)."""
    secure, health, read = free_ports(3)
    args = [
        "--cgroup-root", f"/kubeletapi-test-{tmp.name[-20:]}-{os.getpid()}",
        "--address", LOOPBACK, "--port", str(secure),
        "--healthz-bind-address", LOOPBACK, "--healthz-port", str(health if healthz else 0),
        "--read-only-port", str(read if read_only else 0),
        "--root-dir", str(tmp / "root"), "--cert-dir", str(tmp / "certs"),
        "--pod-logs-dir", str(tmp / "logs"), "--hostname-override", "testnode", "--node-ip", LOOPBACK,
    ]
    return [*args, *extra]


class LoopThread:
    """An asyncio loop on a daemon thread, for agents driven from synchronous tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: object, timeout: float = 30) -> object:
        fut: Future[object] = asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]
        return fut.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class Listening(ABC):
    """Listeners on loopback (secure, read-only, healthz) and clients for them, whatever serves
    them: a whole agent (Agent) or the HTTP layer alone around a FakeHost (tests.fakehost)."""

    @property
    @abstractmethod
    def certs(self) -> Path:
        """The --cert-dir holding the generated node CA, admin certificate and tokens.csv."""

    @abstractmethod
    def port(self, listener: str) -> int:
        """The bound port of a listener ("secure", "read-only" or "healthz")."""

    def url(self, listener: str = "secure", path: str = "/") -> str:
        scheme = "https" if listener == "secure" else "http"
        return f"{scheme}://{LOOPBACK}:{self.port(listener)}{path}"

    def token(self) -> str:
        return (self.certs / "tokens.csv").read_text().split(",", 1)[0]

    def client(self, cert: tuple[Path, Path] | None = None, token: str | None = None) -> httpx.Client:
        """An HTTPS client trusting the node CA, with an optional client cert or token."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(
            verify=tls_client_context(self.certs / "ca.crt", cert), headers=headers, timeout=10
        )

    def admin(self) -> httpx.Client:
        return self.client(cert=(self.certs / "admin.crt", self.certs / "admin.key"))


class Agent(Listening):
    """A Kubelet built from command-line flags (the real parsing path), run in-process."""

    def __init__(self, args: Sequence[str], clock: Clock | None = None, limits: Limits | None = None) -> None:
        self.args = list(args)
        cfg, opts = configuration(list(args))
        self.kubelet = Kubelet(cfg, opts, clock, limits)
        self._loop = LoopThread()
        try:
            self._loop.run(self.kubelet.start())
        except BaseException:
            self._loop.close()
            raise

    @property
    def certs(self) -> Path:
        return self.kubelet.opts.effective_cert_dir

    def port(self, listener: str) -> int:
        return self.kubelet.port(listener)

    def run(self, coro: object, timeout: float = 30) -> object:
        """Run a coroutine on the agent's loop (e.g. a housekeeping cycle now)."""
        return self._loop.run(coro, timeout)

    def close(self) -> None:
        try:
            self._loop.run(self.kubelet.stop())
        finally:
            self._loop.close()
            purge(self.args)


def sample(name: str, value: float, **labels: str) -> str:
    """A Prometheus text sample line, newline included, as the kubelet's client_golang writes it
    (labels sorted by name, the value as Go formats a float: `3`, not `3.0`)."""
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}} {go_float(value)}\n" if labels else f"{name} {go_float(value)}\n"


def http_sample(value: float, path: str, server_type: str = "readwrite", method: str = "GET",
                metric: str = "kubelet_http_requests_total") -> str:
    long_running = "true" if path in ("exec", "attach", "debug") else "false"
    return sample(metric, value, long_running=long_running, method=method, path=path, server_type=server_type)


def purge(args: Sequence[str]) -> None:
    """Kill every process an agent's runtime started and remove its cgroups and tmpfs mounts.

    Containers outlive the agent by design, so a test that started pods must clean up itself.
    """
    root = Path(args[args.index("--root-dir") + 1])
    pids: set[int] = set()
    for state in (root / "runtime" / "process" / "containers").glob("*/container.json"):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(state.read_text())
            pids |= {p for p in (record.get("init_pid"), record.get("app_pid"), record.get("shim_pid")) if p}
    isolated = "--cgroup-root" in args and os.geteuid() == 0
    if isolated:
        # Also whatever the records do not name: a container whose start an agent stopped
        # mid-way (cancelled, killed) runs in its cgroup, unknown to its record.
        pids |= cgroup_pids(args[args.index("--cgroup-root") + 1])
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while any(Path(f"/proc/{p}").exists() and "Z" not in proc_state(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    for mount in sorted((root / "pods").glob("*/volumes/*/*"), reverse=True):
        if os.path.ismount(mount):
            subprocess.run(["umount", "-l", str(mount)], check=False)
    for netns in (root / "network" / "netns").glob("*"):  # pods' own network namespaces (--pod-cidr)
        subprocess.run(["umount", "-l", str(netns)], capture_output=True, check=False)
        netns.unlink(missing_ok=True)
    if isolated:
        remove_cgroup_root(args[args.index("--cgroup-root") + 1])


def proc_state(pid: int) -> str:
    """A process's state letter from /proc/<pid>/stat (\"Z\" when it is gone or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "Z"
    return text[text.rfind(")") + 2 :].split()[0]


def tls_client_context(ca: Path, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(cert[0], cert[1])
    return ctx


@dataclass
class KeyPair:
    cert: Path
    key: Path


def make_ca(dir_: Path, name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey, Path]:
    """A throwaway CA (not the node's)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = dir_ / f"{name}.crt"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key, path


def client_cert(
    dir_: Path,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    cn: str,
    orgs: Sequence[str] = (),
    not_before: dt.datetime | None = None,
    not_after: dt.datetime | None = None,
) -> KeyPair:
    """A client certificate signed by `ca`, written to `dir_`."""
    now = dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(not_before or now - dt.timedelta(hours=1))
        .not_valid_after(not_after or now + dt.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pair = KeyPair(dir_ / f"{cn}.crt", dir_ / f"{cn}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return pair


def load_ca(certs: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert = x509.load_pem_x509_certificate((certs / "ca.crt").read_bytes())
    key = serialization.load_pem_private_key((certs / "ca.key").read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    return cert, key


class AgentProcess:
    """`python -m kubeletapi` as a real process; killed by PID on close."""

    def __init__(self, args: Sequence[str], cwd: Path | None = None, wrapper: Sequence[str] = (),
                 preexec_fn: Callable[[], object] | None = None, log: Path | None = None) -> None:
        """`wrapper`: a command that execs the agent (e.g. prlimit with its limits). `log`: its
        output goes to that file (a long-running agent would fill a pipe nobody reads)."""
        self.log = log
        out = log.open("a") if log is not None else subprocess.PIPE
        try:
            self.proc = subprocess.Popen(
                [*wrapper, sys.executable, "-m", "kubeletapi", *args],
                stdout=out, stderr=subprocess.STDOUT, text=True, cwd=cwd,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=preexec_fn,  # noqa: PLW1509 - limits only
            )
        finally:
            if log is not None and not isinstance(out, int):
                out.close()

    def wait_healthy(self, healthz_url: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"agent exited with {self.proc.returncode}: {self.output()}")
            try:
                if httpx.get(healthz_url, timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError("agent did not become healthy")

    def wait_exit(self, timeout: float = 30) -> tuple[int, str]:
        out, _ = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out if self.log is None else self.log.read_text(errors="replace")

    def output(self) -> str:
        if self.log is not None:
            return self.log.read_text(errors="replace")
        if self.proc.poll() is None:
            return ""
        return self.proc.stdout.read() if self.proc.stdout else ""

    def kill(self) -> None:
        """SIGKILL, as an OOM killer or a crash would (containers must survive it)."""
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.wait_exit(30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


async def collect_output(session: StreamSession, limit_s: float) -> tuple[bytes, bytes, int]:
    """A stream session's stdout, stderr and exit code, read to the end within `limit_s`."""
    out, err = bytearray(), bytearray()
    async with asyncio.timeout(limit_s):
        async for kind, data in session.output():
            (out if kind == STDOUT else err).extend(data)
        code = await session.wait()
    return bytes(out), bytes(err), code
