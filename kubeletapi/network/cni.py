"""Calling CNI plugins directly, as a container runtime does (CNI spec 1.0: the plugin protocol).

A plugin is an executable found in the plugin dirs (CNI_PATH); each call passes the operation and
the attachment in the environment (CNI_COMMAND ADD/CHECK/DEL, CNI_CONTAINERID, CNI_NETNS,
CNI_IFNAME, CNI_ARGS, CNI_PATH) and the plugin's configuration on stdin, and reads a result
(ADD) or an error (any operation) as JSON on stdout. A conflist's plugins are chained: ADD runs
them in order, each given the previous result as prevResult; DEL runs them in reverse; CHECK in
order with the ADD result. Plugins run as asyncio subprocesses with a timeout, so a slow or hung
plugin never blocks the event loop; every failure becomes one NetworkError naming the plugin,
the operation, the container and the plugin's own error code and message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeletapi.errors import NetworkError

PLUGIN_TIMEOUT_S = 60.0
OUTPUT_MAX = 4096  # of a plugin's stderr kept for an error message


@dataclass(frozen=True)
class Attachment:
    """One interface of a container in a network namespace (the CNI runtime's parameters)."""

    container_id: str
    netns: str
    ifname: str = "eth0"
    args: Mapping[str, str] = field(default_factory=dict)  # CNI_ARGS, e.g. K8S_POD_NAME


@dataclass(frozen=True)
class NetworkResult:
    """An ADD's result: the addresses (without prefix length) and the raw result for CHECK/DEL."""

    ips: tuple[str, ...]
    raw: Mapping[str, Any]


def parse_result(raw: Mapping[str, Any]) -> NetworkResult:
    """The ips[].address of a CNI 1.0 result (0.3/0.4 results have the same shape), in order,
    prefix length dropped. An address list that is malformed is a NetworkError."""
    ips: list[str] = []
    for entry in raw.get("ips") or ():
        address = entry.get("address") if isinstance(entry, Mapping) else None
        if not isinstance(address, str) or not address:
            raise NetworkError(f"CNI result has a malformed ips entry: {entry!r}")
        ips.append(address.split("/", 1)[0])
    return NetworkResult(tuple(ips), dict(raw))


def error_message(plugin: str, command: str, container_id: str, stdout: bytes, stderr: bytes, code: int | None) -> str:
    """The one-line reason of a failed call: the spec's error object (code, msg, details) if the
    plugin printed one, else its exit status and stderr."""
    what = f"CNI plugin {plugin} {command} for container {container_id[:12]} failed"
    try:
        err = json.loads(stdout)
    except ValueError:
        err = None
    if isinstance(err, Mapping) and ("msg" in err or "code" in err):
        text = f"{what} (code {err.get('code')}): {err.get('msg', '')}"
        details = err.get("details")
        return f"{text}: {details}" if details else text
    tail = stderr.decode(errors="replace").strip()[-OUTPUT_MAX:]
    status = f"exit status {code}" if code is not None else "no exit status"
    return f"{what} ({status}){': ' + tail if tail else ''}"


class PluginRunner:
    """Finds and runs single plugins: the CNI_PATH dirs and a per-call timeout."""

    def __init__(self, plugin_dirs: Sequence[Path], timeout_s: float = PLUGIN_TIMEOUT_S) -> None:
        self._dirs = list(plugin_dirs)
        self._timeout_s = timeout_s

    def find(self, plugin: str) -> Path:
        for d in self._dirs:
            candidate = d / plugin
            if os.access(candidate, os.X_OK) and candidate.is_file():
                return candidate
        raise NetworkError(f"CNI plugin {plugin!r} not found in {':'.join(map(str, self._dirs))}")

    async def call(self, command: str, conf: Mapping[str, Any], at: Attachment) -> Mapping[str, Any]:
        """Run `conf["type"]` with `command`; its parsed stdout ({} when empty, as DEL's is)."""
        plugin = str(conf.get("type", ""))
        exe = self.find(plugin)
        env = {
            "CNI_COMMAND": command, "CNI_CONTAINERID": at.container_id, "CNI_NETNS": at.netns,
            "CNI_IFNAME": at.ifname, "CNI_PATH": ":".join(map(str, self._dirs)),
            "CNI_ARGS": ";".join(f"{k}={v}" for k, v in at.args.items()),
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
        }
        proc = await asyncio.create_subprocess_exec(
            str(exe), env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        try:
            async with asyncio.timeout(self._timeout_s):
                out, err = await proc.communicate(json.dumps(conf).encode())
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise NetworkError(f"CNI plugin {plugin} {command} for container {at.container_id[:12]} "
                               f"timed out after {self._timeout_s:g}s") from None
        if proc.returncode != 0:
            raise NetworkError(error_message(plugin, command, at.container_id, out, err, proc.returncode))
        if not out.strip():
            return {}
        try:
            parsed = json.loads(out)
        except ValueError:
            raise NetworkError(f"CNI plugin {plugin} {command} printed a result that is not JSON: "
                               f"{out[:200]!r}") from None
        if not isinstance(parsed, dict):
            raise NetworkError(f"CNI plugin {plugin} {command} printed {type(parsed).__name__}, not a result object")
        return parsed


class NetworkList:
    """ADD, CHECK and DEL of a conflist, its plugins chained as the spec says."""

    def __init__(self, conflist: Mapping[str, Any], runner: PluginRunner) -> None:
        self._list = conflist
        self._runner = runner

    def _plugin_conf(self, plugin: Mapping[str, Any], prev: Mapping[str, Any] | None) -> dict[str, Any]:
        conf = {**plugin, "name": self._list["name"], "cniVersion": self._list["cniVersion"]}
        if prev is not None:
            conf["prevResult"] = prev
        return conf

    async def add(self, at: Attachment) -> NetworkResult:
        prev: Mapping[str, Any] | None = None
        for plugin in self._list["plugins"]:
            prev = await self._runner.call("ADD", self._plugin_conf(plugin, prev), at)
        return parse_result(prev or {})

    async def check(self, at: Attachment, result: Mapping[str, Any]) -> None:
        for plugin in self._list["plugins"]:
            await self._runner.call("CHECK", self._plugin_conf(plugin, result), at)

    async def delete(self, at: Attachment, result: Mapping[str, Any] | None = None) -> None:
        """DEL in reverse order. Every plugin is called even if one fails (what one holds, say the
        IPAM's address, is released whatever another did); the first failure is raised after."""
        first: NetworkError | None = None
        for plugin in reversed(self._list["plugins"]):
            try:
                await self._runner.call("DEL", self._plugin_conf(plugin, result), at)
            except NetworkError as exc:
                first = first or exc
        if first is not None:
            raise first


def loopback_conf(version: str, name: str) -> dict[str, Any]:
    """The loopback plugin's configuration: it brings `lo` up in the namespace (CNI_IFNAME=lo)."""
    return {"cniVersion": version, "name": name, "type": "loopback"}
