"""Hostile requests to the stats endpoints: odd queries, other methods, huge headers, and concurrent
scrapes while pods come and go. Nothing may answer 5xx or log an exception."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.helpers import LOOPBACK, Agent
from tests.podtools import container, manifest, running, wait_for, write

pytestmark = pytest.mark.e2e
PATHS = ("/stats/summary", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes")
ODD_QUERIES = (
    "?only_cpu_and_memory=true&only_cpu_and_memory=true", "?only_cpu_and_memory=TRUE", "?only_cpu_and_memory",
    "?only_cpu_and_memory=%74rue", "?%zz=1", "?a=%", "?a;b=c", "?" + "x" * 6000, "?name[]=1&&&==",
    "?only_cpu_and_memory=true%00", "?%E2%98%83=%FF%FE",
)


def test_odd_queries_methods_and_bodies(agent: Agent, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with httpx.Client(timeout=10) as client:
        for path in PATHS:
            for query in ODD_QUERIES:
                response = client.get(agent.url("read-only", path + query))
                assert response.status_code < 500, (path, query, response.status_code, response.text[:200])
            for method in ("HEAD", "PUT", "DELETE", "PATCH", "OPTIONS"):
                response = client.request(method, agent.url("read-only", path))
                assert response.status_code in (200, 405), (method, path, response.status_code)
        summary = agent.url("read-only", "/stats/summary")
        # A bad escape is Go's ParseForm error: a clear 400 (the kubelet says 500).
        bad = client.get(summary + "?a=%zz")
        assert bad.status_code == 400 and "invalid URL escape" in bad.text
        # The form body counts with the query: twice is not "exactly once".
        both = client.post(summary + "?only_cpu_and_memory=true", content=b"only_cpu_and_memory=true",
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert both.status_code == 200 and "network" in both.json()["node"]
        body_only = client.post(summary, content=b"only_cpu_and_memory=true",
                                headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert "network" not in body_only.json()["node"]
        ignored = client.post(summary, content=b"only_cpu_and_memory=true", headers={"Content-Type": "text/plain"})
        assert "network" in ignored.json()["node"]
        # Over the listeners' body limit (1 MiB, issue 13): 413 before the handler (Go's ParseForm: 10 MiB).
        huge = client.post(summary, content=b"a=" + b"b" * (11 << 20),
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert huge.status_code == 413
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_huge_headers_are_refused_cleanly(agent: Agent) -> None:
    port = agent.kubelet.port("read-only")
    for size in (16 << 10, 2 << 20):
        with socket.create_connection((LOOPBACK, port), timeout=10) as sock:
            head = f"GET /stats/summary HTTP/1.1\r\nHost: x\r\nX-Big: {'a' * size}\r\n\r\n".encode()
            try:
                sock.sendall(head)
                reply = sock.recv(64)
            except (ConnectionResetError, BrokenPipeError):
                reply = b""
            status = int(reply.split()[1]) if reply.startswith(b"HTTP/1.1") else 0
            assert status in (0, 200, 400, 431), reply
    assert httpx.get(agent.url("read-only", "/stats/summary"), timeout=10).status_code == 200  # still serving


@pytest.mark.slow
def test_concurrent_scrapes_during_pod_churn(start_agent: Callable[..., Agent], tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    agent = start_agent("--housekeeping-interval", "1s", manifests=True)
    manifests = tmp_path / "manifests"
    stop = threading.Event()
    failures: list[str] = []
    counts = {"requests": 0}

    def scrape(path: str) -> None:
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                response = client.get(agent.url("read-only", path), headers={"Accept-Encoding": "gzip"})
                counts["requests"] += 1
                if response.status_code != 200:
                    failures.append(f"{path}: {response.status_code} {response.text[:200]}")

    with ThreadPoolExecutor(len(PATHS)) as pool:
        futures = [pool.submit(scrape, path) for path in PATHS]
        for round_ in range(3):
            for i in range(3):
                write(manifests, f"churn{i}.yaml", manifest(f"churn{i}", container("c", ["sleep", "300"])))
            wait_for(lambda: all(running(agent, f"churn{i}") for i in range(3)), timeout=30, what=f"round {round_}")
            time.sleep(1.2)  # at least one housekeeping cycle with the pods
            for i in range(3):
                (manifests / f"churn{i}.yaml").unlink()
            wait_for(lambda: not any(running(agent, f"churn{i}") for i in range(3)), timeout=30)
        stop.set()
        for future in futures:
            future.result()
    assert not failures, failures[:5]
    assert counts["requests"] > 20
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], [
        r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR][:5]
