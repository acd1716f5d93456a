"""A kubeletapi node of the test control plane: the agent as a process with a node identity,
serving on the plane's node address (in the host namespace) or on its own namespace's address
(tests.cluster.fabric); and the API's view of it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from tests.cluster.controlplane import ControlPlane
from tests.cluster.fabric import NodeNet
from tests.cri.cleanup import purge_cri
from tests.helpers import LOOPBACK, AgentProcess, agent_args, purge


class Node:
    """`runtime`: "process", or "containerd" with `cri_endpoint` (the session's private one).
    `net`: the agent runs in that namespace (and so do its hostNetwork pods on the process runtime)
    and serves, health checks included, on its address; else in the host's, on the plane's node address."""

    def __init__(self, plane: ControlPlane, tmp: Path, *extra: str, runtime: str = "process",
                 cri_endpoint: str = "", net: NodeNet | None = None) -> None:
        self.plane = plane
        self.runtime = runtime
        self.cri_endpoint = cri_endpoint
        self.scheme = "process://" if runtime == "process" else "containerd://"  # containerIDs, runtime version
        if runtime == "containerd":
            extra = ("--container-runtime", "remote", "--container-runtime-endpoint", cri_endpoint, *extra)
        self.name = f"node-{uuid.uuid4().hex[:8]}"
        self.args = agent_args(tmp, "--kubeconfig", str(plane.node_identity(self.name)),
                               "--client-ca-file", str(plane.pki.ca.cert), *extra)
        self.net = net
        self.address = net.address if net is not None else plane.node_ip
        for flag, value in (("--hostname-override", self.name), ("--address", self.address),
                            ("--node-ip", self.address)):
            self.args[self.args.index(flag) + 1] = value
        if net is not None:
            self.args[self.args.index("--healthz-bind-address") + 1] = net.address
        self.agent: AgentProcess | None = None
        self.log = tmp / "agent.log"

    def start(self) -> None:
        wrapper = self.net.run_in() if self.net is not None else []
        self.agent = AgentProcess(self.args, log=self.log, wrapper=wrapper)
        health = self.net.address if self.net is not None else LOOPBACK
        self.agent.wait_healthy(f"http://{health}:{self.flag('--healthz-port')}/healthz")

    def kill(self) -> None:
        """SIGKILL to the agent, as a crash would: its containers keep running."""
        if self.agent is not None:
            self.agent.kill()
            self.agent = None

    def stop(self) -> str:
        out = ""
        if self.agent is not None:
            _, out = self.agent.stop()
            self.agent = None
        return out

    def flag(self, name: str) -> str:
        return self.args[self.args.index(name) + 1]

    def get(self) -> dict[str, Any] | None:
        with self.plane.admin_client() as client:
            response = client.get(f"/api/v1/nodes/{self.name}")
        return response.json() if response.status_code == 200 else None

    def condition(self, kind: str) -> dict[str, Any] | None:
        node = self.get()
        conditions = (node or {}).get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == kind), None)

    def ready(self) -> bool:
        ready = self.condition("Ready")
        return ready is not None and ready["status"] == "True"

    def remove(self) -> None:
        """Stop the agent, remove what it left (cgroups, state) and its Node object."""
        self.stop()
        if self.runtime == "containerd":
            purge_cri(self.cri_endpoint, self.args)
        purge(self.args)
        with self.plane.admin_client() as client:
            client.delete(f"/api/v1/nodes/{self.name}")
