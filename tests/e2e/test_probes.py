"""Probes end to end: real pods, real targets, a real agent (periods of 1 s).

- a failing liveness probe restarts the container (reason and message in lastState), the second
  restart waits out CrashLoopBackOff;
- a readiness probe flips the container's ready, ContainersReady and Ready both ways;
- a startup probe holds liveness (and readiness) back until it succeeds;
- httpGet, tcpSocket and grpc probes against servers the pod runs (exec probes are everywhere);
- /metrics/probes counts exactly the probes that ran, and the series go with the pod.
"""

from __future__ import annotations

import resource
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import Agent, free_ports
from tests.podtools import container, manifest, pods, polled, status_of, wait_for, write

pytestmark = pytest.mark.e2e


def pod_of(agent: Agent, name: str) -> dict[str, Any] | None:
    pod = pods(agent).get(f"{name}-testnode")
    return pod if pod is not None and pod["status"].get("containerStatuses") else None


def conditions(pod: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in pod["status"]["conditions"]}


def probe_counts(agent: Agent, pod: str) -> dict[tuple[str, str, str], float]:
    """(container, probe_type, result) -> prober_probe_total, for one pod."""
    text = httpx.get(agent.url("read-only", "/metrics/probes"), timeout=10).text
    counts = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "prober_probe_total" and s.labels["pod"] == f"{pod}-testnode":
                counts[(s.labels["container"], s.labels["probe_type"], s.labels["result"])] = s.value
    return counts


def exec_probe(kind: str, command: str, extra: str = "") -> str:
    return textwrap.dedent(f"""\
        {kind}:
          exec:
            command: [sh, -c, {command!r}]
          periodSeconds: 1
        """) + textwrap.indent(textwrap.dedent(extra), "  ")


