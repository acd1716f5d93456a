"""One monitoring stack for the whole tests/ecosystem package: a real agent running pods as root,
scraped by a real Prometheus that runs deploy/prometheus/ as shipped.

prometheus.yml and rules/*.yml are copied byte for byte; the test writes only what a deployment
writes itself: secrets/token (the agent's generated token) and targets/kubeletapi.yml (the agent's
secure port on loopback). The shipped file scrapes and evaluates every 30 s. A targets file may
set `__scrape_interval__` per target (Prometheus lets discovered labels override the job's
interval), so the test's targets file asks for 1 s scrapes: two scrapes of every endpoint take
seconds instead of a minute, with the config under test untouched. Rule evaluation keeps its 30 s,
so the fixture waits for one evaluation after the data is in (up to ~30 s, once per package).

The fixture is package-scoped: the test modules here share it, and it is torn down (agent, pods,
Prometheus) when the package's last test is done, so nothing keeps spinning through the rest of
the suite. The package's tests that use it run after those that do not, so the others (timing
checks of the InfluxDB sink among them) do not share the machine with it either.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.ecosystem.prometheus import INSTALL_HINT, PROMETHEUS, Prometheus
from tests.helpers import LOOPBACK, Agent, agent_args, free_port
from tests.podtools import container, manifest, pods, polled, wait_for, write

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
NAMESPACE = "default"
SCRAPE_INTERVAL = "1s"
MEM_LIMIT_MIB = 64
MEM_FILL_MIB = 59  # in a memory-backed emptyDir: working set ~92% of the limit, not OOM-killed


@dataclass(frozen=True)
class PromStack:
    """What the ecosystem tests share.

    agent       the running agent (tests.helpers.Agent), node `node`
    prometheus  the Prometheus scraping it (tests.ecosystem.prometheus.Prometheus)
    config_dir  Prometheus' config dir: prometheus.yml and rules/*.yml as in deploy/prometheus,
                plus secrets/token and targets/kubeletapi.yml
    node        the agent's node name (the targets' `node` label and kubelet_node_name's)
    namespace   the namespace of the test pods
    pods        pod name (as the agent names it, "<name>-<node>") -> its container names
    steady      the (pod, container) pairs that keep running (all but the crash-looping one)
    """

    agent: Agent
    prometheus: Prometheus
    config_dir: Path
    node: str
    namespace: str
    pods: dict[str, tuple[str, ...]]
    steady: frozenset[tuple[str, str]]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move this package's prom_stack tests behind its other tests (stable, in place)."""
    here = Path(__file__).parent
    places = [i for i, item in enumerate(items) if here in item.path.parents]
    block = [items[i] for i in places]
    users = [item for item in block if "prom_stack" in getattr(item, "fixturenames", ())]
    others = [item for item in block if "prom_stack" not in getattr(item, "fixturenames", ())]
    for i, item in zip(places, others + users, strict=True):
        items[i] = item


def stack_manifests(http_port: int) -> dict[str, str]:
    """Two pods giving every rule and dashboard panel something to show: a web server with HTTP
    readiness and liveness probes, a CPU-limited spinner (throttled), a container whose readiness
    probe always fails, a memory-limited container near its limit, a writer filling a disk-backed
    emptyDir, and a container that exits every 2 s (restarts, then CrashLoopBackOff)."""
    probe = f"httpGet: {{path: /, port: {http_port}, host: {LOOPBACK}}}"
    web = manifest("web", container(
        "server", [sys.executable, "-m", "http.server", str(http_port), "--bind", LOOPBACK], f"""
        readinessProbe:
          {probe}
          periodSeconds: 1
        livenessProbe:
          {probe}
          initialDelaySeconds: 2
          periodSeconds: 2
        resources:
          requests: {{cpu: 50m, memory: 32Mi}}
        """) + container("spin", ["sh", "-c", "while :; do :; done"], """
        resources:
          limits: {cpu: 200m}
        """) + container("gate", ["sleep", "3600"], """
        readinessProbe:
          exec: {command: ["false"]}
          periodSeconds: 1
        """))
    store = manifest("store", container(
        "cache", ["sh", "-c", f"dd if=/dev/zero of=/mem/fill bs=1M count={MEM_FILL_MIB} && exec sleep 3600"], f"""
        resources:
          limits: {{memory: {MEM_LIMIT_MIB}Mi}}
        volumeMounts:
        - {{name: mem, mountPath: /mem}}
        """) + container(
        "writer", ["sh", "-c", "dd if=/dev/zero of=/scratch/data bs=1M count=8 && exec sleep 3600"], """
        volumeMounts:
        - {name: scratch, mountPath: /scratch}
        """) + container("flaky", ["sh", "-c", "sleep 2; exit 1"]),
        "volumes:\n- {name: mem, emptyDir: {medium: Memory}}\n- {name: scratch, emptyDir: {}}")
    return {"web.yaml": web, "store.yaml": store}


