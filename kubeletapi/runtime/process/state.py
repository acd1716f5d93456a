"""On-disk state of the process runtime: one directory per sandbox and per container.

The state dir is the source of truth: the agent keeps no container state that is not also on
disk, so a restarted agent (even after kill -9) re-adopts every container by reading it. The
shim writes `shim.pid`, `started` and `exit` into the container's directory (shimfiles.py); the
runtime writes `container.json` (its config and what it learned: pids, their start ticks, the
exit reason, and that a start was begun).

Every write survives a kill -9 at any instant: a record is replaced by rename, a record's
directory appears by rename with its record already inside (so a directory without its record
is never one), and a removal renames the directory out of the way first. What a crash can leave
(a dot-named directory, or one without its record, as agents before this scheme could leave) is
removed by load() with a line saying so.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubeletapi.atomicfile import write_atomic
from kubeletapi.runtime.types import ContainerConfig, Mount, PodMeta, Resources, SandboxConfig

SANDBOX_JSON = "sandbox.json"
CONTAINER_JSON = "container.json"


def new_id() -> str:
    """A 64-hex id, as containerd's."""
    return secrets.token_hex(32)


def write_json(path: Path, data: Any) -> None:
    """Atomically replace `path` (never a torn file after a crash)."""
    write_atomic(path, json.dumps(data, sort_keys=True).encode(), sync=False)


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
    # The sandbox's own network (podnet.py): its namespace's path while it exists, the plugins' ADD
    # result (for DEL) while attached, and the addresses (kept after the teardown: the pod's last).
    netns: str = ""
    ips: list[str] = field(default_factory=list)
    network: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "config": asdict(self.config), "created_at": self.created_at, "ready": self.ready,
                "netns": self.netns, "ips": self.ips, "network": self.network}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> SandboxRecord:
        cfg = dict(raw["config"])
        cfg["meta"] = _meta(cfg["meta"])
        cfg["resources"] = _resources(cfg["resources"])
        return cls(id=raw["id"], config=SandboxConfig(**cfg), created_at=raw["created_at"], ready=raw["ready"],
                   netns=raw.get("netns", ""), ips=list(raw.get("ips", [])), network=dict(raw.get("network", {})))


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
    # A start was begun: a shim may run (or have run) in the container's directory, whatever
    # started_at says. Written before the shim is launched (runtime.start_container).
    start_requested: bool = False

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


@dataclass
class Loaded:
    sandboxes: dict[str, SandboxRecord]
    containers: dict[str, ContainerRecord]
    problems: list[str]  # unreadable records, left on disk
    removed: list[str]  # leftovers of a crash, removed


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
        _save(self.sandboxes, record.id, SANDBOX_JSON, record.to_json())

    def save_container(self, record: ContainerRecord) -> None:
        _save(self.containers, record.id, CONTAINER_JSON, record.to_json())

    def remove_sandbox(self, sandbox_id: str) -> None:
        _remove(self.sandboxes, sandbox_id)

    def remove_container(self, container_id: str) -> None:
        _remove(self.containers, container_id)

    def load(self) -> Loaded:
        """Every readable record, a problem line for each unreadable one (left on disk), and a
        line for each leftover of a crash (removed)."""
        loaded = Loaded({}, {}, [], [])
        for kind, base, name in (("sandbox", self.sandboxes, SANDBOX_JSON),
                                 ("container", self.containers, CONTAINER_JSON)):
            for entry in sorted(base.iterdir()):
                if entry.name.startswith(".") or not (entry / name).exists():
                    _delete(entry)
                    why = "being written or removed" if entry.name.startswith(".") else f"has no {name}"
                    loaded.removed.append(f"{kind} state {entry} ({why}: left by a crash)")
                    continue
                try:
                    raw = json.loads((entry / name).read_text())
                    if kind == "sandbox":
                        sandbox = SandboxRecord.from_json(raw)
                        loaded.sandboxes[sandbox.id] = sandbox
                    else:
                        container = ContainerRecord.from_json(raw)
                        loaded.containers[container.id] = container
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    loaded.problems.append(f"{kind} state {entry}: {exc}")
        return loaded



def _save(base: Path, record_id: str, name: str, data: Any) -> None:
    """Replace the record, or create its directory with the record inside by one rename."""
    path = base / record_id
    if path.is_dir():
        write_json(path / name, data)
        return
    new = base / f".{record_id}.new"
    _delete(new)
    new.mkdir()
    write_json(new / name, data)
    os.rename(new, path)


def _remove(base: Path, record_id: str) -> None:
    """Rename the record's directory out of the way, then delete it: a crash in between leaves
    a dot-named directory (load() removes it), never a record with half its files."""
    path = base / record_id
    gone = base / f".{record_id}.gone"
    _delete(gone)
    try:
        os.rename(path, gone)
    except FileNotFoundError:
        return
    _delete(gone)


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
