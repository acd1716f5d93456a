"""Static pod sources: a manifest directory (or file) and a manifest URL.

Each source emits full snapshots (the kubelet's SET update) of what it holds: one result per
manifest, a pod or the reason it was rejected. A bad manifest never hides the others.

The rule of every source: a failed read is no news, never "nothing desired". Only what a
source read successfully can remove a pod; when it cannot read (too many open files, an I/O
error, a server that does not answer) it emits nothing, or keeps the last good result of what
it could not read, and says why in one log line.
- The directory reacts to changes at once (inotify on the loop: pods.dirwatch) and also re-scans every
  fileCheckFrequency as a safety net; dotfiles and sub-directories are ignored. A directory
  that does not exist holds no pods (the kubelet's rule); one that cannot be listed is no news.
  A manifest that cannot be read keeps its last good result (or, never read, is rejected with
  the reason); one over 1.5 MiB (the API server's object limit) is rejected.
- The URL is polled every httpCheckFrequency; when it cannot be fetched or decoded the last
  good set is kept and the reason logged. Decoding runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kubeletapi.aio import read_at_most, wait_event
from kubeletapi.api.core_v1 import Pod, PodStatus
from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.dirwatch import DirWatch
from kubeletapi.pods.manifest import decode_pod, decode_pod_list
from kubeletapi.pods.static import make_static

if TYPE_CHECKING:  # imported by the URL source when it runs: a node without --manifest-url never loads it
    import httpx

log = logging.getLogger(__name__)

# The API server refuses objects over 1.5 MiB (etcd's request limit): a larger manifest could not
# exist in a cluster, and decoding one would only cost the node.
MAX_MANIFEST_BYTES = 3 * 512 * 1024
_TOO_LARGE = "the manifest is larger than 1.5 MiB"


@dataclass(frozen=True)
class ApiRef:
    """The API object behind a result that has no pod (one that could not be decoded): what the
    status sync needs to report the refusal, and to delete the object once it is deleted."""

    namespace: str
    name: str
    uid: str
    deleting: bool = False


@dataclass(frozen=True)
class ManifestResult:
    """One manifest: the static pod it defines, or why it was rejected."""

    origin: str  # a file path, the URL (with the item index for a PodList), or namespace/name in the API
    pod: Pod | None = None
    error: str = ""
    api: ApiRef | None = None  # an API pod that could not be decoded


@dataclass(frozen=True)
class MirrorPod:
    """A mirror pod in the API server: the API's copy of one static pod (apisource.py)."""

    namespace: str
    name: str
    uid: str
    config_hash: str  # the kubernetes.io/config.mirror annotation: the static pod's UID
    deleting: bool = False
    status: PodStatus | None = field(default=None, compare=False)  # the API's (None: not decodable)


@dataclass(frozen=True)
class PodUpdate:
    """A SET update: everything `source` ("file", "http" or "api") currently defines; the API
    server's source also says which mirror pods exist."""

    source: str
    results: tuple[ManifestResult, ...]
    mirrors: tuple[MirrorPod, ...] = ()


Emit = Callable[[PodUpdate], None]


class PodSource(Protocol):
    async def run(self, emit: Emit) -> None:
        """Emit snapshots until cancelled: only ever what was read successfully (a failed
        read emits nothing, so the pods it defined keep running)."""
        ...


def _now(clock: Clock) -> dt.datetime:
    return dt.datetime.fromtimestamp(clock.now(), dt.UTC)


