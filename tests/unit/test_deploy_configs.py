"""The command lines the repository ships (scripts/run.sh for `make run`, the image's entrypoint) and
the defaults pass the configuration's validation: the scripts run for real with a stand-in that
records the agent's arguments instead of starting it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kubeletapi.cli import configuration
from kubeletapi.config import HostFacts
from tests.helpers import free_ports

ROOT = Path(__file__).resolve().parents[2]
RECORDER = '#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done > "$ARGS_FILE"\n'


def recorded(path: Path) -> list[str]:
    return path.read_bytes().decode().split("\0")[:-1]


def stand_in(directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / name
    tool.write_text(RECORDER)
    tool.chmod(0o755)
    return tool


@pytest.mark.parametrize("host", [HostFacts(cgroup_v1=True), HostFacts(cgroup_v1=False)], ids=["v1", "v2"])
def test_defaults_validate(host: HostFacts) -> None:
    cfg, _ = configuration([], host)
    assert cfg.pod_logs_dir == "/var/log/pods"


def test_make_run_flags_validate(tmp_path: Path) -> None:
    """scripts/run.sh in a copy of the repository's layout, with its default .run directory."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "scripts", repo / "scripts")
    shutil.copytree(ROOT / "examples", repo / "examples")
    stand_in(repo / ".venv" / "bin", "kubeletapi")
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "setsid")  # records `.venv/bin/kubeletapi <flags>` and starts nothing
    secure, read_only, healthz = free_ports(3)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ARGS_FILE": str(tmp_path / "args"),
           "KUBELETAPI_PORT": str(secure), "KUBELETAPI_READ_ONLY_PORT": str(read_only),
           "KUBELETAPI_HEALTHZ_PORT": str(healthz)}
    result = subprocess.run([str(repo / "scripts" / "run.sh")], env=env, capture_output=True, text=True, timeout=60)
    assert "kubeletapi did not start" in result.stdout  # the stand-in exited at once
    args = recorded(tmp_path / "args")
    assert args[0] == ".venv/bin/kubeletapi"
    assert args[args.index("--pod-logs-dir") + 1] == str(repo / ".run" / "logs")
    cfg, opts = configuration(args[1:], HostFacts(cgroup_v1=True))
    assert cfg.pod_logs_dir == str(repo / ".run" / "logs")
    assert opts.root_dir == repo / ".run" / "root"


def test_image_entrypoint_flags_validate(tmp_path: Path) -> None:
    """deploy/docker/entrypoint.sh with the compose stack's defaults (its directories moved under tmp)."""
    bin_dir = tmp_path / "bin"
    stand_in(bin_dir, "kubeletapi")
    (healthz,) = free_ports(1)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ARGS_FILE": str(tmp_path / "args"),
           "KUBELETAPI_CERT_DIR": str(tmp_path / "certs"), "KUBELETAPI_ROOT_DIR": str(tmp_path / "root"),
           "KUBELETAPI_POD_LOGS_DIR": str(tmp_path / "logs"), "KUBELETAPI_HEALTHZ_PORT": str(healthz)}
    result = subprocess.run(["sh", str(ROOT / "deploy" / "docker" / "entrypoint.sh")], env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    args = recorded(tmp_path / "args")
    assert "--influxdb-url" in args and "--pod-manifest-path" in args
    cfg, opts = configuration(args, HostFacts(cgroup_v1=False))
    assert cfg.static_pod_path == "/etc/kubeletapi/manifests"
    assert opts.influxdb is not None
