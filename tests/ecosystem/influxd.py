"""A real InfluxDB 1.x server (Debian's `influxd`, package influxdb) on loopback, for end-to-end tests.

The server gets a generated config: HTTP and RPC (backup) listeners on free 127.0.0.1 ports, meta,
data and WAL directories under a private directory, usage reporting off, no UDP, Graphite, collectd
or OpenTSDB listeners, no `_internal` monitor database, the HTTP request log off and its own output
in a log file. There is no `influx` CLI on this machine: everything goes through the HTTP API.

`stop()` and `start()` restart the same server (same port, same data), which is how a test
simulates an outage of the database.
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tests.helpers import LOOPBACK, free_ports

INFLUXD = shutil.which("influxd") or ("/usr/bin/influxd" if os.access("/usr/bin/influxd", os.X_OK) else None)
INSTALL_HINT = "(Debian package `influxdb`)"


class InfluxError(AssertionError):
    """InfluxDB answered with an error (HTTP status or an `error` key in the result)."""


def config_text(dir_: Path, http: str, rpc: str) -> str:
    """An influxd 1.x TOML config with every path under `dir_` and only the HTTP API enabled."""
    return f"""\
reporting-disabled = true
bind-address = "{rpc}"

[meta]
  dir = "{dir_ / 'meta'}"
  retention-autocreate = true
  logging-enabled = false

[data]
  dir = "{dir_ / 'data'}"
  wal-dir = "{dir_ / 'wal'}"
  wal-fsync-delay = "0s"
  query-log-enabled = false

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[continuous_queries]
  enabled = false

[retention]
  enabled = false

[http]
  enabled = true
  bind-address = "{http}"
  auth-enabled = false
  log-enabled = false
  pprof-enabled = false
  unix-socket-enabled = false

[logging]
  level = "info"
  suppress-logo = true

[[graphite]]
  enabled = false

[[collectd]]
  enabled = false

[[opentsdb]]
  enabled = false

[[udp]]
  enabled = false
"""


class Influxd:
    """One influxd process (restartable) with its data under `dir_` (a fresh temp dir if None)."""

    def __init__(self, dir_: Path | None = None, binary: str | None = None) -> None:
        exe = binary or INFLUXD
        if exe is None:
            raise FileNotFoundError(f"influxd not installed {INSTALL_HINT}")
        self.binary = exe
        self._own_dir = dir_ is None
        self.dir = Path(tempfile.mkdtemp(prefix="influxd-")) if dir_ is None else dir_
        self.dir.mkdir(parents=True, exist_ok=True)
        http_port, rpc_port = free_ports(2)
        self.port = http_port
        self.url = f"http://{LOOPBACK}:{http_port}"
        self.config = self.dir / "influxdb.conf"
        self.config.write_text(config_text(self.dir, f"{LOOPBACK}:{http_port}", f"{LOOPBACK}:{rpc_port}"))
        self.log = self.dir / "influxd.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = httpx.Client(base_url=self.url, timeout=10)

    # -- process ------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> Influxd:
        """Start (or restart) the server on the same port and data directories."""
        assert not self.running, "influxd already running"
        with self.log.open("ab") as log:
            log.write(f"--- start {time.strftime('%H:%M:%S')} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [self.binary, "-config", str(self.config)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
            )
        return self

    def wait_ready(self, timeout: float = 30) -> None:
        """Until GET /ping answers 204 (the HTTP listener is up and the stores are open)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise AssertionError(f"influxd exited ({code}): {self.tail()}")
            if self.ping():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"influxd not ready after {timeout}s: {self.tail()}")
            time.sleep(0.05)

    def ping(self) -> bool:
        try:
            return self.http.get("/ping", timeout=1).status_code == 204
        except httpx.TransportError:
            return False

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM by PID, wait for the exit, SIGKILL if it does not come in `timeout` s."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def close(self) -> None:
        """Kill the process (by PID) and remove the data; safe to call twice."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        self.http.close()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            for sub in ("meta", "data", "wal"):
                shutil.rmtree(self.dir / sub, ignore_errors=True)

    def __enter__(self) -> Influxd:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    # -- HTTP API -----------------------------------------------------------------------------

    def query(self, q: str, db: str | None = None, epoch: str | None = "ns") -> list[dict[str, Any]]:
        """Run InfluxQL via POST /query; the `results` list (one per statement). Any error raises.

        With `epoch` (default ns) times come back as integers in that unit, else RFC3339 strings.
        """
        params = {"q": q}
        if db is not None:
            params["db"] = db
        if epoch is not None:
            params["epoch"] = epoch
        response = self.http.post("/query", data=params)
        try:
            doc = response.json()
        except ValueError:
            raise InfluxError(f"{q!r}: HTTP {response.status_code} {response.text!r}") from None
        if response.status_code != 200 or "error" in doc:
            raise InfluxError(f"{q!r}: HTTP {response.status_code} {doc}")
        results: list[dict[str, Any]] = doc["results"]
        errors = [r["error"] for r in results if "error" in r]
        if errors:
            raise InfluxError(f"{q!r}: {errors}")
        return results

    def series(self, q: str, db: str | None = None, epoch: str | None = "ns") -> list[dict[str, Any]]:
        """The series of a single-statement query ([] when it matched nothing)."""
        results = self.query(q, db, epoch)
        assert len(results) == 1, results
        series: list[dict[str, Any]] = results[0].get("series", [])
        return series

    def rows(self, q: str, db: str | None = None, epoch: str | None = "ns") -> list[dict[str, Any]]:
        """Every row of a single-statement query as {column: value, **group-by tags}."""
        out = []
        for s in self.series(q, db, epoch):
            tags = s.get("tags", {})
            out += [{**tags, **dict(zip(s["columns"], values, strict=True))} for values in s.get("values", [])]
        return out

    def write(self, lines: Iterable[str], db: str, precision: str = "ns", compress: bool = False) -> None:
        """POST line protocol to /write (gzip-compressed with `compress`); anything but 204 raises."""
        body = "\n".join(lines).encode()
        headers = {"Content-Type": "text/plain; charset=utf-8"}
        if compress:
            body = gzip.compress(body)
            headers["Content-Encoding"] = "gzip"
        response = self.http.post("/write", params={"db": db, "precision": precision}, content=body,
                                  headers=headers)
        if response.status_code != 204:
            raise InfluxError(f"write to {db}: HTTP {response.status_code} {response.text!r}")