class FileSource:
    """--pod-manifest-path: one Pod per file (YAML or JSON)."""

    def __init__(self, path: Path, node_name: str, clock: Clock, check_frequency_s: float) -> None:
        self._path = path
        self._node = node_name
        self._clock = clock
        self._period = max(check_frequency_s, 0.5)
        # path -> (identity of the file version, its result): unchanged files keep their
        # result, including the kubernetes.io/config.seen time of their first sighting.
        self._cache: dict[str, tuple[tuple[int, int, int], ManifestResult]] = {}
        self._last_error = ""

    async def run(self, emit: Emit) -> None:
        """Emit every successful scan (soon after start, on changes, every fileCheckFrequency)."""
        changed = asyncio.Event()
        watcher = asyncio.create_task(self._watch(changed), name="manifest-watch")
        # The watcher misses what happens before it is set up: re-scan soon after start (the wait
        # doubles from 0.2 s up to fileCheckFrequency), then at fileCheckFrequency.
        wait = min(0.2, self._period)
        try:
            while True:
                changed.clear()
                results = await asyncio.to_thread(self.scan)
                if results is not None:
                    emit(PodUpdate("file", tuple(results)))
                await wait_event(changed, wait)
                wait = min(wait * 2, self._period)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch(self, changed: asyncio.Event) -> None:
        """Set `changed` on every inotify batch that concerns the manifests.

        A single-file (or not yet existing) path is watched through its directory: an editor's
        save-by-rename replaces the file, and a watch on the old file would go deaf. A watched
        directory that is removed is watched again once it exists anew. The periodic re-scan
        covers the moments in between.
        """
        loop = asyncio.get_running_loop()
        while True:
            single = not self._path.is_dir()
            target = self._path.parent if single else self._path
            if target.is_dir():
                # Once the new watch is armed, re-scan what the change of watch may have missed.
                loop.call_later(0.1, changed.set)
                if await self._watch_once(target, str(self._path) if single else None, changed):
                    continue  # re-arm at once: the watched path changed kind or went away
            await asyncio.sleep(min(self._period, 1.0))

    async def _watch_once(self, target: Path, only: str | None, changed: asyncio.Event) -> bool:
        """Watch until the watch must be re-armed (True) or cannot run (False)."""
        try:
            watch = DirWatch(target)
        except OSError as exc:
            log.debug("cannot watch %s (%s); relying on the periodic re-scan", target, exc)
            return False
        with watch:
            while True:
                batch = await watch.next()
                if batch.gone or batch.overflowed or (
                        batch.names if only is None else any(str(target / n) == only for n in batch.names)):
                    changed.set()
                if batch.gone:
                    return True  # the directory itself went away
                if only is not None and self._path.is_dir():
                    return True  # the path appeared as a directory: watch inside it

    def scan(self) -> list[ManifestResult] | None:
        """Read every manifest now (blocking: called in a thread); None when the path could not
        be read (no news: the last snapshot stays in force)."""
        try:
            info = os.stat(self._path)
        except FileNotFoundError:
            self._report(f"the static pod path {self._path} does not exist: no static pods")
            self._cache = {}
            return []
        except OSError as exc:
            self._report(f"cannot read the static pod path {self._path}: {exc.strerror}; keeping its pods")
            return None
        if stat.S_ISDIR(info.st_mode):
            try:
                names = sorted(os.listdir(self._path))
            except OSError as exc:
                self._report(f"cannot list {self._path}: {exc.strerror}; keeping its pods")
                return None
            files = [self._path / n for n in names if not n.startswith(".")]
        else:
            files = [self._path]
        self._report("")
        results = [r for r in (self._read(f) for f in files) if r is not None]
        keep = {r.origin for r in results}
        self._cache = {k: v for k, v in self._cache.items() if k in keep}
        return results

    def _read(self, path: Path) -> ManifestResult | None:
        """The file's result; None when it is gone or is a directory."""
        origin = str(path)
        try:
            info = os.stat(path)
        except FileNotFoundError as exc:
            if os.path.lexists(path):  # a dangling symlink: say so
                return ManifestResult(origin, error=f"{origin}: {exc.strerror}")
            return None  # removed since the listing: it defines nothing
        except OSError as exc:  # a symlink loop (ELOOP), permissions, too many open files
            return self._unreadable(origin, exc)
        if stat.S_ISDIR(info.st_mode):
            return None  # the kubelet does not recurse
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            return ManifestResult(origin, error=f"{origin}: not a regular file")
        version = (info.st_ino, info.st_mtime_ns, info.st_size)
        cached = self._cache.get(origin)
        if cached is not None and cached[0] == version:
            return cached[1]
        if info.st_size > MAX_MANIFEST_BYTES:
            result = ManifestResult(origin, error=f"{origin}: {_TOO_LARGE} ({info.st_size} bytes)")
        else:
            try:
                with path.open("rb") as fh:
                    data = fh.read(MAX_MANIFEST_BYTES + 1)
            except FileNotFoundError:
                return None
            except OSError as exc:
                return self._unreadable(origin, exc)
            result = self._decode(data, origin)
        self._cache[origin] = (version, result)
        return result

    def _unreadable(self, origin: str, exc: OSError) -> ManifestResult:
        """A manifest that cannot be read now: its last good result, else a rejection."""
        cached = self._cache.get(origin)
        if cached is not None and cached[1].pod is not None:
            log.warning("cannot read %s: %s; keeping its pod", origin, exc.strerror)
            return cached[1]
        return ManifestResult(origin, error=f"{origin}: {exc.strerror}")

    def _decode(self, data: bytes, origin: str) -> ManifestResult:
        if len(data) > MAX_MANIFEST_BYTES:
            return ManifestResult(origin, error=f"{origin}: {_TOO_LARGE}")
        try:
            pod = make_static(decode_pod(data, origin), self._node, "file", origin, _now(self._clock))
        except InvalidInput as exc:
            return ManifestResult(origin, error=str(exc))
        return ManifestResult(origin, pod=pod)

    def _report(self, error: str) -> None:
        if error and error != self._last_error:
            log.warning("%s", error)
        self._last_error = error


