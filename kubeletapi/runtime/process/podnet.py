"""The process runtime's pod networks: a network namespace per sandbox, attached by CNI plugins.

A sandbox whose pod is not on the host network gets a namespace bound on `<netns dir>/<sandbox
id>` (the shim's `netns add`), then the plugins' ADD with the sandbox id as the container id;
its containers' shims join it (--netns). Stopping the sandbox DELs and unbinds it.

Crash safety: the sandbox record names its namespace before the namespace exists, and keeps it
until DEL and the unbinding both succeeded, so an agent killed at any point leaves either a
record naming the namespace (its sandbox is re-adopted, or settled by a stop like any other) or,
for a namespace whose record is gone, a file in the netns dir, which cleanup() finds at start:
the file's name is the container id the plugins filed the address under, so DEL releases it.
A record that names a namespace but no address (the agent died between ADD and saving its
result) is a sandbox that never became ready: the runtime reports it NOTREADY, and the pod
syncer replaces it (its stop DELs whatever ADD reserved).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from kubeletapi.errors import NetworkError
from kubeletapi.network.cni import NetworkResult
from kubeletapi.runtime.process.state import SandboxRecord

log = logging.getLogger(__name__)

NETNS_TIMEOUT_S = 10.0


class NetworkPlugins(Protocol):
    """What the runtime needs of the plugins (network.pod.PodNetwork)."""

    async def attach(self, container_id: str, netns: str, args: Mapping[str, str]) -> NetworkResult: ...

    async def detach(self, container_id: str, netns: str, result: Mapping[str, Any] | None,
                     args: Mapping[str, str]) -> None: ...


def cni_args(record: SandboxRecord | None, sandbox_id: str) -> dict[str, str]:
    """CNI_ARGS as the kubelet's runtimes pass them (plugins that do not know them ignore them)."""
    args = {"IgnoreUnknown": "1", "K8S_POD_INFRA_CONTAINER_ID": sandbox_id}
    if record is not None:
        args |= {"K8S_POD_NAMESPACE": record.config.meta.namespace, "K8S_POD_NAME": record.config.meta.name}
    return args


def _bound(path: str) -> str:
    """`path` if a namespace is bound there, else "" (a file left unbound by a crash, or by a reboot:
    the plugins then release by the container id alone, as the CNI spec's DEL without a netns)."""
    return path if os.path.ismount(path) else ""


class SandboxNetworks:
    """Namespaces under `netns_dir`, made and removed by the shim, attached by `plugins`."""

    def __init__(self, plugins: NetworkPlugins, netns_dir: Path, shim: Path) -> None:
        self._plugins = plugins
        self.netns_dir = netns_dir
        self._shim = shim
        netns_dir.mkdir(parents=True, exist_ok=True)

    def path(self, sandbox_id: str) -> Path:
        return self.netns_dir / sandbox_id

    async def setup(self, record: SandboxRecord, save: Callable[[SandboxRecord], None]) -> None:
        """Create and attach the sandbox's namespace; `save` records its path first. On a failure
        whatever was made is removed again and the error raised."""
        record.netns = str(self.path(record.id))
        save(record)
        try:
            await self._netns("add", record.netns)
            result = await self._plugins.attach(record.id, record.netns, cni_args(record, record.id))
        except NetworkError:
            try:
                await self.teardown(record)
            except NetworkError as exc:
                log.warning("process runtime: cleaning up after a failed network setup: %s", exc)
            raise
        record.ips, record.network = list(result.ips), dict(result.raw)

    async def teardown(self, record: SandboxRecord) -> None:
        """DEL the sandbox's interfaces and remove its namespace (nothing if it has none)."""
        if not record.netns:
            return
        await self._plugins.detach(record.id, _bound(record.netns), record.network or None, cni_args(record, record.id))
        await self._netns("del", record.netns)
        record.netns, record.network = "", {}  # the addresses stay on record: the pod's last ones

    async def cleanup(self, sandboxes: Mapping[str, SandboxRecord]) -> list[str]:
        """Release and remove namespaces no sandbox record names (left by a crash); returns
        their ids. A failure is logged and the namespace left for the next start."""
        named = {r.netns for r in sandboxes.values() if r.netns}
        removed: list[str] = []
        for entry in sorted(self.netns_dir.iterdir()):
            if str(entry) in named or entry.name.startswith("."):
                continue
            try:
                await self._plugins.detach(entry.name, _bound(str(entry)), None, cni_args(None, entry.name))
                await self._netns("del", str(entry))
            except NetworkError as exc:
                log.warning("process runtime: stale network namespace %s: %s", entry, exc)
                continue
            removed.append(entry.name)
        return removed

    async def _netns(self, action: str, path: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            str(self._shim), "netns", action, path, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        try:
            async with asyncio.timeout(NETNS_TIMEOUT_S):
                _, err = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise NetworkError(f"network namespace {action} {path}: timed out after {NETNS_TIMEOUT_S:g}s") from None
        if proc.returncode != 0:
            raise NetworkError(f"network namespace {action} {path}: {err.decode(errors='replace').strip()}")
