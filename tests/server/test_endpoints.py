"""/healthz checks, /configz and /metrics on a live secure listener.

What the HTTP layer does with any Host (the healthz format, counting refused requests) is checked
around a FakeHost (tests.fakehost); the agent's own checks, configuration and registry on a real
agent."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from kubeletapi.clock import FakeClock
from tests.fakehost import FakeNode
from tests.helpers import Agent, http_sample


def test_healthz_verbose_and_checks(node: FakeNode) -> None:
    with node.admin() as client:
        response = client.get(node.url(path="/healthz?verbose"))
        assert response.text == "[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n"
        assert response.headers["content-type"] == "text/plain; charset=utf-8"
        assert response.headers["x-content-type-options"] == "nosniff"
        excluded = client.get(node.url(path="/healthz?verbose&exclude=log&exclude=bogus"))
        assert excluded.text == (
            '[+]ping ok\n[+]log excluded: ok\n[+]syncloop ok\n'
            'warn: some health checks cannot be excluded: no matches for "bogus"\nhealthz check passed\n'
        )
        for check in ("ping", "log", "syncloop"):
            assert client.get(node.url(path=f"/healthz/{check}")).text == "ok"


class StuckSync:
    """A sync handler that hangs until released (a stand-in for a blocked pod sync)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    async def __call__(self) -> None:
        self.entered.set()
        while not self.release.is_set():
            await asyncio.sleep(0.01)


def test_syncloop_failure(start_agent: Callable[..., Agent]) -> None:
    clock = FakeClock()
    agent = start_agent(clock=clock)
    stuck = StuckSync()
    agent.kubelet.add_sync_handler(stuck)
    clock.advance(1)  # let the loop reach the handler
    assert stuck.entered.wait(5)
    with agent.admin() as client:
        assert client.get(agent.url(path="/healthz")).status_code == 200
        clock.advance(299)
        assert client.get(agent.url(path="/healthz")).status_code == 200  # threshold: 5 min
        clock.advance(2)
        response = client.get(agent.url(path="/healthz"))
        single = client.get(agent.url(path="/healthz/syncloop"))
        excluded = client.get(agent.url(path="/healthz?exclude=syncloop"))
        stuck.release.set()
        deadline = time.monotonic() + 5
        while client.get(agent.url(path="/healthz")).status_code != 200 and time.monotonic() < deadline:
            clock.advance(1)  # the loop sleeps on the fake clock before its next entry
            time.sleep(0.02)
        recovered = client.get(agent.url(path="/healthz"))
    assert response.status_code == 500
    assert response.text == "[+]ping ok\n[+]log ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n"
    assert (single.status_code, single.text) == (500, "internal server error: sync Loop took longer than expected\n")
    assert excluded.text == "ok"
    assert recovered.text == "ok"


def test_configz(agent: Agent) -> None:
    with agent.admin() as client:
        response = client.get(agent.url(path="/configz"))
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert list(body) == ["kubeletconfig"]
    cfg = body["kubeletconfig"]
    assert "kind" not in cfg and "apiVersion" not in cfg
    assert cfg["address"] == "127.0.0.1"
    assert cfg["port"] == agent.kubelet.port("secure")
    assert cfg["readOnlyPort"] == agent.kubelet.port("read-only")
    assert cfg["syncFrequency"] == "1m0s"
    assert cfg["authorization"]["mode"] == "AlwaysAllow"
    # the generated files actually served with, as the kubelet's InitializeTLS fills them in
    assert cfg["tlsCertFile"] == str(agent.certs / "kubelet.crt")
    assert cfg["authentication"]["x509"]["clientCAFile"] == str(agent.certs / "ca.crt")
    assert response.content == json.dumps(body, separators=(",", ":")).encode()  # compact, like Go


def test_configz_from_a_config_file(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "syncFrequency: 90s\nmaxPods: 50\nstaticPodURL: http://127.0.0.1:9/pods\n"
        "staticPodURLHeader: {Authorization: [Bearer hunter2]}\n"
    )
    agent = start_agent("--config", str(config), "--max-pods", "60")
    with agent.admin() as client:
        raw = client.get(agent.url(path="/configz")).text
    cfg = json.loads(raw)["kubeletconfig"]
    assert cfg["syncFrequency"] == "1m30s"
    assert cfg["maxPods"] == 60  # the flag wins
    assert cfg["staticPodURLHeader"] == {"Authorization": ["<redacted>"]}
    assert "hunter2" not in raw


def families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics(agent: Agent) -> None:
    with agent.admin() as client:
        for _ in range(3):
            client.get(agent.url(path="/healthz"))
        client.get(agent.url(path="/nope"))
        response = client.get(agent.url(path="/metrics"))
        with client.stream("GET", agent.url(path="/metrics"), headers={"Accept-Encoding": "gzip"}) as zipped:
            raw = b"".join(zipped.iter_raw())
    assert response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"
    text = response.text
    assert "_created" not in text
    assert 'kubelet_node_name{node="testnode"} 1\n' in text  # Go's number form, as the kubelet writes it
    assert http_sample(3.0, "healthz") in text
    assert http_sample(1.0, "other") in text
    assert "# HELP kubelet_http_requests_total [ALPHA] Number of the http requests received since the server started" \
        in text
    assert "# TYPE kubelet_http_requests_duration_seconds histogram" in text
    assert http_sample(1.0, "metrics", metric="kubelet_http_inflight_requests") in text
    found = families(text)
    for name in ("process_cpu_seconds", "process_resident_memory_bytes", "process_start_time_seconds",
                 "kubernetes_build_info", "kubelet_certificate_manager_server_ttl_seconds"):
        assert name in found, name
    ttl = next(iter(found["kubelet_certificate_manager_server_ttl_seconds"].samples)).value  # type: ignore[attr-defined]
    assert 300 * 86400 < ttl < 366 * 86400 and ttl == int(ttl)  # whole seconds, as math.Trunc in the kubelet
    assert zipped.headers.get("content-encoding") == "gzip"
    assert gzip.decompress(raw).startswith(b"# HELP")


def test_metrics_count_requests_that_fail_authentication(node: FakeNode) -> None:
    with node.client() as anonymous:
        assert anonymous.get(node.url(path="/healthz")).status_code == 401
    with node.admin() as client:
        text = client.get(node.url(path="/metrics")).text
    assert http_sample(1.0, "healthz") in text
