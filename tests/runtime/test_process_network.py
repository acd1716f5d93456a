"""The process runtime's pod networks with recording plugins (the real CNI plugins are exercised in
tests/e2e/test_pod_network.py): a sandbox that is not on the host network gets a bound namespace
and the plugins' addresses; a stop DELs and unbinds it and the addresses stay on record; a failed
ADD leaves nothing; a record naming a namespace but no address is NOTREADY after a restart; a
namespace no record names is released at start. Namespaces need root."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.clock import RealClock
from kubeletapi.errors import NetworkError
from kubeletapi.network.cni import NetworkResult
from kubeletapi.runtime.process.podnet import NetworkPlugins, SandboxNetworks
from kubeletapi.runtime.process.runtime import ProcessRuntime
from kubeletapi.runtime.process.shimbuild import shim_path
from kubeletapi.runtime.process.state import SandboxRecord, StateDir
from kubeletapi.runtime.types import PodMeta, SandboxConfig, SandboxState

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


class Plugins:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, str, str]] = []
        self.next = 2

    async def attach(self, container_id: str, netns: str, args: Mapping[str, str]) -> NetworkResult:
        self.calls.append(("ADD", container_id, netns))
        assert os.path.ismount(netns)  # bound before the plugins run
        if self.fail:
            raise NetworkError("CNI plugin bridge ADD failed (code 11): no address")
        ip = f"10.251.200.{self.next}"
        self.next += 1
        return NetworkResult((ip,), {"ips": [{"address": f"{ip}/24"}]})

    async def detach(self, container_id: str, netns: str, result: Mapping[str, Any] | None,
                     args: Mapping[str, str]) -> None:
        self.calls.append(("DEL", container_id, netns))


_: type[NetworkPlugins] = Plugins


def config(tmp: Path, host_network: bool = False) -> SandboxConfig:
    return SandboxConfig(meta=PodMeta("p", "default", "uid-1"), hostname="p", log_directory=str(tmp / "logs"),
                         cgroup_parent="", host_network=host_network)


def runtime(tmp: Path, plugins: Plugins) -> ProcessRuntime:
    return ProcessRuntime(tmp / "state", shim_path(), RealClock(),
                          network=SandboxNetworks(plugins, tmp / "netns", shim_path()))


def test_own_network_lifecycle(tmp_path: Path) -> None:
    plugins = Plugins()
    rt = runtime(tmp_path, plugins)

    async def go() -> None:
        sid = await rt.run_pod_sandbox(config(tmp_path))
        host = await rt.run_pod_sandbox(config(tmp_path, host_network=True))
        listed = {s.id: s for s in await rt.list_pod_sandboxes()}
        assert listed[sid].ips == ("10.251.200.2",) and listed[host].ips == ()
        netns = tmp_path / "netns" / sid
        assert os.path.ismount(netns) and plugins.calls == [("ADD", sid, str(netns))]
        await rt.stop_pod_sandbox(sid)
        assert plugins.calls[-1] == ("DEL", sid, str(netns)) and not netns.exists()
        (stopped,) = [s for s in await rt.list_pod_sandboxes() if s.id == sid]
        assert stopped.state is SandboxState.NOTREADY and stopped.ips == ("10.251.200.2",)
        await rt.remove_pod_sandbox(sid)
        await rt.remove_pod_sandbox(host)
        assert [c[0] for c in plugins.calls] == ["ADD", "DEL"]  # one teardown, the host pod none

    asyncio.run(go())


def test_a_failed_add_leaves_nothing(tmp_path: Path) -> None:
    plugins = Plugins(fail=True)
    rt = runtime(tmp_path, plugins)
    with pytest.raises(NetworkError, match="no address"):
        asyncio.run(rt.run_pod_sandbox(config(tmp_path)))
    assert asyncio.run(rt.list_pod_sandboxes()) == []
    assert list((tmp_path / "netns").iterdir()) == []
    assert [c[0] for c in plugins.calls] == ["ADD", "DEL"]


def test_restart_settles_half_made_networks(tmp_path: Path) -> None:
    plugins = Plugins()
    state = StateDir(tmp_path / "state")
    # died between saving the namespace's path and saving the ADD's result: never ready
    half = SandboxRecord("a" * 64, config(tmp_path), 1, ready=True, netns=str(tmp_path / "netns" / ("a" * 64)))
    state.save_sandbox(half)
    (tmp_path / "netns").mkdir()
    stale = tmp_path / "netns" / ("b" * 64)  # a namespace whose record is gone
    asyncio.run(SandboxNetworks(plugins, tmp_path / "netns", shim_path())._netns("add", str(stale)))
    rt = runtime(tmp_path, plugins)
    (listed,) = asyncio.run(rt.list_pod_sandboxes())
    assert listed.state is SandboxState.NOTREADY and listed.ips == ()
    asyncio.run(rt.start_networks())
    assert not stale.exists() and ("DEL", "b" * 64, str(stale)) in plugins.calls
    asyncio.run(rt.remove_pod_sandbox("a" * 64))  # its stop DELs (the namespace never got bound)
    assert ("DEL", "a" * 64, "") in plugins.calls
