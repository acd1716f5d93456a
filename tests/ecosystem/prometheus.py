"""A real Prometheus server for tests: the Debian package's binary on a free loopback port.

It runs either a config written from scrape configs (`Prometheus.scraping`) or an existing config
file used as it is (`Prometheus(config_file, dir_)`): relative paths inside a config file
(credentials, file_sd targets, rule files) resolve against the file's own directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import LOOPBACK, free_port
from tests.podtools import wait_for

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
INSTALL_HINT = "(Debian package `prometheus`, in the Makefile's DEB_PACKAGES)"


class Prometheus:
    """A Prometheus on `config_file`, with its data and log under `dir_` (created); killed by PID on `stop`."""

    def __init__(self, config_file: Path, dir_: Path, command: Sequence[str] = (),
                 env: Mapping[str, str] | None = None) -> None:
        """`command`: how to start Prometheus (a binary and any wrapper); Debian's by default."""
        assert command or PROMETHEUS is not None
        self.config_file = config_file
        self.dir = dir_
        self.dir.mkdir(parents=True, exist_ok=True)
        self.base = f"http://{LOOPBACK}:{free_port()}"
        self.log = self.dir / "prometheus.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [*(command or [str(PROMETHEUS)]), f"--config.file={config_file}",
                 f"--storage.tsdb.path={self.dir / 'data'}", f"--web.listen-address={self.base.removeprefix('http://')}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                env=None if env is None else {**os.environ, **env},
            )
        self.http = httpx.Client(base_url=self.base, timeout=5)

    @classmethod
    def scraping(cls, dir_: Path, scrape_configs: list[dict[str, Any]]) -> Prometheus:
        """A Prometheus scraping and evaluating every second, on a config written to `dir_/prometheus.yml`."""
        dir_.mkdir()
        config = dir_ / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
            "scrape_configs": scrape_configs,
        }))
        return cls(config, dir_)

    def wait_ready(self, timeout: float = 20) -> None:
        def ready() -> bool:
            assert self.proc.poll() is None, f"prometheus exited with {self.proc.returncode}: {self.tail()}"
            try:
                return self.http.get("/-/ready").status_code == 200
            except httpx.TransportError:
                return False

        wait_for(ready, timeout=timeout, interval=0.1, what="prometheus ready")

    def api(self, path: str, **params: str) -> Any:
        """The `data` of a successful /api/v1/<path> answer (anything else fails the test)."""
        response = self.http.get(f"/api/v1/{path}", params=params)
        assert response.status_code == 200, response.text
        doc = response.json()
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The series of an instant query that must return a vector."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        result: list[dict[str, Any]] = data["result"]
        return result

    def self_metrics(self) -> dict[str, float]:
        """Prometheus' own counters (unlabelled ones, and labelled ones summed by name)."""
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(self.http.get("/metrics").text):
            for s in family.samples:
                out[s.name] = out.get(s.name, 0.0) + s.value
        return out

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self) -> None:
        self.http.close()
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        shutil.rmtree(self.dir / "data", ignore_errors=True)
