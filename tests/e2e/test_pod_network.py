"""Pod networking on the process runtime, standalone: a node with --pod-cidr gives every pod that
is not hostNetwork its own network namespace and an address from the CIDR (CNI bridge +
host-local, Debian's containernetworking-plugins), through real processes.

The agent runs inside a network namespace this test creates (TestNetwork: it serves on the
namespace's end of a veth pair), so the pods' bridge, their veths and every address of the test
range 10.251.200.0/24 exist only inside it; removing the namespace removes them all.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cri import containerd, images
from tests.cri.cleanup import purge_cri
from tests.helpers import AgentProcess, agent_args, purge
from tests.netns import TestNetwork
from tests.podtools import container, manifest, status_of, wait_for, write

pytestmark = pytest.mark.e2e

POD_CIDR = "10.251.200.0/24"
CNI_BIN = "/usr/lib/cni"
# A minimal HTTP server: answers "hello <peer>" and appends "<peer> <request line>" to argv[1].
SERVER = ("import socket,sys\n"
          "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
          "s.bind(('0.0.0.0', 8080)); s.listen()\n"
          "while True:\n"
          "    c,a=s.accept(); line=c.recv(4096).split(b'\\r\\n')[0].decode()\n"
          "    open(sys.argv[1],'a').write(a[0]+' '+line+'\\n')\n"
          "    c.sendall(('HTTP/1.0 200 OK\\r\\n\\r\\nhello '+a[0]+'\\n').encode()); c.close()\n")
PRE_STOP = "lifecycle:\n  preStop:\n    httpGet: {path: /bye, port: 8080}"


def _needs() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not Path(CNI_BIN, "bridge").exists():
        return f"needs the CNI plugins in {CNI_BIN} (containernetworking-plugins)"
    return None


skip_reason = _needs()
if skip_reason:
    pytestmark = [pytest.mark.e2e, pytest.mark.skip(reason=skip_reason)]


class NetNode:
    """An agent with a pod CIDR inside a test network namespace, its manifests and its API."""

    def __init__(self, tmp: Path, net: TestNetwork, pod_cidr: str = POD_CIDR) -> None:
        self.net = net
        self.manifests = tmp / "manifests"
        self.manifests.mkdir()
        args = agent_args(tmp, "--pod-manifest-path", str(self.manifests), "--file-check-frequency", "1s",
                          "--cni-bin-dir", CNI_BIN)
        if pod_cidr:
            args += ["--pod-cidr", pod_cidr]
        # Serve on the namespace's end of the veth: the test reaches the agent from outside.
        self.args = [net.peer if a == "127.0.0.1" else a for a in args]
        self.root = tmp / "root"
        self.log = tmp / "agent.log"
        self.agent: AgentProcess | None = None

    def flag(self, name: str) -> str:
        return self.args[self.args.index(name) + 1]

    def start(self) -> None:
        self.agent = AgentProcess(self.args, wrapper=self.net.run_in(), log=self.log)
        self.agent.wait_healthy(f"http://{self.net.peer}:{self.flag('--healthz-port')}/healthz")

    def kill(self) -> None:
        assert self.agent is not None
        self.agent.kill()

    def pods(self) -> dict[str, dict[str, Any]]:
        try:
            items = httpx.get(f"http://{self.net.peer}:{self.flag('--read-only-port')}/pods", timeout=5).json()["items"]
        except httpx.HTTPError:
            return {}
        return {p["metadata"]["name"].removesuffix("-testnode"): p for p in items}

    def running(self, name: str) -> dict[str, Any] | None:
        pod = self.pods().get(name)
        statuses = pod["status"].get("containerStatuses") or [] if pod else []
        return pod if statuses and all("running" in s["state"] for s in statuses) else None

    def netns_files(self) -> list[Path]:
        return sorted((self.root / "network" / "netns").glob("*"))

    def leases(self) -> list[str]:
        """The addresses host-local holds (one file per address)."""
        return sorted(p.name for p in (self.root / "network" / "ipam").glob("*/*") if p.name[0].isdigit())

    def close(self) -> tuple[int, str]:
        code, out = self.agent.stop() if self.agent is not None else (0, "")
        purge(self.args)  # what a failed test left, its namespaces' bindings too
        return code, out


@pytest.fixture
def node(tmp_path: Path) -> Any:
    net = TestNetwork.create()
    node = NetNode(tmp_path, net)
    try:
        yield node
    finally:
        node.close()
        net.remove()


def _net_ns(pid: int) -> int:
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def _pod_log(node: NetNode, name: str) -> str:
    logs = list((node.root.parent / "logs").glob(f"default_{name}-testnode_*/*/0.log"))
    return "".join(p.read_text() for p in logs)


def test_pods_get_their_own_network(node: NetNode) -> None:
    marker = uuid.uuid4().hex[:8]
    hits = node.root.parent / "hits.txt"
    write(node.manifests, "server.yaml", manifest("server", container(
        "srv", ["python3", "-c", SERVER + f"#{marker}", str(hits)], PRE_STOP)))
    write(node.manifests, "host.yaml", manifest("host", container("h", ["sleep", "3600"]), "hostNetwork: true"))
    node.start()
    server = wait_for(lambda: node.running("server"), timeout=30, what="server running")
    host = wait_for(lambda: node.running("host"), timeout=30, what="hostNetwork pod running")
    ip = server["status"]["podIP"]
    assert ip.startswith("10.251.200.") and ip != "10.251.200.1", ip  # .1 is the bridge (gateway)
    assert server["status"]["podIPs"] == [{"ip": ip}]
    assert server["status"]["hostIP"] == node.net.peer
    assert host["status"]["podIP"] == node.net.peer  # the node's address, as before
    assert node.leases() == [ip]
    assert len(node.netns_files()) == 1
    agent_pid = node.agent.proc.pid if node.agent else 0
    srv_pid = status_pid(node, server)
    assert _net_ns(srv_pid) != _net_ns(agent_pid)
    assert _net_ns(status_pid(node, host)) == _net_ns(agent_pid)
    assert os.stat(node.netns_files()[0]).st_ino == _net_ns(srv_pid)

    connect = (f"import socket; s=socket.create_connection(('{ip}', 8080), 5); "
               "s.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n'); print(s.recv(99).decode())")
    client = ["python3", "-c", connect]
    write(node.manifests, "client.yaml", manifest("client", container("c", client), "restartPolicy: Never"))
    done = wait_for(lambda: (p := node.pods().get("client")) and p["status"].get("phase") == "Succeeded" and p,
                    timeout=30, what="client pod done")
    client_ip = done["status"]["podIP"]
    assert client_ip.startswith("10.251.200.") and client_ip != ip
    assert f"hello {client_ip}" in wait_for(lambda: _pod_log(node, "client") or None, what="client log")

    # kill -9 and restart: the same namespace, the same address, the same process
    ns_inode = _net_ns(srv_pid)
    node.kill()
    node.start()
    time.sleep(2)  # a few syncs
    again = wait_for(lambda: node.running("server"), what="server after restart")
    assert again["status"]["podIP"] == ip
    assert status_pid(node, again) == srv_pid
    assert _net_ns(srv_pid) == ns_inode
    assert ns_inode in {os.stat(p).st_ino for p in node.netns_files()}

    # removal: DEL, the namespace unbound and removed, the address released
    (node.manifests / "server.yaml").unlink()
    (node.manifests / "client.yaml").unlink()
    wait_for(lambda: "server" not in node.pods() and "client" not in node.pods(), timeout=30, what="pods removed")
    wait_for(lambda: (not node.netns_files() and not node.leases()) or None, what="namespaces and leases gone")
    # the preStop httpGet called the pod's own address (from the node's side of the bridge)
    assert "10.251.200.1 GET /bye HTTP/1.1" in hits.read_text().splitlines()
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(node.root / "network" / "netns") not in mounts


def status_pid(node: NetNode, pod: dict[str, Any]) -> int:
    """The container's process, from the runtime's record (the API does not show pids)."""
    cid = status_of(pod, pod["spec"]["containers"][0]["name"])["containerID"].split("://", 1)[1]
    record = json.loads((node.root / "runtime" / "process" / "containers" / cid / "container.json").read_text())
    return int(record["app_pid"])


def test_stale_namespace_of_a_gone_pod_is_removed_at_start(node: NetNode) -> None:
    write(node.manifests, "p.yaml", manifest("p", container("c", ["sleep", "3600"])))
    node.start()
    pod = wait_for(lambda: node.running("p"), timeout=30, what="pod running")
    assert node.leases() == [pod["status"]["podIP"]]
    node.kill()
    (node.manifests / "p.yaml").unlink()
    # the sandbox's record vanishes as if the agent died mid-removal; its namespace stays bound
    for state in (node.root / "runtime" / "process" / "sandboxes").iterdir():
        subprocess.run(["rm", "-rf", str(state)], check=True)
    for record in (node.root / "runtime" / "process" / "containers").glob("*/container.json"):
        for key in ("app_pid", "init_pid", "shim_pid"):  # its processes too (purge would unbind the namespace)
            pid = json.loads(record.read_text()).get(key)
            if pid:  # 0 would signal our own process group
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert len(node.netns_files()) == 1
    node.start()
    wait_for(lambda: (not node.netns_files() and not node.leases()) or None, what="stale namespace released")
    wait_for(lambda: "removed the network namespace of gone sandbox" in node.log.read_text() or None,
             what="the removal logged")


@pytest.mark.cri
def test_containerd_pods_get_their_own_network(tmp_path: Path) -> None:
    """The same on containerd: kubeletapi writes the conflist into containerd's CNI conf dir and
    tells it the CIDR (UpdateRuntimeConfig); containerd's CNI makes the namespaces and addresses.
    containerd runs in the test's namespace too, so its bridge lives there."""

    missing = containerd.missing_tools() + images.missing_tools()
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    net = TestNetwork.create()
    daemon = containerd.PrivateContainerd(wrapper=net.run_in())
    node = NetNode(tmp_path, net)
    node.args += ["--container-runtime=remote", "--container-runtime-endpoint", daemon.endpoint,
                  "--cni-conf-dir", str(daemon.work / "cni")]
    try:
        daemon.start()
        daemon.import_images(images.build_all())
        www = "echo hello > /tmp/index.html; exec httpd -f -p 8080 -h /tmp"
        write(node.manifests, "server.yaml", manifest("server", _bb("srv", ["sh", "-c", www]),
                                                         "terminationGracePeriodSeconds: 1"))
        write(node.manifests, "host.yaml", manifest("host", _bb("h", ["sleep", "3600"]), "hostNetwork: true"))
        node.start()
        assert (daemon.work / "cni" / "10-kubeletapi.conflist").is_file()
        server = wait_for(lambda: node.running("server"), timeout=60, what="server running")
        host = wait_for(lambda: node.running("host"), timeout=60, what="hostNetwork pod running")
        ip = server["status"]["podIP"]
        assert ip.startswith("10.251.200.") and ip != "10.251.200.1", ip
        assert server["status"]["podIPs"] == [{"ip": ip}]
        assert host["status"]["podIP"] == net.peer
        assert node.leases() == [ip]
        fetch = ["wget", "-qO-", f"http://{ip}:8080/index.html"]
        write(node.manifests, "client.yaml", manifest("client", _bb("c", fetch), "restartPolicy: Never"))
        done = wait_for(lambda: (p := node.pods().get("client")) and p["status"].get("phase") == "Succeeded" and p,
                        timeout=60, what="client pod done")
        assert done["status"]["podIP"].startswith("10.251.200.") and done["status"]["podIP"] != ip
        assert "hello" in wait_for(lambda: _pod_log(node, "client") or None, what="client log")
        node.kill()
        node.start()
        again = wait_for(lambda: node.running("server"), what="server after restart")
        assert again["status"]["podIP"] == ip
        assert status_of(again, "srv")["containerID"] == status_of(server, "srv")["containerID"]
        (node.manifests / "server.yaml").unlink()
        (node.manifests / "client.yaml").unlink()
        wait_for(lambda: "server" not in node.pods() and "client" not in node.pods(), timeout=60, what="removed")
        wait_for(lambda: not node.leases() or None, what="addresses released")
    finally:
        try:
            node.close()
            purge_cri(daemon.endpoint, node.args)
        finally:
            daemon.stop()
            net.remove()


def _bb(name: str, command: list[str]) -> str:
    cmd = ", ".join(json.dumps(c) for c in command)
    return f"- name: {name}\n  image: localhost/busybox:latest\n  imagePullPolicy: IfNotPresent\n  command: [{cmd}]\n"
