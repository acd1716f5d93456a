"""Pods submitted over HTTP (--enable-pod-submission): the kubelet's old fourth source, the
`api-http` one, fed by PUT/POST /submittedpods on the secure port.

A request carries a v1 Pod or PodList (JSON or YAML) and replaces the whole set this source
defines (a SET snapshot, like the other sources); an empty PodList removes them all. It is taken
whole or not at all: a body over 1.5 MiB, one that does not decode or validate exactly as a
manifest file would, or a list that names a pod twice is refused with the reason (InvalidInput:
400) and the set in force stays. Pods get the static identity (name `<name>-<node>`, UID from
their content, `kubernetes.io/config.source: api-http`).

The accepted body is kept in <root-dir>/submitted_pods.json (written atomically) and read back at
start, so a restarted agent defines the same pods and re-adopts their containers instead of
killing them. A file that cannot be read or decoded then is no news (the rule of every source):
nothing is emitted, so the pods it defined are not killed, and the source is reported not ready.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from pathlib import Path

from kubeletapi.api.core_v1 import Pod
from kubeletapi.atomicfile import write_atomic
from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput
from kubeletapi.pods.manifest import decode_pod_list
from kubeletapi.pods.sources import MAX_MANIFEST_BYTES, Emit, ManifestResult, PodUpdate
from kubeletapi.pods.static import SourceKind, make_static

log = logging.getLogger(__name__)

SOURCE: SourceKind = "api-http"
STATE_FILE = "submitted_pods.json"
ORIGIN = "request body"
TOO_LARGE = f"the pod list is larger than 1.5 MiB ({MAX_MANIFEST_BYTES} bytes)"


class SubmissionSource:
    """A PodSource whose snapshots come from accepted submissions."""

    def __init__(self, node_name: str, clock: Clock, state_file: Path) -> None:
        self._node = node_name
        self._clock = clock
        self._file = state_file
        self._results: tuple[ManifestResult, ...] | None = None
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()

    async def submit(self, body: bytes) -> list[Pod]:
        """Validate `body` and make it the source's set; the pods as the node names them.
        Decoding and the file write run in a worker thread (a list may be 1.5 MiB of YAML)."""
        async with self._lock:  # one at a time: the file and the set in force are the same submission
            pods = await asyncio.to_thread(self._decode, body, ORIGIN)
            await asyncio.to_thread(write_atomic, self._file, body, mode=0o600)
            self._results = tuple(ManifestResult(f"{SOURCE}:{p.metadata.namespace}/{p.metadata.name}", pod=p)
                                  for p in pods)
            self._changed.set()
        log.info("pod submission accepted: %d pod(s): %s", len(pods),
                 ", ".join(f"{p.metadata.namespace}/{p.metadata.name}" for p in pods) or "none")
        return pods

    async def run(self, emit: Emit) -> None:
        if self._results is None:
            self._results = await asyncio.to_thread(self._restore)
        while True:
            self._changed.clear()
            if self._results is not None:
                emit(PodUpdate(SOURCE, self._results))
            await self._changed.wait()

    def _restore(self) -> tuple[ManifestResult, ...] | None:
        try:
            body = self._file.read_bytes()
        except FileNotFoundError:
            return ()
        except OSError as exc:
            log.error("cannot read the submitted pods %s: %s; their pods are kept, the source is not ready",
                      self._file, exc.strerror)
            return None
        try:
            pods = self._decode(body, str(self._file))
        except InvalidInput as exc:
            log.error("the submitted pods %s cannot be used: %s; their pods are kept, the source is not ready "
                      "(submit a pod list again, or delete the file)", self._file, exc)
            return None
        return tuple(ManifestResult(f"{SOURCE}:{p.metadata.namespace}/{p.metadata.name}", pod=p) for p in pods)

    def _decode(self, body: bytes, origin: str) -> list[Pod]:
        if len(body) > MAX_MANIFEST_BYTES:
            raise InvalidInput(f"{origin}: {TOO_LARGE}")
        seen = dt.datetime.fromtimestamp(self._clock.now(), dt.UTC)
        pods = [make_static(p, self._node, SOURCE, origin, seen) for p in decode_pod_list(body, origin)]
        names: set[tuple[str, str]] = set()
        for pod in pods:
            key = (pod.metadata.namespace, pod.metadata.name)
            if key in names:
                raise InvalidInput(f"{origin}: pod {key[0]}/{key[1]} is given more than once")
            names.add(key)
        return pods
