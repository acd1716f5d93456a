"""client-go's SPDY executor and port forwarder as a test client: the Go program
tests/cluster/k8s/spdyclient, built by `make cluster-bin` (scripts/cluster-bin.sh) into the cluster
binaries' cache, run as a subprocess against an agent's secure port with the admin certificate."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO

from tests.cluster.controlplane import binary
from tests.helpers import Listening


@dataclass
class Running:
    """A client process whose stdout a thread collects, for sessions that stay open (attach, tty)."""

    proc: subprocess.Popen[bytes]
    out: bytearray = field(default_factory=bytearray)

    def __post_init__(self) -> None:
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, pipe: IO[bytes]) -> None:
        while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
            self.out += chunk

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait_output(self, want: bytes, timeout: float = 10) -> bytes:
        deadline = time.monotonic() + timeout
        while want not in self.out:
            if time.monotonic() > deadline or (self.proc.poll() is not None and not self._reader.is_alive()):
                raise AssertionError(f"no {want!r} in the client's output: {bytes(self.out)!r}, {self.stop()}")
            time.sleep(0.02)
        return bytes(self.out)

    def finish(self, timeout: float = 15) -> tuple[int, bytes, bytes]:
        """Close stdin and wait: (exit code, stdout, stderr)."""
        with contextlib.suppress(BrokenPipeError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        code = self.proc.wait(timeout)
        self._reader.join(5)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code, bytes(self.out), err

    def stop(self) -> tuple[int, bytes, bytes]:
        """End the client (SIGTERM, SIGKILL after 5 s): (exit code, stdout, stderr)."""
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return self.finish()


@dataclass
class GoClient:
    """spdyclient for one agent: URLs are paths on its secure port."""

    agent: Listening

    def command(self, verb: str, path: str, *args: str, flags: Sequence[str] = ()) -> list[str]:
        certs = self.agent.certs
        tls = ["-ca", str(certs / "ca.crt"), "-cert", str(certs / "admin.crt"), "-key", str(certs / "admin.key")]
        return [binary("spdyclient"), *tls, *flags, verb, self.agent.url(path=path), *args]

    def run(self, verb: str, path: str, *args: str, stdin: bytes = b"", flags: Sequence[str] = (),
            timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        """Run to the end with `stdin` (closed after it): the exit code, stdout and stderr."""
        return subprocess.run(self.command(verb, path, *args, flags=flags), input=stdin, capture_output=True,
                              timeout=timeout, check=False)

    def start(self, verb: str, path: str, *args: str, flags: Sequence[str] = ()) -> Running:
        proc = subprocess.Popen(self.command(verb, path, *args, flags=flags), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return Running(proc)

    @contextlib.contextmanager
    def port_forward(self, path: str, *ports: str) -> Iterator[tuple[Running, list[int]]]:
        """Forward 127.0.0.1 ports (`local:remote`, local 0 for any): the client and the bound ports."""
        running = self.start("portforward", path, *ports)
        try:
            line = running.wait_output(b"\n", timeout=20).split(b"\n", 1)[0].split()
            assert line[0] == b"ready", line
            yield running, [int(port) for port in line[1:]]
        finally:
            if running.proc.poll() is None:
                running.stop()
