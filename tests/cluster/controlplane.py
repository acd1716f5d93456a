"""Start and stop a real control plane on loopback: etcd, kube-apiserver, kube-controller-manager
and kube-scheduler, with the Node and RBAC authorizers, NodeRestriction, service-account keys and
the API server's kubelet client certificate (as hack/local-up-cluster.sh starts them).

Binaries come from `make cluster-bin` (the cache named by KUBELETAPI_CLUSTER_BIN, else
~/.cache/kubeletapi/k8s-<version>); a missing one is an error that says how to build it.
Processes are stopped by PID, data directories removed with the test's tmp dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.cluster.pki import ClusterPKI, Pair
from tests.daemon import terminate
from tests.helpers import LOOPBACK, free_ports

REPO = Path(__file__).resolve().parents[2]
SERVICE_CIDR = "10.0.0.0/24"


def k8s_version() -> str:
    for line in (REPO / "tests/cluster/k8s/go.mod").read_text().splitlines():
        if line.startswith("require k8s.io/kubernetes "):
            return line.split()[2]
    raise AssertionError("tests/cluster/k8s/go.mod names no k8s.io/kubernetes version")


def bin_dir() -> Path:
    env = os.environ.get("KUBELETAPI_CLUSTER_BIN")
    return Path(env) if env else Path.home() / ".cache" / "kubeletapi" / f"k8s-{k8s_version()}"


def binary(name: str) -> str:
    path = bin_dir() / name
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{path} is missing: `make cluster-bin` builds the control plane (make test does)")
    return str(path)


@dataclass
class Component:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self, timeout: float = 15) -> None:
        terminate(self.proc, timeout)

    def tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""


@dataclass
class ControlPlane:
    root: Path
    node_ip: str = LOOPBACK  # where this plane's nodes serve (tests.netns: proxyable, unlike loopback)
    detached: bool = False  # components in sessions of their own, outliving this process (scripts/cluster.sh)
    audit_nodes: bool = False  # log every request of a node (group system:nodes) to <root>/audit.log
    # Where kube-apiserver serves (and every kubeconfig points): a fabric address (tests.cluster.fabric)
    # reaches it from the nodes' namespaces too. The other components stay on loopback.
    api_address: str = LOOPBACK
    cluster_cidr: str = ""  # set: the controller-manager allocates each Node a spec.podCIDR from it
    # TLS bootstrap (tests/cluster/bootstrap.py): bootstrap tokens authenticate, and the
    # controller-manager runs bootstrapsigner and tokencleaner too.
    bootstrap_tokens: bool = False
    signing_duration: str = ""  # the controller-manager's --cluster-signing-duration ("": its year)
    pki: ClusterPKI = field(init=False)
    components: dict[str, Component] = field(default_factory=dict)
    api_port: int = 0

    def __post_init__(self) -> None:
        self.pki = ClusterPKI(self.root / "pki")
        self.etcd_port, self.peer_port, self.api_port, self.kcm_port, self.sched_port = free_ports(5)
        self.server = f"https://{self.api_address}:{self.api_port}"
        pki = self.pki
        pki.issue("apiserver", "kube-apiserver", server_ips=sorted({LOOPBACK, self.api_address, "10.0.0.1"}),
                  server_names=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                "kubernetes.default.svc.cluster.local"])
        self.kubelet_client = pki.issue("apiserver-kubelet-client", "kube-apiserver", ["kube-apiserver"])
        self.admin = pki.kubeconfig("admin", self.server, pki.issue("admin", "kubernetes-admin", ["system:masters"]))
        self.kcm = pki.kubeconfig("controller-manager", self.server,
                                  pki.issue("controller-manager", "system:kube-controller-manager"))
        self.scheduler = pki.kubeconfig("scheduler", self.server, pki.issue("scheduler", "system:kube-scheduler"))
        self.front_proxy = pki.issue("front-proxy-client", "front-proxy-client")

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self, node_monitor_grace_period: str = "50s") -> None:
        try:
            self._etcd()
            self._apiserver()
            self.wait_ready()
            self._controller_manager(node_monitor_grace_period)
            self._scheduler()
            self.kubectl("create", "clusterrolebinding", "kube-apiserver-kubelet-admin",
                         "--clusterrole=system:kubelet-api-admin", "--user=kube-apiserver")
            self.wait_namespace_ready("default")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for name in reversed(list(self.components)):
            self.components.pop(name).stop()

    def stop_apiserver(self) -> None:
        """An outage: the API server goes away (etcd and the controllers stay)."""
        self.components.pop("kube-apiserver").stop()

    def start_apiserver(self) -> None:
        """The API server returns on the same port, with the same data."""
        self._apiserver()
        self.wait_ready()

    def _spawn(self, name: str, args: Sequence[str]) -> Component:
        log = self.root / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen([binary(name), *args], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=self.detached)
        component = Component(name, proc, log)
        self.components[name] = component
        return component

    def _etcd(self) -> None:
        client, peer = f"http://{LOOPBACK}:{self.etcd_port}", f"http://{LOOPBACK}:{self.peer_port}"
        self._spawn("etcd", [
            "--name", "default", "--data-dir", str(self.root / "etcd"),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"default={peer}", "--log-level", "warn",
            "--unsafe-no-fsync",  # a test cluster: a crash loses nothing anyone needs
        ])

    def _apiserver(self) -> None:
        pki = self.pki.root
        self._spawn("kube-apiserver", [
            f"--etcd-servers=http://{LOOPBACK}:{self.etcd_port}",
            f"--bind-address={self.api_address}", f"--advertise-address={self.api_address}",
            f"--secure-port={self.api_port}",
            f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
            f"--client-ca-file={pki}/ca.crt",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pki}/sa.pub", f"--service-account-signing-key-file={pki}/sa.key",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            f"--kubelet-client-certificate={self.kubelet_client.cert}",
            f"--kubelet-client-key={self.kubelet_client.key}",
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            f"--cert-dir={self.root / 'apiserver-certs'}",
            "--endpoint-reconciler-type=none",  # the `kubernetes` Service would point at loopback
            *self._aggregator_flags(),
            *self._audit_flags(),
            *(["--enable-bootstrap-token-auth"] if self.bootstrap_tokens else []),
        ])

    def _aggregator_flags(self) -> list[str]:
        """Aggregated APIs (metrics-server's metrics.k8s.io): the API server proxies to them as
        front-proxy-client, and dials their Endpoints directly (no kube-proxy here). One CA signs
        the proxy's certificate too; allowed-names keeps other client certificates from asserting
        identities in the request headers."""
        return [
            f"--requestheader-client-ca-file={self.pki.ca.cert}", "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={self.front_proxy.cert}", f"--proxy-client-key-file={self.front_proxy.key}",
            "--enable-aggregator-routing=true",
        ]

    AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  userGroups: ["system:nodes"]
- level: None
"""

    @property
    def audit_log(self) -> Path:
        return self.root / "audit.log"

    def _audit_flags(self) -> list[str]:
        """One JSON line per node request, when it completed (a watch: when it ended)."""
        if not self.audit_nodes:
            return []
        policy = self.root / "audit-policy.yaml"
        policy.write_text(self.AUDIT_POLICY)
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-format=json",
                "--audit-log-maxsize=0"]

    def _controller_manager(self, grace: str) -> None:
        pki = self.pki.root
        kubeconfig = str(self.kcm)
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--service-account-private-key-file={pki}/sa.key", f"--root-ca-file={pki}/ca.crt",
            f"--cluster-signing-cert-file={pki}/ca.crt", f"--cluster-signing-key-file={pki}/ca.key",
            "--use-service-account-credentials", "--leader-elect=false",
            f"--bind-address={LOOPBACK}", f"--secure-port={self.kcm_port}",
            f"--node-monitor-grace-period={grace}", "--node-monitor-period=2s",
            "--horizontal-pod-autoscaler-sync-period=5s",  # HPA tests see a decision every 5 s, not 15 s
            *self._node_cidr_flags(),
            *self._signing_flags(),
        ])

    NODE_CIDR_MASK = 24  # a node's podCIDR: 254 pod addresses

    def _node_cidr_flags(self) -> list[str]:
        """The node IPAM controller gives every Node a spec.podCIDR out of `cluster_cidr`."""
        if not self.cluster_cidr:
            return []
        return ["--allocate-node-cidrs", f"--cluster-cidr={self.cluster_cidr}",
                f"--node-cidr-mask-size={self.NODE_CIDR_MASK}"]

    def _signing_flags(self) -> list[str]:
        flags = ["--controllers=*,bootstrapsigner,tokencleaner"] if self.bootstrap_tokens else []
        return flags + ([f"--cluster-signing-duration={self.signing_duration}"] if self.signing_duration else [])

    def _scheduler(self) -> None:
        kubeconfig = str(self.scheduler)
        self._spawn("kube-scheduler", [
            f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}", "--leader-elect=false",
            f"--bind-address={LOOPBACK}", f"--secure-port={self.sched_port}",
        ])

    # --- clients -----------------------------------------------------------------------------
    def admin_client(self, timeout: float = 10) -> httpx.Client:
        ctx = ssl.create_default_context(cafile=str(self.pki.ca.cert))
        pair = Pair(self.pki.root / "admin.crt", self.pki.root / "admin.key")
        ctx.load_cert_chain(pair.cert, pair.key)
        return httpx.Client(base_url=self.server, verify=ctx, timeout=timeout)

    def kubectl(self, *args: str, input_: str | None = None, timeout: float = 60, check: bool = True
                ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([binary("kubectl"), f"--kubeconfig={self.admin}", *args], input=input_,
                                capture_output=True, text=True, timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {result.returncode}\n{result.stdout}\n{result.stderr}")
        return result

    def get_json(self, path: str) -> dict[str, object]:
        with self.admin_client() as client:
            response = client.get(path)
            response.raise_for_status()
            body = response.json()
        assert isinstance(body, dict)
        return body

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for component in self.components.values():
                if component.proc.poll() is not None:
                    raise AssertionError(f"{component.name} exited {component.proc.returncode}:\n{component.tail()}")
            with contextlib.suppress(httpx.HTTPError), self.admin_client(timeout=3) as client:
                response = client.get("/readyz")
                if response.status_code == 200:
                    return
                last = response.text
            time.sleep(0.2)
        raise AssertionError(f"kube-apiserver not ready after {timeout}s: {last}\n"
                             f"{self.components['kube-apiserver'].tail()}")

    def wait_namespace_ready(self, namespace: str, timeout: float = 60) -> None:
        """The controller-manager has published the namespace's default ServiceAccount and its
        kube-root-ca.crt ConfigMap (pods need both)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError), self.admin_client() as client:
                sa = client.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
                cm = client.get(f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt")
                if sa.status_code == 200 and cm.status_code == 200:
                    return
            time.sleep(0.2)
        raise AssertionError(f"namespace {namespace} has no default ServiceAccount or root CA after {timeout}s:\n"
                             f"{self.components['kube-controller-manager'].tail()}")

    def node_identity(self, node: str) -> Path:
        """A kubeconfig for `node` as the Node authorizer knows nodes: CN=system:node:<node>, O=system:nodes."""
        pair = self.pki.issue(f"node-{node}", f"system:node:{node}", ["system:nodes"])
        return self.pki.kubeconfig(f"node-{node}", self.server, pair)

    def objects(self, path: str) -> list[dict[str, object]]:
        items = self.get_json(path).get("items")
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def dump(self) -> str:
        return json.dumps({name: c.tail(20) for name, c in self.components.items()}, indent=1)