def test_failing_liveness_restarts_with_backoff(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    probe = exec_probe("livenessProbe", "echo unhealthy-output; exit 1",
                       "failureThreshold: 1\nterminationGracePeriodSeconds: 1\n")
    write(tmp_path / "manifests", "live.yaml", manifest("live", container("c", ["sleep", "3600"], probe)))
    restarted: dict[int, float] = {}  # restartCount -> when /pods first showed it
    backoff_seen = ""
    deadline = time.monotonic() + 40
    while 2 not in restarted and time.monotonic() < deadline:
        pod = pod_of(agent, "live")
        if pod is not None:
            status = status_of(pod, "c")
            restarted.setdefault(status["restartCount"], time.monotonic())
            waiting = status["state"].get("waiting") or {}
            if waiting.get("reason") == "CrashLoopBackOff":
                backoff_seen = waiting["message"]
                last = status["lastState"]["terminated"]
                assert last["reason"] == "Unhealthy"
                assert last["message"] == "Container c failed liveness probe, will be restarted: unhealthy-output"
        time.sleep(0.05)
    assert 1 in restarted and 2 in restarted and max(restarted) == 2, restarted
    # The first restart comes at once, the second waits the 10 s back-off (its message is checked
    # below). Timed from when /pods first showed each count: only when the pod was seen before its
    # first restart (a loaded machine may show it later, and the gap would then be short by the delay).
    if 0 in restarted:
        assert restarted[1] - restarted[0] < 4
        assert restarted[2] - restarted[1] >= 9.5
    assert backoff_seen.startswith("back-off 10s restarting failed container=c pod=live-testnode_default(")


def test_readiness_flips_ready_both_ways_and_metrics_count_every_run(
    start_agent: Callable[..., Agent], tmp_path: Path
) -> None:
    agent = start_agent(manifests=True)
    flag = tmp_path / f"ready-{uuid.uuid4().hex}"
    runs = tmp_path / "runs.log"
    probe = exec_probe("readinessProbe", f"echo run >> {runs}; test -f {flag}", "failureThreshold: 1\n")
    write(tmp_path / "manifests", "ready.yaml", manifest("ready", container("c", ["sleep", "3600"], probe)))

    def ready_is(value: bool) -> dict[str, Any] | None:
        pod = pod_of(agent, "ready")
        if pod is None or "running" not in polled(pod, "c")["state"] or polled(pod, "c")["ready"] != value:
            return None
        return pod

    pod = wait_for(lambda: ready_is(False) and runs.exists() and ready_is(False), what="running, not ready")
    assert conditions(pod) | {"Ready": "False", "ContainersReady": "False"} == conditions(pod)
    cond = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
    assert (cond["reason"], cond["message"]) == ("ContainersNotReady", "containers with unready status: [c]")
    assert status_of(pod, "c")["started"] is True
    flag.touch()
    pod = wait_for(lambda: ready_is(True), timeout=5, what="ready")
    assert conditions(pod)["Ready"] == conditions(pod)["ContainersReady"] == "True"
    flag.unlink()
    pod = wait_for(lambda: ready_is(False), timeout=5, what="not ready again")
    assert conditions(pod)["Ready"] == conditions(pod)["ContainersReady"] == "False"

    def exact() -> tuple[int, float] | None:
        before = len(runs.read_text().splitlines())
        counted = sum(v for (c, kind, _), v in probe_counts(agent, "ready").items() if kind == "Readiness")
        after = len(runs.read_text().splitlines())
        return (before, counted) if before == after == counted else None

    ran, _ = wait_for(exact, timeout=10, interval=0.2, what="a quiet moment where runs == prober_probe_total")
    counts = probe_counts(agent, "ready")
    assert counts[("c", "Readiness", "successful")] >= 1 and counts[("c", "Readiness", "failed")] >= 2
    assert ran >= 4
    text = httpx.get(agent.url("read-only", "/metrics/probes"), timeout=10).text
    assert 'prober_probe_duration_seconds_count{container="c",namespace="default",pod="ready-testnode",' \
           'probe_type="Readiness"}' in text
    assert "process_start_time_seconds " in text

    (tmp_path / "manifests" / "ready.yaml").unlink()
    wait_for(lambda: "ready-testnode" not in pods(agent), what="pod removed")
    text = httpx.get(agent.url("read-only", "/metrics/probes"), timeout=10).text
    assert "ready-testnode" not in text


def test_startup_probe_holds_liveness_back(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    started = tmp_path / "started"
    live_runs = tmp_path / "live.log"
    probes = (exec_probe("startupProbe", f"test -f {started}", "failureThreshold: 60\n")
              + exec_probe("livenessProbe", f"echo run >> {live_runs}")
              + exec_probe("readinessProbe", "true"))
    write(tmp_path / "manifests", "st.yaml", manifest("st", container("c", ["sleep", "3600"], probes)))
    pod = wait_for(lambda: (p := pod_of(agent, "st")) and "running" in polled(p, "c")["state"] and p,
                   what="running")
    time.sleep(3)
    pod = pod_of(agent, "st")
    assert pod is not None
    assert (status_of(pod, "c")["started"], status_of(pod, "c")["ready"]) == (False, False)
    assert not live_runs.exists()
    assert probe_counts(agent, "st").get(("c", "Startup", "failed"), 0) >= 2
    started.touch()
    wait_for(lambda: (p := pod_of(agent, "st")) and polled(p, "c")["started"] and polled(p, "c")["ready"],
             timeout=6, what="started and ready")
    wait_for(lambda: live_runs.exists() and len(live_runs.read_text().splitlines()) >= 2, timeout=5,
             what="liveness running")
    assert probe_counts(agent, "st")[("c", "Startup", "successful")] == 1
    assert status_of(pod_of(agent, "st") or {}, "c")["restartCount"] == 0


GRPC_SERVER = """
import sys
from concurrent import futures
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
servicer = health.HealthServicer()
health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
server.add_insecure_port("127.0.0.1:" + sys.argv[1])
servicer.set("", health_pb2.HealthCheckResponse.SERVING)
servicer.set("down", health_pb2.HealthCheckResponse.NOT_SERVING)
server.start()
server.wait_for_termination()
"""

TCP_SERVER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
while True:
    s.accept()[0].close()
"""


def test_each_probe_type_against_a_real_target(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    agent = start_agent(manifests=True)
    web, tcp, rpc = free_ports(3)
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "healthz").write_text("fine")
    py = sys.executable

    def readiness(handler: str) -> str:
        return "readinessProbe:\n" + textwrap.indent(textwrap.dedent(handler), "  ") + "  periodSeconds: 1\n"

    containers = (
        container("web", [py, "-m", "http.server", str(web), "--bind", "127.0.0.1", "-d", str(tmp_path / "www")],
                  f"ports:\n- name: http\n  containerPort: {web}\n"
                  + readiness("httpGet:\n  path: /healthz\n  port: http\n"
                              "  httpHeaders:\n  - name: X-Probe\n    value: y\n"))
        + container("tcp", [py, "-c", TCP_SERVER, str(tcp)], readiness(f"tcpSocket:\n  port: {tcp}\n"))
        + container("rpc", [py, "-c", GRPC_SERVER, str(rpc)], readiness(f"grpc:\n  port: {rpc}\n"))
        + container("rpc-down", ["sleep", "3600"], readiness(f"grpc:\n  port: {rpc}\n  service: down\n"))
        + container("web-404", ["sleep", "3600"],
                    readiness(f"httpGet:\n  path: /missing\n  port: {web}\n"))
    )
    write(tmp_path / "manifests", "targets.yaml", manifest("targets", containers))

    def ready_set() -> set[str] | None:
        pod = pod_of(agent, "targets")
        if pod is None:
            return None
        ready = {s["name"] for s in pod["status"]["containerStatuses"] if s["ready"]}
        return ready if ready == {"web", "tcp", "rpc"} else None

    wait_for(ready_set, timeout=20, what="http, tcp and grpc ready")
    counts = wait_for(lambda: (c := probe_counts(agent, "targets")).get(("rpc-down", "Readiness", "failed"))
                      and c.get(("web-404", "Readiness", "failed")) and c, timeout=5, what="failures counted")
    assert not counts.get(("rpc-down", "Readiness", "successful"))
    assert not counts.get(("web-404", "Readiness", "successful"))
    pod = pod_of(agent, "targets")
    assert pod is not None and conditions(pod)["Ready"] == "False"
    log = next((tmp_path / "logs").glob("default_targets-testnode_*/web/0.log")).read_text()
    assert '"GET /healthz HTTP/1.1" 200' in log


SILENT_SERVER = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
held = []
while True:
    held.append(s.accept()[0])  # accepted, never answered
"""


def test_hostile_targets_cost_bounded_time_and_memory(start_agent: Callable[..., Agent], tmp_path: Path) -> None:
    """A server that never answers, a 10 MB body, an exec that writes 50 MB: each run stays cheap,
    and a steady probe beside them keeps its period."""
    agent = start_agent(manifests=True)
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    silent, big = free_ports(2)
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "big").write_bytes(b"b" * (10 << 20))
    steady_runs = tmp_path / "steady.log"
    py = sys.executable
    never_kill = "failureThreshold: 1000\n"
    containers = (
        container("silent", [py, "-c", SILENT_SERVER, str(silent)],
                  f"livenessProbe:\n  httpGet:\n    path: /\n    port: {silent}\n  periodSeconds: 1\n"
                  f"  timeoutSeconds: 1\n  {never_kill}")
        + container("big", [py, "-m", "http.server", str(big), "--bind", "127.0.0.1", "-d", str(tmp_path / "www")],
                    f"readinessProbe:\n  httpGet:\n    path: /big\n    port: {big}\n  periodSeconds: 1\n")
        + container("flood", ["sleep", "3600"], exec_probe("livenessProbe", "yes | head -c 50000000"))
        + container("steady", ["sleep", "3600"], exec_probe("readinessProbe", f"echo run >> {steady_runs}"))
    )
    write(tmp_path / "manifests", "hostile.yaml", manifest("hostile", containers))
    wait_for(lambda: (p := pod_of(agent, "hostile")) and polled(p, "big")["ready"] and p, timeout=15,
             what="a 10 MB body read as a success")
    first = len(steady_runs.read_text().splitlines()) if steady_runs.exists() else 0
    time.sleep(5)
    steady = len(steady_runs.read_text().splitlines()) - first
    assert steady >= 4, "the steady probe was held up"
    counts = probe_counts(agent, "hostile")
    assert counts.get(("silent", "Liveness", "failed"), 0) >= 3
    assert counts.get(("flood", "Liveness", "successful"), 0) >= 3
    pod = pod_of(agent, "hostile")
    assert pod is not None and all(s["restartCount"] == 0 for s in pod["status"]["containerStatuses"])
    started = time.monotonic()
    httpx.get(agent.url("read-only", "/pods"), timeout=10)
    assert time.monotonic() - started < 0.5  # the loop stays responsive
    # 50 MB of exec output per run is never held (the agent runs in this process)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 40 * 1024
