"""Prometheus finds every node through the API server: deploy/prometheus/prometheus-kubernetes-sd.yml
as shipped (the kube-prometheus kubelet jobs with Kubernetes service discovery, role node), run the
way it runs in a pod: the API server from KUBERNETES_SERVICE_HOST/PORT, the token and CA of a
service account bound to the scraper role at the service-account mount path.

That path is the pod's: Prometheus runs in a private mount namespace with a tmpfs on /run holding
the account's files, so nothing is written to the host's /run. Debian's Prometheus has no
Kubernetes discovery; `make cluster-bin` builds Prometheus from the Go module proxy with it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cluster.controlplane import ControlPlane, binary
from tests.cluster.node import Node
from tests.ecosystem.prometheus import Prometheus
from tests.podtools import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
CONFIG = "prometheus-kubernetes-sd.yml"
PATHS = ("/metrics", "/metrics/cadvisor", "/metrics/resource", "/metrics/probes")
SA_MOUNT = "/run/secrets/kubernetes.io/serviceaccount"  # /var/run is /run
# In a mount namespace of its own: a tmpfs over /run with the account's files, then Prometheus.
IN_POD = (f'mount -t tmpfs tmpfs /run && mkdir -p {SA_MOUNT} && cp "$SA_FILES"/token "$SA_FILES"/ca.crt {SA_MOUNT}/ '
          '&& exec "$@"')
SCRAPER_RBAC = """apiVersion: v1
kind: ServiceAccount
metadata: {{name: prometheus, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: "kubeletapi-test:prometheus-{ns}"}}
rules:
- {{apiGroups: [""], resources: [nodes], verbs: [list, watch, get]}}
- {{apiGroups: [""], resources: [nodes/metrics], verbs: [get]}}
- {{nonResourceURLs: [/metrics, /metrics/slis], verbs: [get]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: "kubeletapi-test:prometheus-{ns}"}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "kubeletapi-test:prometheus-{ns}"}}
subjects: [{{kind: ServiceAccount, name: prometheus, namespace: {ns}}}]
"""


@pytest.fixture
def two_nodes(control_plane: ControlPlane, tmp_path: Path) -> Iterator[list[Node]]:
    dirs = [tmp_path / f"n{i}" for i in range(2)]
    for d in dirs:
        d.mkdir()
    nodes = [Node(control_plane, d) for d in dirs]
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            wait_for(node.ready, timeout=30, what=f"{node.name} Ready")
        yield nodes
    finally:
        for node in nodes:
            node.remove()


@pytest.fixture
def scraper_files(control_plane: ControlPlane, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """The service account's token and the cluster CA, as its pod would see them mounted."""
    rbac = SCRAPER_RBAC.format(ns=namespace)
    control_plane.kubectl("apply", "-f", "-", input_=rbac)
    try:
        files = tmp_path / "serviceaccount"
        files.mkdir()
        token = control_plane.kubectl("create", "token", "prometheus", "-n", namespace, "--duration=1h").stdout
        (files / "token").write_text(token.strip())
        shutil.copyfile(control_plane.pki.ca.cert, files / "ca.crt")
        yield files
    finally:
        control_plane.kubectl("delete", "-f", "-", "--ignore-not-found", input_=rbac, check=False)


def _config_dir(tmp: Path) -> Path:
    """The shipped file and rules, unchanged."""
    config_dir = tmp / "prometheus"
    (config_dir / "rules").mkdir(parents=True)
    shutil.copyfile(DEPLOY / CONFIG, config_dir / CONFIG)
    for rules in sorted((DEPLOY / "rules").glob("*.yml")):
        shutil.copyfile(rules, config_dir / "rules" / rules.name)
    return config_dir


def test_prometheus_discovers_and_scrapes_every_node_through_the_api_server(
        two_nodes: list[Node], control_plane: ControlPlane, scraper_files: Path, tmp_path: Path) -> None:
    config_dir = _config_dir(tmp_path)
    api = urlsplit(control_plane.server)
    prom = Prometheus(
        config_dir / CONFIG, config_dir,
        command=["unshare", "--mount", "--propagation", "private", "sh", "-c", IN_POD, "in-pod",
                 binary("prometheus")],
        env={"SA_FILES": str(scraper_files), "KUBERNETES_SERVICE_HOST": str(api.hostname),
             "KUBERNETES_SERVICE_PORT": str(api.port)},
    )
    try:
        prom.wait_ready(timeout=30)
        expected = {(node.name, path): f"{control_plane.node_ip}:{node.flag('--port')}"
                    for node in two_nodes for path in PATHS}

        def all_up() -> dict[tuple[str, str], dict[str, object]] | None:
            found = {}
            for target in prom.api("targets", state="active")["activeTargets"]:
                labels = target["labels"]
                key = (labels.get("node"), labels.get("metrics_path"))
                if key in expected and target["health"] == "up":
                    found[key] = target
            return found if set(found) == set(expected) else None

        # a new target's first scrape comes within one 30 s interval of its discovery
        targets = wait_for(all_up, timeout=90, interval=1, what="every node's four kubelet targets up")
        for (name, path), target in targets.items():
            labels = target["labels"]
            # role node names the instance after the Node (the address is in the scrape URL)
            assert labels["job"] == "kubelet" and labels["instance"] == name, labels
            assert target["scrapeUrl"] == f"https://{expected[(name, path)]}{path}", target
            discovered = target["discoveredLabels"]
            assert discovered["__meta_kubernetes_node_name"] == name, discovered
        for node in two_nodes:
            series = prom.query(f'kubelet_node_name{{job="kubelet",node="{node.name}"}}')
            assert len(series) == 1, series
            cadvisor = prom.query(f'machine_cpu_cores{{metrics_path="/metrics/cadvisor",node="{node.name}"}}')
            assert cadvisor and float(cadvisor[0]["value"][1]) > 0, cadvisor
            resource = prom.query(f'node_memory_working_set_bytes{{metrics_path="/metrics/resource",'
                                  f'node="{node.name}"}}')
            assert resource and float(resource[0]["value"][1]) > 0, resource
        groups = prom.api("rules")["groups"]
        assert groups and all(rule["health"] != "err" for g in groups for rule in g["rules"]), groups
    finally:
        prom.stop()
