"""Pod ranking as the kubelet ranks (rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeletapi.api.core_v1 import Pod
from kubeletapi.eviction.rank import rankers
from kubeletapi.eviction.signals import ContainerUse, DiskUse, PodUse

Mi = 2**20


def pod(name: str, *, memory: str | None = None, storage: str | None = None, priority: int | None = None,
        volumes: list[dict[str, Any]] | None = None) -> Pod:
    requests = {k: v for k, v in (("memory", memory), ("ephemeral-storage", storage)) if v is not None}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
                            "volumes": volumes or []}
    if priority is not None:
        spec["priority"] = priority
    return Pod.model_validate({"metadata": {"name": name, "uid": name}, "spec": spec})


def use(memory: int = 0, procs: int = 0, logs: int = 0, rootfs: int | None = None,
        volumes: dict[str, int] | None = None) -> PodUse:
    container = ContainerUse("c", memory, DiskUse(rootfs, 1) if rootfs is not None else None, DiskUse(logs, 1))
    return PodUse(memory, procs, (container,), {k: DiskUse(v, 1) for k, v in (volumes or {}).items()})


EMPTY_DIR = [{"name": "scratch", "emptyDir": {}}]


@pytest.mark.parametrize(("signal", "dedicated", "pods", "usage", "order"), [
    pytest.param("memory.available", False,
                 [pod("within", memory="1Gi"), pod("over", memory="100Mi")],
                 {"within": use(500 * Mi), "over": use(200 * Mi)}, ["over", "within"],
                 id="memory: exceeding requests first, whatever the size"),
    pytest.param("memory.available", False,
                 [pod("high", priority=1000), pod("low", priority=10)],
                 {"high": use(900 * Mi), "low": use(100 * Mi)}, ["low", "high"],
                 id="memory: then lower priority first"),
    pytest.param("memory.available", False,
                 [pod("small"), pod("big"), pod("mid", memory="100Mi")],
                 {"small": use(100 * Mi), "big": use(600 * Mi), "mid": use(500 * Mi)}, ["big", "mid", "small"],
                 id="memory: then most usage above request (BestEffort's request is 0)"),
    pytest.param("memory.available", False,
                 [pod("measured"), pod("unmeasured")], {"measured": use(900 * Mi)}, ["unmeasured", "measured"],
                 id="memory: a pod without stats first"),
    pytest.param("memory.available", False,
                 [pod("measured", priority=-1), pod("high", priority=10), pod("low", priority=5)],
                 {"measured": use(900 * Mi)}, ["low", "high", "measured"],
                 id="memory: pods without stats first, by priority among them"),
    pytest.param("pid.available", False,
                 [pod("unmeasured", priority=10), pod("measured", priority=1)], {"measured": use(procs=5)},
                 ["measured", "unmeasured"], id="pid: priority before stats"),
    pytest.param("pid.available", False,
                 [pod("few"), pod("many"), pod("low", priority=-5)],
                 {"few": use(procs=3), "many": use(procs=300), "low": use(procs=1)}, ["low", "many", "few"],
                 id="pid: priority, then most processes"),
    pytest.param("nodefs.available", False,
                 [pod("logs"), pod("volume", volumes=EMPTY_DIR), pod("requested", storage="1Gi")],
                 {"logs": use(logs=10 * Mi), "volume": use(logs=1 * Mi, volumes={"scratch": 50 * Mi}),
                  "requested": use(logs=500 * Mi)},
                 ["volume", "logs", "requested"], id="nodefs: logs and local volumes above the request"),
    pytest.param("nodefs.available", True,
                 [pod("layer"), pod("logs")],
                 {"layer": use(logs=1 * Mi, rootfs=900 * Mi), "logs": use(logs=10 * Mi, rootfs=0)},
                 ["logs", "layer"], id="nodefs with a dedicated imagefs: writable layers do not count"),
    pytest.param("imagefs.available", True,
                 [pod("layer"), pod("logs")],
                 {"layer": use(logs=1 * Mi, rootfs=900 * Mi), "logs": use(logs=10 * Mi, rootfs=0)},
                 ["layer", "logs"], id="imagefs with a dedicated imagefs: writable layers only"),
    pytest.param("nodefs.inodesFree", False,
                 [pod("a"), pod("b", volumes=EMPTY_DIR)],
                 {"a": use(logs=1), "b": use(logs=1, volumes={"scratch": 1})}, ["b", "a"],
                 id="inodes: the most inodes"),
])
def test_rank(signal: str, dedicated: bool, pods: list[Pod], usage: dict[str, PodUse], order: list[str]) -> None:
    ranked = rankers(dedicated)[signal](pods, lambda p: usage.get(p.metadata.uid))
    assert [p.metadata.name for p in ranked] == order