class URLSource:
    """--manifest-url: a Pod or a PodList, polled; unreachable keeps the last good set."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, Sequence[str]],
        node_name: str,
        clock: Clock,
        check_frequency_s: float,
        timeout_s: float = 10.0,
    ) -> None:
        self._url = url
        self._headers = [(k, v) for k, values in headers.items() for v in values]
        self._node = node_name
        self._clock = clock
        self._period = max(check_frequency_s, 0.5)
        self._timeout = timeout_s
        self._last_body: bytes | None = None
        self._last_error = ""

    async def run(self, emit: Emit) -> None:
        import httpx  # noqa: PLC0415 - see TYPE_CHECKING above

        async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=True) as client:
            while True:
                update = await self.poll(client)
                if update is not None:
                    emit(update)
                await self._clock.sleep(self._period)

    async def poll(self, client: httpx.AsyncClient) -> PodUpdate | None:
        """One fetch; None when it failed (the previous snapshot stays in force)."""
        import httpx  # noqa: PLC0415 - see TYPE_CHECKING above

        try:
            body = await self._fetch(client)
        except (httpx.HTTPError, InvalidInput) as exc:
            self._report(f"cannot fetch static pods from {self._url}: {exc}; keeping the last good set")
            return None
        self._report("")
        if body == self._last_body:
            return None
        try:
            pods = await asyncio.to_thread(decode_pod_list, body, self._url)
        except InvalidInput as exc:
            self._report(str(exc) + "; keeping the last good set")
            return None
        self._last_body = body
        seen = _now(self._clock)
        results = []
        for index, pod in enumerate(pods):
            origin = self._url if len(pods) == 1 else f"{self._url}#{index}"
            try:
                results.append(ManifestResult(origin, pod=make_static(pod, self._node, "http", self._url, seen)))
            except InvalidInput as exc:
                results.append(ManifestResult(origin, error=str(exc)))
        return PodUpdate("http", tuple(results))

    async def _fetch(self, client: httpx.AsyncClient) -> bytes:
        async with client.stream("GET", self._url, headers=self._headers) as response:
            if response.status_code != 200:
                raise InvalidInput(f"{self._url} answered {response.status_code}")
            return await read_at_most(response.aiter_bytes(), MAX_MANIFEST_BYTES, f"{self._url}: {_TOO_LARGE}")

    def _report(self, error: str) -> None:
        if error and error != self._last_error:
            log.warning("%s", error)
        self._last_error = error
