"""On-disk state of the process runtime: one directory per sandbox and per container.

The state dir is the source of truth: the agent keeps no container state that is not also on
disk, so a restarted agent (even after kill -9) re-adopts every container by reading it. The
shim writes `shim.pid`, `started` and `exit` into the container's directory; the runtime writes
`container.json` (its config and what it learned: pids, their start ticks, the exit reason).
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubeletapi.runtime.types import ContainerConfig, Mount, PodMeta, Resources, SandboxConfig


def new_id() -> str:
    """A 64-hex id, as containerd's."""
    return secrets.token_hex(32)


def write_json(path: Path, data: Any) -> None:
    """Atomically replace `path` (never a torn file after a crash)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    os.replace(tmp, path)


def _meta(raw: dict[str, Any]) -> PodMeta:
    return PodMeta(**raw)


def _resources(raw: dict[str, Any]) -> Resources:
    return Resources(**raw)


@dataclass
class SandboxRecord:
    id: str
    config: SandboxConfig
    created_at: int
    ready: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "config": asdict(self.config), "created_at": self.created_at, "ready": self.ready}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SandboxRecord:
        cfg = dict(raw["config"])
        cfg["meta"] = _meta(cfg["meta"])
        cfg["resources"] = _resources(cfg["resources"])
        return cls(id=raw["id"], config=SandboxConfig(**cfg), created_at=raw["created_at"], ready=raw["ready"])


@dataclass
class ContainerRecord:
    """What the runtime knows of one container instance."""

    id: str
    sandbox_id: str
    config: ContainerConfig
    created_at: int
    log_path: str
    cgroup: str = ""
    started_at: int = 0
    app_pid: int = 0
    init_pid: int = 0
    shim_pid: int = 0
    start_ticks: dict[str, int] = field(default_factory=dict)  # pid -> /proc starttime
    finished_at: int = 0
    exit_code: int = 0
    signal: int = 0
    reason: str = ""
    message: str = ""
    exited: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ContainerRecord:
        cfg = dict(raw["config"])
        cfg["mounts"] = tuple(Mount(**m) for m in cfg["mounts"])
        cfg["resources"] = _resources(cfg["resources"])
        cfg["command"] = tuple(cfg["command"])
        cfg["envs"] = tuple(tuple(e) for e in cfg["envs"])
        for key in ("spec_command", "spec_args"):  # absent from state written before they existed
            if cfg.get(key) is not None:
                cfg[key] = tuple(cfg[key])
        data = dict(raw)
        data["config"] = ContainerConfig(**cfg)
        return cls(**data)


class StateDir:
    """`<root>/sandboxes/<id>/sandbox.json` and `<root>/containers/<id>/container.json`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sandboxes = root / "sandboxes"
        self.containers = root / "containers"
        self.sandboxes.mkdir(parents=True, exist_ok=True)
        self.containers.mkdir(parents=True, exist_ok=True)

    def container_dir(self, container_id: str) -> Path:
        return self.containers / container_id

    def save_sandbox(self, record: SandboxRecord) -> None:
        path = self.sandboxes / record.id
        path.mkdir(exist_ok=True)
        write_json(path / "sandbox.json", record.to_json())

    def save_container(self, record: ContainerRecord) -> None:
        path = self.container_dir(record.id)
        path.mkdir(exist_ok=True)
        write_json(path / "container.json", record.to_json())

    def load(self) -> tuple[dict[str, SandboxRecord], dict[str, ContainerRecord], list[str]]:
        """Every readable record, and a problem line for each unreadable one (left on disk)."""
        problems: list[str] = []
        sandboxes: dict[str, SandboxRecord] = {}
        containers: dict[str, ContainerRecord] = {}
        for kind, base, name, parse in (
            ("sandbox", self.sandboxes, "sandbox.json", SandboxRecord.from_json),
            ("container", self.containers, "container.json", ContainerRecord.from_json),
        ):
            for entry in sorted(base.iterdir()):
                try:
                    record = parse(json.loads((entry / name).read_text()))
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    problems.append(f"{kind} state {entry}: {exc}")
                    continue
                if isinstance(record, SandboxRecord):
                    sandboxes[record.id] = record
                else:
                    containers[record.id] = record
        return sandboxes, containers, problems
