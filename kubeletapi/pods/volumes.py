"""Pod volumes on the host, prepared before the sandbox (and again on every sync).

emptyDir lives in <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name> (mode 0777, as
the kubelet creates it); medium Memory mounts a tmpfs there (root only), so every container of
the pod shares it. hostPath honours its type (DirectoryOrCreate, FileOrCreate, Directory, File,
Socket, CharDevice, BlockDevice). configMap, secret, downwardAPI and projected volumes need the
API server: with --kubeconfig an ApiVolumePlugins (pods.apivolumes) writes them; standalone, the
pod cannot start and the reason says so. Other volume sources need a volume plugin kubeletapi
does not have. A volume that cannot be prepared leaves the pod in ContainerCreating with the
reason (VolumeError: the one place a failed mount is reported); the other volumes are still
prepared, and other pods are not affected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from kubeletapi.api.core_v1 import Pod, Volume
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.node import NodeEnv
from kubeletapi.runtime.types import Mount

log = logging.getLogger(__name__)

_HOST_PATH_CHECKS: dict[str, tuple[Callable[[int], bool], str]] = {
    "Directory": (stat.S_ISDIR, "a directory"),
    "File": (stat.S_ISREG, "a file"),
    "Socket": (stat.S_ISSOCK, "a socket"),
    "CharDevice": (stat.S_ISCHR, "a character device"),
    "BlockDevice": (stat.S_ISBLK, "a block device"),
}


EMPTY_DIR_PLUGIN = "kubernetes.io~empty-dir"


def empty_dir_path(node: NodeEnv, uid: str, name: str) -> Path:
    """Where the pod's emptyDir `name` lives: <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>."""
    return node.pod_dir(uid) / "volumes" / EMPTY_DIR_PLUGIN / name


API_KINDS = ("configMap", "secret", "downwardAPI", "projected")
# The kubelet's plugin names of the sources kubeletapi mounts (volume_manager_total_volumes' plugin_name).
PLUGIN_NAMES = {"emptyDir": "kubernetes.io/empty-dir", "hostPath": "kubernetes.io/host-path",
                "configMap": "kubernetes.io/configmap", "secret": "kubernetes.io/secret",
                "downwardAPI": "kubernetes.io/downward-api", "projected": "kubernetes.io/projected"}
DESIRED, ACTUAL = "desired_state_of_world", "actual_state_of_world"


def setup_failed(volume: str, why: str) -> str:
    """A volume's FailedMount message in the kubelet's words (GenerateError)."""
    return f'MountVolume.SetUp failed for volume "{volume}" : {why}'


