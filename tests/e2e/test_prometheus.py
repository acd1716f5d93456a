"""The metrics endpoints as real Prometheus tooling sees them: `promtool check metrics` lints the text
of every endpoint of a live agent running pods, and a real Prometheus scrapes the secure port over TLS
with the generated bearer token and answers the queries kube-prometheus dashboards are built on.

Both need root: the cAdvisor pod and container series come from the pods' cgroups.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.ecosystem.prometheus import INSTALL_HINT, PROMETHEUS, PROMTOOL, Prometheus
from tests.helpers import LOOPBACK, Agent
from tests.podtools import container, manifest, running, wait_for, write

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: cAdvisor pod/container series need cgroups"),
]

PATHS = ("/metrics", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes")
NAMESPACE = "default"
IMAGE = "busybox:1.36"
# (pod, container) of every test container: three containers with distinct names across two pods.
CONTAINERS = {("alpha-testnode", "web"), ("alpha-testnode", "spin"), ("beta-testnode", "db")}
ALPHA = manifest("alpha", container("web", ["sleep", "3600"]) + container(
    "spin", ["sh", "-c", "while :; do :; done"], """
    resources:
      limits: {cpu: 500m}
"""))
BETA = manifest("beta", container("db", ["sleep", "3600"]))

# promtool lint findings the real kubelet shows too: (metric, finding) -> why the agent keeps it.
# Everything else promtool reports fails the test, and so does an entry here that no longer occurs.
ALLOWED_LINT: dict[str, dict[tuple[str, str], str]] = {
    "/metrics/cadvisor": {
        ("cadvisor_version_info", "label names should be written in 'snake_case' not 'camelCase'"):
            "cAdvisor's labels are kernelVersion, osVersion, dockerVersion, cadvisorVersion, cadvisorRevision",
        ("container_cpu_load_d_average_10s", "metric names should not contain abbreviated units"):
            "cAdvisor's gauge name for the load.d average; promlint reads the `d` as days",
        ("container_fs_inodes_total", 'non-counter metrics should not have "_total" suffix'):
            "cAdvisor declares this inode count (total inodes of the filesystem) a gauge",
        ("container_memory_failcnt", 'counter metrics should have "_total" suffix'):
            "cAdvisor's counter is named after the cgroup file memory.failcnt, without _total",
    },
}
FINDING = re.compile(r"^(?P<metric>[a-zA-Z_:][a-zA-Z0-9_:]*):? (?P<text>.+)$")


@pytest.fixture
def pods_agent(start_agent: Callable[..., Agent], tmp_path: Path) -> Agent:
    """An agent sampling every second, running the test pods, each container sampled at least once."""
    agent = start_agent("--housekeeping-interval", "1s", manifests=True)
    write(tmp_path / "manifests", "alpha.yaml", ALPHA)
    write(tmp_path / "manifests", "beta.yaml", BETA)
    wait_for(lambda: running(agent, "alpha") and running(agent, "beta"), timeout=30, what="pods running")

    def sampled() -> set[tuple[str, str]] | None:
        doc = httpx.get(agent.url("read-only", "/stats/summary"), timeout=10).json()
        seen = {(p["podRef"]["name"], c["name"]) for p in doc["pods"] for c in p["containers"]
                if c.get("memory", {}).get("workingSetBytes") and "usageCoreNanoSeconds" in c.get("cpu", {})}
        return seen if seen >= CONTAINERS else None

    wait_for(sampled, timeout=30, interval=0.2, what="every test container in /stats/summary")
    return agent


def scrape(agent: Agent, path: str) -> str:
    """The body of a metrics endpoint on the secure port, fetched with the bearer token as Prometheus does."""
    with agent.client(token=agent.token()) as client:
        response = client.get(agent.url("secure", path))
    assert response.status_code == 200, (path, response.status_code, response.text)
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4"), response.headers
    return response.text


def promtool_findings(body: str, path: str) -> set[tuple[str, str]]:
    """(metric, finding) pairs `promtool check metrics` reports for `body`; a parse error fails."""
    assert PROMTOOL is not None
    proc = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True, text=True, timeout=30)
    output = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode in (0, 3), f"promtool could not parse {path} (exit {proc.returncode}): {output}"
    findings = set()
    for line in output:
        match = FINDING.match(line)
        assert match, f"unexpected promtool output for {path}: {line!r}"
        findings.add((match["metric"], match["text"]))
    assert (proc.returncode == 3) == bool(findings), (path, proc.returncode, output)
    return findings


def structure_problems(body: str) -> list[str]:
    """Families without HELP or TYPE, families declared twice, and series exposed twice."""
    problems = []
    families = list(text_string_to_metric_families(body))
    for name, count in Counter(f.name for f in families).items():
        if count > 1:
            problems.append(f"family {name} declared {count} times")
    series: Counter[tuple[str, tuple[tuple[str, str], ...]]] = Counter()
    for family in families:
        if not family.documentation:
            problems.append(f"family {family.name} has no HELP")
        if family.type in ("unknown", "untyped"):
            problems.append(f"family {family.name} has no TYPE (or is untyped)")
        series.update((s.name, tuple(sorted(s.labels.items()))) for s in family.samples)
    problems += [f"series {key} exposed {count} times" for key, count in series.items() if count > 1]
    return problems


def cadvisor_series(body: str, name: str) -> set[tuple[str, str]]:
    """(pod, container) of every series of family `name` with a pod label."""
    return {(s.labels["pod"], s.labels["container"]) for f in text_string_to_metric_families(body)
            for s in f.samples if s.name == name and s.labels.get("pod")}


@pytest.mark.skipif(PROMTOOL is None, reason=f"promtool not installed {INSTALL_HINT}")
def test_promtool_and_client_parser_accept_every_metrics_endpoint(pods_agent: Agent) -> None:
    unexpected: dict[str, set[tuple[str, str]]] = {}
    stale: dict[str, set[tuple[str, str]]] = {}
    problems: dict[str, list[str]] = {}
    for path in PATHS:
        body = scrape(pods_agent, path)
        if path == "/metrics/cadvisor":  # the lint covers pod-level and container series
            pod_names = {pod for pod, _ in CONTAINERS}
            assert cadvisor_series(body, "container_memory_working_set_bytes") >= CONTAINERS | {
                (pod, "") for pod in pod_names}
        allowed = set(ALLOWED_LINT.get(path, {}))
        findings = promtool_findings(body, path)
        if findings - allowed:
            unexpected[path] = findings - allowed
        if allowed - findings:
            stale[path] = allowed - findings
        if structure := structure_problems(body):
            problems[path] = structure
    assert not unexpected and not stale, (
        f"promtool findings the real kubelet does not have: {unexpected}; "
        f"ALLOWED_LINT entries promtool no longer reports (remove them): {stale}")
    assert not problems, problems


def kubelet_scrape_configs(agent: Agent, token_file: Path) -> list[dict[str, Any]]:
    """One scrape config per endpoint, labelled like kube-prometheus' kubelet ServiceMonitor
    (job="kubelet", metrics_path=<path>). The serving certificate has a 127.0.0.1 IP SAN, so the
    target address verifies against the node CA without a `server_name`."""
    target = f"{LOOPBACK}:{agent.kubelet.port('secure')}"
    return [{
        "job_name": "kubelet" + path.removeprefix("/metrics").replace("/", "-"),
        "scheme": "https",
        "metrics_path": path,
        "authorization": {"credentials_file": str(token_file)},
        "tls_config": {"ca_file": str(agent.certs / "ca.crt")},
        "static_configs": [{"targets": [target]}],
        "relabel_configs": [
            {"target_label": "job", "replacement": "kubelet"},
            {"source_labels": ["__metrics_path__"], "target_label": "metrics_path"},
        ],
    } for path in PATHS]


@pytest.fixture
def prometheus(pods_agent: Agent, tmp_path: Path) -> Iterator[Prometheus]:
    token_file = tmp_path / "kubelet-token"
    token_file.write_text(pods_agent.token())
    token_file.chmod(0o600)
    prom = Prometheus.scraping(tmp_path / "prometheus", kubelet_scrape_configs(pods_agent, token_file))
    try:
        prom.wait_ready()
        yield prom
    finally:
        prom.stop()


def eventually(check: Callable[[], tuple[bool, Any]], what: str, timeout: float = 30) -> Any:
    """Poll `check` (-> (done, detail)) until done; the last detail goes into the failure message."""
    deadline = time.monotonic() + timeout
    while True:
        done, detail = check()
        if done:
            return detail
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {detail!r}")
        time.sleep(0.25)


def labels(series: dict[str, Any], *names: str) -> tuple[str, ...]:
    return tuple(series["metric"].get(n, "") for n in names)


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason=f"prometheus not installed {INSTALL_HINT}")
@pytest.mark.alone  # a CPU-bound pod must get its whole limit: no neighbour may take the cores
def test_prometheus_scrapes_the_secure_port(pods_agent: Agent, prometheus: Prometheus) -> None:
    agent, prom = pods_agent, prometheus
    port = agent.kubelet.port("secure")
    want_urls = {f"https://{LOOPBACK}:{port}{path}" for path in PATHS}

    def all_up() -> tuple[bool, Any]:
        targets = prom.api("targets", state="active")["activeTargets"]
        summary = [(t["scrapeUrl"], t["health"], t["lastError"]) for t in targets]
        ok = {t["scrapeUrl"] for t in targets} == want_urls and all(
            t["health"] == "up" and t["lastError"] == "" for t in targets)
        return ok, summary

    # Prometheus applies discovered targets every 5 s, then scrapes every second.
    eventually(all_up, "all four kubelet targets up", timeout=30)

    def up() -> tuple[bool, Any]:
        result = prom.query("up")
        got = {labels(s, "job", "metrics_path"): s["value"][1] for s in result}
        return got == {("kubelet", path): "1" for path in PATHS}, got

    eventually(up, "up == 1 for every endpoint")

    def working_sets() -> tuple[bool, Any]:
        result = prom.query('container_memory_working_set_bytes{container!="",image!=""}')
        return len(result) == len(CONTAINERS), result

    result = eventually(working_sets, "one working-set series per test container")
    got = Counter(labels(s, "namespace", "pod", "container") for s in result)
    assert got == Counter((NAMESPACE, pod, name) for pod, name in CONTAINERS), result
    for s in result:
        assert labels(s, "job", "metrics_path", "image") == ("kubelet", "/metrics/cadvisor", IMAGE), s
        assert s["metric"]["id"].endswith(s["metric"]["name"]), s  # the container's cgroup
        assert float(s["value"][1]) > 0, s

    # The busy container is held at 0.5 CPU by its limit. The counter samples Prometheus stored (at
    # the agent's housekeeping timestamps) show that figure from both endpoints, and rate() over
    # them is a positive number (below the raw figure when it extrapolates to the window's edges).
    for path in ("/metrics/cadvisor", "/metrics/resource"):
        spin = f'container_cpu_usage_seconds_total{{metrics_path="{path}",pod="alpha-testnode",container="spin"}}'

        def spin_samples(spin: str = spin) -> tuple[bool, Any]:
            data = prom.api("query", query=f"{spin}[6s]")
            assert data["resultType"] == "matrix", data
            values = data["result"][0]["values"] if len(data["result"]) == 1 else []
            return len(values) >= 4, values

        values = eventually(spin_samples, f"four CPU samples of spin from {path} in 6 s")
        (t1, v1), (t2, v2) = values[0], values[-1]
        assert 0.4 <= (float(v2) - float(v1)) / (t2 - t1) <= 0.6, (path, values)
        rates = prom.query(f"rate({spin}[6s])")
        assert len(rates) == 1 and 0 < float(rates[0]["value"][1]) <= 0.65, (path, rates)

    # No sample was dropped: the agent's sample timestamps are neither too old, out of order, nor
    # reused with a different value.
    own = prom.self_metrics()
    dropped = {name: own.get(name, "missing") for name in (
        "prometheus_target_scrapes_sample_out_of_bounds_total",
        "prometheus_target_scrapes_sample_out_of_order_total",
        "prometheus_target_scrapes_sample_duplicate_timestamp_total",
        "prometheus_tsdb_out_of_bound_samples_total",
        "prometheus_tsdb_too_old_samples_total",
        "prometheus_tsdb_out_of_order_samples_total",
    )}
    assert all(value == 0 for value in dropped.values()), dropped
    ok, summary = all_up()
    assert ok, summary
