"""What the CRI runtime remembers of each sandbox: a cache, never state.

CreateContainer needs the sandbox's PodSandboxConfig again (containerd derives a container's
cgroup and log file from it), and the Sandbox values carry its log directory and cgroup parent,
which ListPodSandbox omits; the cAdvisor labels want its pause image and the pod status its
addresses, which only PodSandboxStatus's verbose answer gives. A sandbox this process created is
remembered as it was sent; any other (a restarted agent's) is read once from that verbose answer.
A sandbox a listing no longer shows is forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence

from google.protobuf import json_format

from kubeletapi.errors import KubeletError, NotFound
from kubeletapi.runtime.cri import client as rpc
from kubeletapi.runtime.cri import convert
from kubeletapi.runtime.cri.client import CRIClient
from kubeletapi.runtime.cri.gen import api_pb2 as pb
from kubeletapi.runtime.types import Sandbox


class SandboxCache:
    """Each sandbox's config, pause image and addresses, by sandbox id."""

    def __init__(self, client: CRIClient) -> None:
        self._client = client
        self._configs: dict[str, pb.PodSandboxConfig] = {}
        self._images: dict[str, str] = {}  # the pause image of each sandbox (verbose info)
        self._ips: dict[str, tuple[str, ...]] = {}  # each sandbox's own addresses (its status)

    async def created(self, sandbox_id: str, config: pb.PodSandboxConfig) -> None:
        """A sandbox this runtime just ran with `config`: its image and addresses are read once
        (a failure leaves them empty)."""
        self._configs[sandbox_id] = config
        with contextlib.suppress(KubeletError):
            answer = await self._status(sandbox_id)
            self._remember(sandbox_id, answer, convert.verbose_info(answer.info))

    def forget(self, sandbox_id: str) -> None:
        self._configs.pop(sandbox_id, None)
        self._images.pop(sandbox_id, None)
        self._ips.pop(sandbox_id, None)

    def cgroup_in_use(self, parent: str) -> bool:
        """Some sandbox still known (another attempt of the pod) has this cgroup parent."""
        return any(c.linux.cgroup_parent == parent for c in self._configs.values())

    async def config(self, sandbox_id: str, missing_ok: bool = False) -> pb.PodSandboxConfig | None:
        """The config the sandbox was created with: cached, or rebuilt from its verbose status
        (None for a sandbox that does not exist, with `missing_ok`; else NotFound)."""
        cached = self._configs.get(sandbox_id)
        if cached is not None:
            return cached
        try:
            answer = await self._status(sandbox_id)
        except NotFound:
            if missing_ok:
                return None
            raise
        info = convert.verbose_info(answer.info)  # containerd's JSON, parsed once for all three
        self._remember(sandbox_id, answer, info)
        config = _config_from_info(info)
        if config is None:  # a runtime without containerd's verbose info: what the status says
            s = answer.status
            config = pb.PodSandboxConfig(metadata=s.metadata, labels=s.labels, annotations=s.annotations)
        self._configs[sandbox_id] = config
        return config

    async def sandboxes(self, items: Sequence[pb.PodSandbox], pod_uid: str | None) -> list[Sandbox]:
        """A listing (of one pod's sandboxes when `pod_uid` is given) as Sandbox values: what it
        no longer shows is forgotten, what it shows first is read."""
        listed = {item.id for item in items}
        known = {sid for sid, c in self._configs.items() if pod_uid is None or c.metadata.uid == pod_uid}
        for gone in known - listed:
            self.forget(gone)
        unknown = [item.id for item in items if item.id not in self._configs]
        await asyncio.gather(*(self.config(sid, missing_ok=True) for sid in unknown))
        out = []
        for item in items:
            config = self._configs.get(item.id)
            paths = (config.log_directory, config.linux.cgroup_parent) if config is not None else ("", "")
            out.append(convert.sandbox(item, *paths, self._images.get(item.id, ""), self._ips.get(item.id, ())))
        return out

    async def _status(self, sandbox_id: str) -> pb.PodSandboxStatusResponse:
        return await self._client.call(
            rpc.POD_SANDBOX_STATUS, pb.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id, verbose=True))

    def _remember(self, sandbox_id: str, answer: pb.PodSandboxStatusResponse, info: Mapping[str, object]) -> None:
        self._images[sandbox_id] = str(info.get("image", ""))
        self._ips[sandbox_id] = convert.sandbox_ips(answer.status)


def _config_from_info(info: Mapping[str, object]) -> pb.PodSandboxConfig | None:
    """The PodSandboxConfig in containerd's verbose sandbox info (proto field names, enum numbers)."""
    config = info.get("config")
    if not isinstance(config, dict):
        return None
    try:
        return json_format.ParseDict(config, pb.PodSandboxConfig(), ignore_unknown_fields=True)
    except (ValueError, AttributeError, json_format.ParseError):
        return None