def copy_config(config_dir: Path, agent: Agent) -> None:
    """The shipped config and rules, unchanged, plus the token and a loopback targets file."""
    (config_dir / "rules").mkdir(parents=True)
    shutil.copyfile(DEPLOY / "prometheus.yml", config_dir / "prometheus.yml")
    for rules in sorted((DEPLOY / "rules").glob("*.yml")):
        shutil.copyfile(rules, config_dir / "rules" / rules.name)
    (config_dir / "secrets").mkdir()
    token = config_dir / "secrets" / "token"
    token.write_text(agent.token())
    token.chmod(0o600)
    (config_dir / "targets").mkdir()
    (config_dir / "targets" / "kubeletapi.yml").write_text(yaml.safe_dump([{
        "targets": [f"{LOOPBACK}:{agent.kubelet.port('secure')}"],
        "labels": {"node": agent.kubelet.node_name,
                   "__scrape_interval__": SCRAPE_INTERVAL, "__scrape_timeout__": SCRAPE_INTERVAL},
    }]))


def started(agent: Agent, pod: str, containers: tuple[str, ...]) -> bool:
    """Every container of `pod` has run: it is running, or it has exited at least once."""
    found = pods(agent).get(pod)
    if found is None or found["status"].get("phase") != "Running":
        return False
    for name in containers:
        status = polled(found, name)
        if "running" not in status["state"] and not status.get("restartCount") and not status.get("lastState"):
            return False
    return True


def restarted(agent: Agent, pod: str, name: str) -> bool:
    found = pods(agent).get(pod)
    return found is not None and polled(found, name).get("restartCount", 0) >= 1


def wait_scrapes(prom: Prometheus, containers: frozenset[tuple[str, str]] = frozenset(), samples: int = 2) -> None:
    """Every kubelet endpoint up and scraped successfully at least twice, and `samples` cAdvisor
    CPU samples stored for each of `containers` (pod, container)."""
    def scraped() -> bool:
        successes = prom.query('sum_over_time(up{job="kubelet"}[5m])')
        ups = prom.query('up{job="kubelet"} == 1')
        if len(successes) != 4 or len(ups) != 4 or any(float(s["value"][1]) < 2 for s in successes):
            return False
        stored = prom.query('count_over_time(container_cpu_usage_seconds_total'
                            '{job="kubelet", metrics_path="/metrics/cadvisor", container!=""}[5m])')
        enough = {(s["metric"]["pod"], s["metric"]["container"]) for s in stored if float(s["value"][1]) >= samples}
        return enough >= containers

    wait_for(scraped, timeout=60, interval=0.5, what=f"scrapes of every kubelet endpoint and {samples} of {containers}")


def wait_rule_evaluation(prom: Prometheus) -> None:
    """Every rule group evaluated again after now (so with the scraped data in)."""
    before = {(g["file"], g["name"]): g["lastEvaluation"] for g in prom.api("rules")["groups"]}
    assert before, "Prometheus loaded no rule groups"

    def evaluated() -> bool:
        groups = prom.api("rules")["groups"]
        return all(g["lastEvaluation"] != before[(g["file"], g["name"])] for g in groups)

    wait_for(evaluated, timeout=75, interval=0.5, what="an evaluation of every rule group")


@pytest.fixture(scope="package")
def prom_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromStack]:
    if os.geteuid() != 0:
        pytest.skip("needs root: the pods' cgroups (CPU and memory limits, cAdvisor series)")
    if PROMETHEUS is None:
        pytest.skip(f"prometheus not installed {INSTALL_HINT}")
    tmp = tmp_path_factory.mktemp("promstack")
    manifests = tmp / "manifests"
    manifests.mkdir()
    agent = Agent(agent_args(tmp, "--housekeeping-interval", "1s", "--pod-manifest-path", str(manifests)))
    prom: Prometheus | None = None
    try:
        node = agent.kubelet.node_name
        stack_pods: dict[str, tuple[str, ...]] = {
            f"web-{node}": ("server", "spin", "gate"), f"store-{node}": ("cache", "writer", "flaky")}
        steady = frozenset((pod, name) for pod, names in stack_pods.items() for name in names if name != "flaky")
        config_dir = tmp / "prometheus-config"
        copy_config(config_dir, agent)
        prom = Prometheus(config_dir / "prometheus.yml", tmp / "prometheus")
        prom.wait_ready()
        # Pods start only once Prometheus scrapes, so the pod start and sync histograms grow
        # inside its rate windows (started before, they would be flat: quantiles NaN).
        wait_scrapes(prom)
        for filename, text in stack_manifests(free_port()).items():
            write(manifests, filename, text)
        wait_for(lambda: all(started(agent, pod, names) for pod, names in stack_pods.items()),
                 timeout=30, interval=0.2, what="every container of the test pods started")
        # Five CPU samples a container (4 s of it): the spinner's 0.2 cores stand out of the
        # others' start-up CPU in the first rate() the rules record.
        wait_scrapes(prom, steady, samples=5)
        wait_for(lambda: restarted(agent, f"store-{node}", "flaky"), timeout=30, interval=0.2,
                 what="the flaky container restarted")
        wait_rule_evaluation(prom)
        yield PromStack(agent, prom, config_dir, node, NAMESPACE, stack_pods, steady)
    finally:
        if prom is not None:
            prom.stop()
        agent.close()

