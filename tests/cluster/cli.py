"""scripts/cluster.sh: the tests' control plane for people, outliving the command.

    python -m tests.cluster.cli up <dir> [--node-ip IP]   start it; print how to join a node
    python -m tests.cluster.cli down <dir>                stop it (by PID) and remove <dir>
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

from tests.cluster.controlplane import ControlPlane, bin_dir

PIDS = "pids.json"


def default_ip() -> str:
    """The address of the default route's interface: where a node can be proxied to (the API
    server refuses loopback node addresses for nodes/<n>/proxy)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: nothing is sent, only a route chosen
            return str(probe.getsockname()[0])
        except OSError:
            return "127.0.0.1"


def up(root: Path, node_ip: str) -> int:
    if (root / PIDS).exists():
        print(f"a control plane already runs from {root}: `scripts/cluster.sh down {root}` first", file=sys.stderr)
        return 1
    root.mkdir(parents=True, exist_ok=True)
    plane = ControlPlane(root, node_ip=node_ip, detached=True)
    plane.start(node_monitor_grace_period="40s")
    (root / PIDS).write_text(json.dumps({name: c.proc.pid for name, c in plane.components.items()}))
    node = socket.gethostname().lower()
    kubeconfig = plane.node_identity(node)
    kubectl = f"{bin_dir() / 'kubectl'} --kubeconfig {plane.admin}"
    print(f"""Control plane up: {plane.server} (logs and data in {root})

Join this machine as node {node}:
  sudo .venv/bin/kubeletapi --kubeconfig {kubeconfig} --client-ca-file {plane.pki.ca.cert} \\
    --node-ip {node_ip} --address {node_ip} --hostname-override {node} --cert-dir {root}/node-certs \\
    --root-dir {root}/node-root --pod-logs-dir {root}/node-logs

Then:
  {kubectl} get nodes -o wide
  {kubectl} create deployment hello --image=busybox:1.36 -- sleep 3600
  {kubectl} get pods -o wide

Stop it: scripts/cluster.sh down {root}""")
    return 0


def down(root: Path) -> int:
    try:
        pids = json.loads((root / PIDS).read_text())
    except FileNotFoundError:
        print(f"no control plane runs from {root}", file=sys.stderr)
        return 1
    for pid in reversed(list(pids.values())):
        _stop(int(pid))
    shutil.rmtree(root, ignore_errors=True)
    print(f"stopped {', '.join(pids)}; removed {root}")
    return 0


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/cluster.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("dir", type=Path, nargs="?", default=Path(".cluster"))
    parser.add_argument("--node-ip", default="", help="the address nodes serve on (default: the default route's)")
    args = parser.parse_args(argv)
    root = args.dir.resolve()
    if args.command == "up":
        return up(root, args.node_ip or default_ip())
    return down(root)


if __name__ == "__main__":
    sys.exit(main())
