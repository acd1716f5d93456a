"""The oracle's two nodes: the real kubelet and kubeletapi, each on a private containerd of its
own, running the same static pods (tests/oracle/pods.py) and sharing one PKI (the CA, the serving
certificate for 127.0.0.1 and the admin client certificate kubeletapi's cert dir holds), so one
client speaks to both.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import ipaddress
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from kubeletapi.pki import NodePKI, ensure_pki
from tests.cluster.controlplane import binary
from tests.cri import containerd, images
from tests.cri.cleanup import remove_all_sandboxes, remove_cgroup_root
from tests.helpers import LOOPBACK, Agent, agent_args, tls_client_context
from tests.oracle.pods import PODS, write_all
from tests.oracle.realkubelet import RealKubelet, Serving

SETTLE_TIMEOUT_S = 90.0


@dataclass
class Side:
    """One node as a client sees it."""

    name: str  # "kubelet" | "kubeletapi"
    ports: dict[str, int]
    pki: NodePKI
    cri: containerd.PrivateContainerd

    def url(self, listener: str = "secure", path: str = "/") -> str:
        scheme = "https" if listener == "secure" else "http"
        return f"{scheme}://{LOOPBACK}:{self.ports[listener]}{path}"

    def client(self, cert: bool = True, **kwargs: Any) -> httpx.Client:
        """An HTTPS client trusting the shared CA, with the admin certificate unless `cert=False`."""
        pair = (self.pki.admin_crt, self.pki.admin_key) if cert else None
        return httpx.Client(verify=tls_client_context(self.pki.ca_crt, pair), timeout=15, **kwargs)

    def get(self, path: str, listener: str = "secure") -> httpx.Response:
        with self.client() as client:
            return client.get(self.url(listener, path))

    def json(self, path: str, listener: str = "secure") -> Any:
        response = self.get(path, listener)
        assert response.status_code == 200, (self.name, path, response.status_code, response.text[:300])
        return response.json()


@dataclass
class Pair:
    kubelet: Side
    ours: Side
    real: RealKubelet
    agent: Agent
    manifests: Path
    stop: list[Callable[[], None]] = field(default_factory=list)

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.kubelet, self.ours


def settled(side: Side) -> bool:
    """Every pod in its steady state: all Running and Ready but the crasher, which has restarted at
    least once and waits in CrashLoopBackOff; the logger has logged."""
    try:
        items = side.json("/pods")["items"] or []  # the kubelet writes null before its first pod
    except (httpx.HTTPError, AssertionError):
        return False
    by_name = {p["metadata"]["name"].removesuffix("-testnode"): p for p in items}
    if set(by_name) != set(PODS):
        return False
    for name, pod in by_name.items():
        statuses = pod["status"].get("containerStatuses") or []
        if len(statuses) != 1:
            return False
        status = statuses[0]
        if name == "crasher":
            waiting = status["state"].get("waiting") or {}
            if status.get("restartCount", 0) < 1 or waiting.get("reason") != "CrashLoopBackOff":
                return False
        elif not (status.get("ready") and "running" in status["state"]):
            return False
    return _summarised(side)


def _summarised(side: Side) -> bool:
    """The summary has stats of every running pod's container (a housekeeping cycle has seen them)."""
    try:
        summary = side.json("/stats/summary")
    except (httpx.HTTPError, AssertionError):
        return False
    seen = {p["podRef"]["name"].removesuffix("-testnode") for p in summary.get("pods") or []
            if any(c.get("cpu", {}).get("usageNanoCores") is not None for c in p.get("containers") or [])}
    return seen >= set(PODS) - {"crasher"}


def wait_settled(pair: Pair) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    pending = list(pair.sides)
    while pending:
        pending = [side for side in pending if not settled(side)]
        if pending and time.monotonic() > deadline:
            raise AssertionError(f"not settled within {SETTLE_TIMEOUT_S:g}s: {[s.name for s in pending]}\n"
                                 f"kubelet log:\n{pair.real.log_tail()}")
        time.sleep(0.2)


def node_pki(work: Path) -> NodePKI:
    """The PKI both nodes share (kubeletapi's cert dir layout): CA, serving certificate for
    127.0.0.1, admin client certificate."""
    pki = NodePKI.under(work / "certs")
    ensure_pki(pki, "testnode", [ipaddress.ip_address(LOOPBACK)], dt.datetime.now(dt.UTC))
    return pki


def start_containerds(count: int, undo: list[Callable[[], None]]) -> list[containerd.PrivateContainerd]:
    """`count` private containerd instances holding the test images; each one's stop() is in
    `undo` before it starts, so a failure half-way leaves nothing behind."""
    tars = images.build_all()
    daemons = []
    for _ in range(count):
        daemon = containerd.PrivateContainerd()
        undo.append(daemon.stop)
        daemon.start()
        daemon.import_images(tars)
        daemons.append(daemon)
    return daemons


@contextlib.contextmanager
def running_pair(work: Path) -> Iterator[Pair]:
    """Both nodes with their pods settled; everything stopped and removed on exit."""
    pki = node_pki(work)
    undo: list[Callable[[], None]] = []
    try:
        daemons = start_containerds(2, undo)
        manifests = work / "manifests"
        write_all(manifests)
        real = RealKubelet(Path(binary("kubelet")), work / "kubelet", daemons[0].endpoint, manifests,
                           Serving(pki.serving_crt, pki.serving_key, pki.ca_crt))
        undo.append(lambda: _remove_pods(daemons[0], real.cgroup_root))
        undo.append(real.stop)
        real.start()
        ours_root = work / "kubeletapi"
        ours_root.mkdir()
        (ours_root / "certs").symlink_to(pki.cert_dir)
        args = agent_args(ours_root, "--container-runtime=remote", "--container-runtime-endpoint",
                          daemons[1].endpoint, "--pod-manifest-path", str(manifests))
        cgroup_root = args[args.index("--cgroup-root") + 1]
        undo.append(lambda: _remove_pods(daemons[1], cgroup_root))
        agent = Agent(args)
        undo.append(agent.close)
        ports = {listener: agent.port(listener) for listener in ("secure", "read-only", "healthz")}
        pair = Pair(Side("kubelet", real.ports, pki, daemons[0]), Side("kubeletapi", ports, pki, daemons[1]),
                    real, agent, manifests)
        wait_settled(pair)
        yield pair
    finally:
        for step in reversed(undo):
            with contextlib.suppress(Exception):
                step()


def _remove_pods(daemon: containerd.PrivateContainerd, cgroup_root: str) -> None:
    if daemon.running:
        asyncio.run(remove_all_sandboxes(daemon.endpoint))
    remove_cgroup_root(cgroup_root)
