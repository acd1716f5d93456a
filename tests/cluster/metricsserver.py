"""metrics-server (v0.8, built by `make cluster-bin` from tests/cluster/metrics-server) as the real
aggregated API metrics.k8s.io of a test control plane: its own client identity and RBAC (as its
release manifest grants them), a serving certificate from the plane's CA for the name the
aggregator dials, a Service without selector and Endpoints pointing at its address (the API server
runs with --enable-aggregator-routing, so it dials that address itself), and the APIService.

`stop` unregisters the APIService first: an aggregated API that no longer answers breaks discovery,
and with it kubectl's warnings and the namespace controller's deletions of later tests.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import time
from pathlib import Path

import yaml

from tests.cluster.controlplane import Component, ControlPlane, binary
from tests.helpers import free_port

NAMESPACE, NAME = "kube-system", "metrics-server"
APISERVICE = "v1beta1.metrics.k8s.io"
USER = "system:metrics-server"
RESOLUTION = "10s"  # metrics-server's minimum: two scrapes 10 s apart make a CPU rate


class MetricsServer:
    """Serves on `address` (an address the API server can dial: not loopback, EndpointSlices refuse it)."""

    def __init__(self, plane: ControlPlane, root: Path, address: str) -> None:
        self.plane = plane
        self.root = root
        self.address = address
        self.port = free_port()
        self.component: Component | None = None

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 90) -> None:
        pki = self.plane.pki
        serving = pki.issue("metrics-server-serving", NAME, server_ips=[self.address],
                            server_names=[f"{NAME}.{NAMESPACE}.svc", f"{NAME}.{NAMESPACE}.svc.cluster.local"])
        kubeconfig = str(pki.kubeconfig("metrics-server", self.plane.server, pki.issue("metrics-server-client", USER)))
        self.plane.kubectl("apply", "-f", "-", input_=self._objects())
        log = self.root / "metrics-server.log"
        with log.open("ab") as out:
            proc = subprocess.Popen([
                binary("metrics-server"), f"--bind-address={self.address}", f"--secure-port={self.port}",
                f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}",
                f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
                # Every kubeletapi node signs its serving certificate with a CA of its own (no
                # serverTLSBootstrap here); metrics-server's own manifests for such clusters say the same.
                "--kubelet-insecure-tls",
                f"--metric-resolution={RESOLUTION}", "--kubelet-request-timeout=5s", "-v=2",
            ], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.component = Component("metrics-server", proc, log)
        self._wait_available(timeout)

    def stop(self) -> None:
        self.plane.kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
        if self.component is not None:
            self.component.stop()
            self.component = None
        self.plane.kubectl("delete", "-f", "-", "--ignore-not-found", input_=self._objects(), check=False)

    def tail(self) -> str:
        return self.component.tail() if self.component is not None else ""

    def _wait_available(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        status: object = None
        while time.monotonic() < deadline:
            assert self.component is not None
            if self.component.proc.poll() is not None:
                raise AssertionError(f"metrics-server exited {self.component.proc.returncode}:\n{self.tail()}")
            with contextlib.suppress(AssertionError):
                status = self.plane.get_json(f"/apis/apiregistration.k8s.io/v1/apiservices/{APISERVICE}").get("status")
                conditions = status.get("conditions", []) if isinstance(status, dict) else []
                if any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions):
                    return
            time.sleep(0.5)
        raise AssertionError(f"APIService {APISERVICE} not Available after {timeout}s: {json.dumps(status)}\n"
                             f"{self.tail()}")

    # --- the API objects ---------------------------------------------------------------------
    def _objects(self) -> str:
        ca = base64.b64encode(self.plane.pki.ca_pem).decode()
        role = f"kubeletapi-test:{NAME}"
        docs: list[dict[str, object]] = [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
             "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                       {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]}]},
            _binding("ClusterRoleBinding", role, "ClusterRole", role),
            _binding("ClusterRoleBinding", f"{role}:auth-delegator", "ClusterRole", "system:auth-delegator"),
            _binding("RoleBinding", f"{role}:auth-reader", "Role", "extension-apiserver-authentication-reader"),
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": NAME, "namespace": NAMESPACE},
             "spec": {"ports": [{"name": "https", "port": 443, "targetPort": self.port, "protocol": "TCP"}]}},
            {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": NAME, "namespace": NAMESPACE},
             "subsets": [{"addresses": [{"ip": self.address}],
                          "ports": [{"name": "https", "port": self.port, "protocol": "TCP"}]}]},
            {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": APISERVICE},
             "spec": {"service": {"name": NAME, "namespace": NAMESPACE, "port": 443}, "group": "metrics.k8s.io",
                      "version": "v1beta1", "caBundle": ca, "groupPriorityMinimum": 100, "versionPriority": 100}},
        ]
        return yaml.safe_dump_all(docs)


def _binding(kind: str, name: str, role_kind: str, role: str) -> dict[str, object]:
    meta: dict[str, str] = {"name": name}
    if kind == "RoleBinding":
        meta["namespace"] = NAMESPACE
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]}
