"""Pod volumes on the host: emptyDir and hostPath, prepared before the sandbox.

emptyDir lives in <root-dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name> (mode 0777, as
the kubelet creates it); medium Memory mounts a tmpfs there (root only), so every container of
the pod shares it. hostPath honours its type (DirectoryOrCreate, FileOrCreate, Directory, File,
Socket, CharDevice, BlockDevice). Other volume sources need an API server or a plugin: the pod
cannot start and the reason says why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

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


class VolumeError(InvalidInput):
    """A volume cannot be prepared: the pod waits in ContainerCreating with this message."""


class PodVolumes:
    def __init__(self, node: NodeEnv, run: Callable[[list[str]], None] | None = None) -> None:
        self._node = node
        self._run = run or _run

    def setup(self, pod: Pod) -> dict[str, Mount]:
        """Prepare every volume of `pod`; name -> what to mount (host path or tmpfs)."""
        return {v.name: self._prepare(pod, v) for v in pod.spec.volumes}

    def _prepare(self, pod: Pod, volume: Volume) -> Mount:
        if volume.empty_dir is not None:
            return self._empty_dir(pod.metadata.uid, volume)
        if volume.host_path is not None:
            return self._host_path(volume)
        kinds = ", ".join(volume.sources()) or "no source"
        raise VolumeError(
            f'volume "{volume.name}": {kinds} volumes are not supported by kubeletapi '
            "(only emptyDir and hostPath: there is no API server or volume plugin)"
        )

    def _empty_dir(self, uid: str, volume: Volume) -> Mount:
        path = empty_dir_path(self._node, uid, volume.name)
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o777)  # noqa: S103 - the kubelet's emptyDir mode: any container user writes
        assert volume.empty_dir is not None
        if volume.empty_dir.medium == "Memory":
            if not self._node.isolated:
                raise VolumeError(f'volume "{volume.name}": emptyDir medium Memory needs kubeletapi to run as root')
            if not os.path.ismount(path):
                size = volume.empty_dir.size_limit
                options = f"mode=0777,size={size.value()}" if size is not None else "mode=0777"
                self._run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)])
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
                    raise VolumeError(f'volume "{volume.name}": hostPath type check failed: {path} is not {what}')
        except OSError as exc:
            raise VolumeError(f'volume "{volume.name}": hostPath {path}: {exc.strerror}') from exc
        return Mount("", str(path))

    def teardown(self, uid: str) -> None:
        """Unmount memory-backed emptyDirs and remove the pod's directory."""
        base = self._node.pod_dir(uid)
        empty = base / "volumes" / EMPTY_DIR_PLUGIN
        if empty.is_dir():
            for entry in empty.iterdir():
                if os.path.ismount(entry):
                    with contextlib.suppress(VolumeError):
                        self._run(["umount", str(entry)])
        shutil.rmtree(base, ignore_errors=True)


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    if result.returncode != 0:
        raise VolumeError(f"{' '.join(argv)}: {result.stderr.strip()}")