class VolumeError(InvalidInput):
    """A volume cannot be prepared: the pod waits in ContainerCreating with this message (the
    kubelet's FailedMount), and its sync runs again after `retry_s` (None: the syncer's default)."""

    def __init__(self, message: str, retry_s: float | None = None, parts: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.retry_s = retry_s
        self.parts = tuple(parts) or (message,)  # one per failed volume: the kubelet's FailedMount events


class ApiVolumePlugins(Protocol):
    """The volumes written from the API server's objects (pods.apivolumes.ApiVolumes)."""

    def register(self, pod: Pod) -> None:
        """Note what the pod references (its objects are watched from now on)."""
        ...

    async def setup(self, pod: Pod, volume: Volume, kind: str) -> Mount: ...

    def teardown(self, uid: str) -> None: ...


class PodVolumes:
    def __init__(self, node: NodeEnv, run: Callable[[list[str]], None] | None = None,
                 api: ApiVolumePlugins | None = None) -> None:
        self._node = node
        self._run = run or run_command
        self._api = api
        # uid -> volume name -> plugin name: what the pods ask for and what is set up (the
        # kubelet's volume manager's desired and actual states of the world, as counts)
        self._desired: dict[str, dict[str, str]] = {}
        self._actual: dict[str, dict[str, str]] = {}

    def counts(self) -> dict[tuple[str, str], int]:
        """(plugin name, DESIRED or ACTUAL) -> volumes, for volume_manager_total_volumes."""
        out: dict[tuple[str, str], int] = {}
        for state, pods in ((DESIRED, self._desired), (ACTUAL, self._actual)):
            for volumes in list(pods.values()):
                for plugin in volumes.values():
                    out[plugin, state] = out.get((plugin, state), 0) + 1
        return out

    async def setup(self, pod: Pod) -> dict[str, Mount]:
        """Prepare every volume of `pod`; name -> what to mount (host path or tmpfs). VolumeError
        names every volume that failed."""
        if self._api is not None:
            self._api.register(pod)
        uid = pod.metadata.uid
        plugins = {v.name: PLUGIN_NAMES[k[0]] for v in pod.spec.volumes if (k := v.sources()) and k[0] in PLUGIN_NAMES}
        self._desired[uid] = plugins
        actual = self._actual.setdefault(uid, {})
        mounts: dict[str, Mount] = {}
        failures: list[VolumeError] = []
        for volume in pod.spec.volumes:
            try:
                mounts[volume.name] = await self._prepare(pod, volume)
            except VolumeError as exc:
                failures.append(exc)
            else:
                if volume.name in plugins:
                    actual[volume.name] = plugins[volume.name]
        if failures:
            retries = [f.retry_s for f in failures if f.retry_s is not None]
            parts = [part for f in failures for part in f.parts]
            raise VolumeError("; ".join(parts), min(retries) if retries else None, parts)
        return mounts

    async def _prepare(self, pod: Pod, volume: Volume) -> Mount:
        if volume.empty_dir is not None:
            return await asyncio.to_thread(self._empty_dir, pod.metadata.uid, volume)
        if volume.host_path is not None:
            return await asyncio.to_thread(self._host_path, volume)
        kinds = volume.sources()
        if kinds and kinds[0] in API_KINDS:
            if self._api is None:
                raise VolumeError(setup_failed(
                    volume.name, f"{kinds[0]} volumes need an API server, and kubeletapi runs "
                    "standalone (no --kubeconfig): only emptyDir and hostPath volumes can be mounted"))
            return await self._api.setup(pod, volume, kinds[0])
        named = ", ".join(kinds) or "no source"
        if self._api is not None:
            raise VolumeError(setup_failed(
                volume.name, f"{named} volumes are not supported by "
                "kubeletapi (it mounts emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes)"))
        raise VolumeError(setup_failed(
            volume.name, f"{named} volumes are not supported by kubeletapi "
            "(only emptyDir and hostPath: there is no API server or volume plugin)"))

    def _empty_dir(self, uid: str, volume: Volume) -> Mount:
        path = empty_dir_path(self._node, uid, volume.name)
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o777)  # noqa: S103 - the kubelet's emptyDir mode: any container user writes
        assert volume.empty_dir is not None
        if volume.empty_dir.medium == "Memory":
            if not self._node.isolated:
                raise VolumeError(setup_failed(volume.name, 'emptyDir medium Memory needs kubeletapi to run as root'))
            if not os.path.ismount(path):
                size = volume.empty_dir.size_limit
                options = f"mode=0777,size={size.value()}" if size is not None else "mode=0777"
                try:
                    self._run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)])
                except VolumeError as exc:
                    raise VolumeError(setup_failed(volume.name, str(exc))) from exc
        return Mount("", str(path))

    def _host_path(self, volume: Volume) -> Mount:
        assert volume.host_path is not None
        path = Path(volume.host_path.path)
        kind = volume.host_path.type or ""
        try:
            if kind == "DirectoryOrCreate":
                path.mkdir(mode=0o755, parents=True, exist_ok=True)
            elif kind == "FileOrCreate" and not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch(mode=0o644)
            elif kind in _HOST_PATH_CHECKS:
                check, what = _HOST_PATH_CHECKS[kind]
                if not path.exists() or not check(path.stat().st_mode):
                    raise VolumeError(setup_failed(volume.name, f"hostPath type check failed: {path} is not {what}"))
        except OSError as exc:
            raise VolumeError(setup_failed(volume.name, f"hostPath {path}: {exc.strerror}")) from exc
        return Mount("", str(path))

    async def teardown(self, uid: str) -> None:
        """Forget the pod's API objects, unmount its tmpfs volumes and remove its directory."""
        self._desired.pop(uid, None)
        self._actual.pop(uid, None)
        if self._api is not None:
            self._api.teardown(uid)
        await asyncio.to_thread(self._remove, uid)

    def _remove(self, uid: str) -> None:
        base = self._node.pod_dir(uid)
        volumes = base / "volumes"
        for plugin in volumes.iterdir() if volumes.is_dir() else ():
            for entry in plugin.iterdir() if plugin.is_dir() else ():
                if os.path.ismount(entry):
                    with contextlib.suppress(VolumeError):
                        self._run(["umount", str(entry)])
        shutil.rmtree(base, ignore_errors=True)


def run_command(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    if result.returncode != 0:
        raise VolumeError(f"{' '.join(argv)}: {result.stderr.strip()}")
