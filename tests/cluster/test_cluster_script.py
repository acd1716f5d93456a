"""scripts/cluster.sh: `up` leaves a working control plane behind (its processes outlive the
command), `down` stops every one of them by PID and removes the directory."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cluster.controlplane import REPO, binary

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_up_then_down(tmp_path: Path) -> None:
    root = tmp_path / "plane"
    script = str(REPO / "scripts/cluster.sh")
    pids: dict[str, int] = {}
    try:
        up = subprocess.run([script, "up", str(root), "--node-ip", "127.0.0.1"], capture_output=True, text=True,
                            timeout=300, check=False)
        assert up.returncode == 0, up.stdout + up.stderr
        pids = json.loads((root / "pids.json").read_text())
        assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
        assert all(_alive(p) for p in pids.values())  # they outlive the command
        assert "--kubeconfig" in up.stdout and "get nodes" in up.stdout
        kubectl = subprocess.run([binary("kubectl"), "--kubeconfig", str(root / "pki/admin.kubeconfig"),
                                  "get", "namespace", "default", "-o", "name"], capture_output=True, text=True,
                                 timeout=60, check=False)
        assert kubectl.stdout.strip() == "namespace/default", kubectl.stderr
        again = subprocess.run([script, "up", str(root)], capture_output=True, text=True, timeout=120, check=False)
        assert again.returncode == 1 and "already runs" in again.stderr
        down = subprocess.run([script, "down", str(root)], capture_output=True, text=True, timeout=120, check=False)
        assert down.returncode == 0, down.stderr
        assert not any(_alive(p) for p in pids.values())
        assert not root.exists()
    finally:
        for pid in pids.values():
            if _alive(pid):
                os.kill(pid, 9)
