"""A pod's attachment to the node's pod network: `lo` up, then the conflist's chain on eth0.

What the process runtime calls for each sandbox with its own network namespace (a CRI runtime
does the same inside itself, from the conflist in its conf dir). The container id given to the
plugins is the sandbox's id: host-local files each address under it, so a DEL with that id alone
(even once the namespace is gone) releases the address.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubeletapi.errors import NetworkError
from kubeletapi.network.cni import PLUGIN_TIMEOUT_S, Attachment, NetworkList, NetworkResult, PluginRunner, loopback_conf
from kubeletapi.network.conflist import PodNetworkConfig, conflist

log = logging.getLogger(__name__)


class PodNetwork:
    """ADD/DEL of one pod's interfaces through the plugins in `plugin_dirs`."""

    def __init__(self, cfg: PodNetworkConfig, plugin_dirs: Sequence[Path], timeout_s: float = PLUGIN_TIMEOUT_S) -> None:
        self.config = cfg
        self._conflist = conflist(cfg)
        self._runner = PluginRunner(plugin_dirs, timeout_s)
        self._list = NetworkList(self._conflist, self._runner)

    def check_plugins(self) -> None:
        """Raise NetworkError now if a plugin the pods will need is missing."""
        for plugin in ("loopback", *(p["type"] for p in self._conflist["plugins"]), "host-local"):
            self._runner.find(plugin)

    async def attach(self, container_id: str, netns: str, args: Mapping[str, str]) -> NetworkResult:
        """Bring up `lo` and add eth0; on a failure what was added is deleted again."""
        lo = loopback_conf(self._conflist["cniVersion"], self._conflist["name"])
        await self._runner.call("ADD", lo, Attachment(container_id, netns, "lo", args))
        at = Attachment(container_id, netns, "eth0", args)
        try:
            result = await self._list.add(at)
        except NetworkError:
            with contextlib.suppress(NetworkError):
                await self._list.delete(at)
            raise
        if not result.ips:
            await self._list.delete(at, result.raw)
            raise NetworkError(f"CNI ADD for container {container_id[:12]} returned no address")
        return result

    async def detach(self, container_id: str, netns: str, result: Mapping[str, Any] | None,
                     args: Mapping[str, str]) -> None:
        """Delete eth0 and release its address. `netns` may be "" (the namespace is gone): the
        plugins then release what they hold by the container id alone."""
        await self._list.delete(Attachment(container_id, netns, "eth0", args), result or None)
