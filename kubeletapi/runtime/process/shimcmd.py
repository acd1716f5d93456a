"""The shim's command lines (`run` and `exec`, shim/shim.c) and a container's environment, built
from its record and config (no side effects)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kubeletapi.runtime.process.state import ContainerRecord
from kubeletapi.runtime.types import ContainerConfig, SandboxConfig

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ShimOptions:
    namespaces: bool  # pid/mount/uts/ipc namespaces and mounts (as root)
    log_max_size: int
    log_max_files: int


def environment(config: ContainerConfig, sandbox: SandboxConfig) -> dict[str, str]:
    env = {"PATH": DEFAULT_PATH, "HOSTNAME": sandbox.hostname, "HOME": os.environ.get("HOME", "/root")}
    env.update(dict(config.envs))
    return env


def run_args(record: ContainerRecord, sandbox: SandboxConfig, state_dir: Path, cgroup_dirs: list[Path],
             lock_fd: int, opts: ShimOptions, netns: str = "") -> list[str]:
    """`run` and its options: the container's state dir and lock, log, cgroups, namespaces...
    `netns`: the pod's own network namespace ("" on the host network)."""
    cfg = record.config
    args = ["run", "--state", str(state_dir), "--lock-fd", str(lock_fd), "--log", record.log_path,
            "--log-max-size", str(opts.log_max_size), "--log-max-files", str(opts.log_max_files)]
    if netns:
        args += ["--netns", netns]
    for directory in cgroup_dirs:
        args += ["--cgroup", str(directory)]
    if opts.namespaces:
        args += ["--namespaces", "--hostname", sandbox.hostname]
        for mount in cfg.mounts:
            if mount.tmpfs:
                args += ["--tmpfs", mount.container_path]
            else:
                args += ["--bind-ro" if mount.readonly else "--bind", mount.host_path, mount.container_path]
    if cfg.working_dir:
        args += ["--workdir", cfg.working_dir]
    if cfg.stdin:
        args.append("--stdin")
    if cfg.tty:
        args.append("--tty")
    if cfg.resources.oom_score_adj is not None:
        args += ["--oom-score-adj", str(cfg.resources.oom_score_adj)]
    return [*args, "--", *cfg.command]


def exec_args(record: ContainerRecord, cgroup_dirs: list[Path], namespaces: bool, netns: str = "") -> list[str]:
    """`exec` and its options: the container's namespaces, cgroups and working directory."""
    args = ["exec"]
    if netns:
        args += ["--netns", netns]
    if namespaces and record.app_pid:
        args += ["--pid", str(record.app_pid)]
    for directory in cgroup_dirs:
        args += ["--cgroup", str(directory)]
    if record.config.working_dir:
        args += ["--workdir", record.config.working_dir]
    return args
