"""Response bodies rendered once per Snapshot generation, and ahead of the first request.

A body (the summary, a metrics text; plain or gzip) depends only on its Snapshot, so it is built
once per housekeeping generation. Bodies that clients asked for recently are rendered again right
after each cycle, in the housekeeping worker thread and before the new Snapshot is published
(`prepare`), so a scrape finds its body ready and the event loop never spends tens of ms
rendering or compressing. A body nobody asked for within `ahead_s` is no longer prepared.
"""

from __future__ import annotations

import gzip
import logging
import threading
from collections.abc import Callable, Mapping

from kubeletapi.errors import KubeletError

log = logging.getLogger(__name__)
# Metrics texts are large and scraped every cycle: level 1 costs half of level 5 for ~10% more bytes.
GZIP_LEVEL = 1
KEEP_GENERATIONS = 2  # the published one and the one being prepared

Key = tuple[str, bool]  # (kind, gzipped)
Renderer = Callable[[], bytes]


class RenderCache:
    def __init__(self, monotonic: Callable[[], float], ahead_s: float = 300.0) -> None:
        self._lock = threading.Lock()
        self._monotonic = monotonic
        self._ahead_s = ahead_s
        self._bodies: dict[int, dict[Key, bytes]] = {}
        self._asked: dict[Key, float] = {}

    def get(self, generation: int, kind: str, gzipped: bool, render: Renderer) -> bytes:
        """The body of `kind` for `generation`, rendered now if it was not prepared."""
        key = (kind, gzipped)
        with self._lock:
            self._asked[key] = self._monotonic()
            bodies = self._bodies.setdefault(generation, {})
            self._trim()
            found = bodies.get(key)
            if found is None:
                found = bodies[key] = self._build(bodies, kind, gzipped, render)
            return found

    def prepare(self, generation: int, renderers: Mapping[str, Renderer]) -> None:
        """Render every body asked for within `ahead_s` for `generation` (a worker thread calls this)."""
        now = self._monotonic()
        with self._lock:
            wanted = [key for key, at in self._asked.items() if now - at <= self._ahead_s and key[0] in renderers]
        bodies: dict[Key, bytes] = {}
        for kind, gzipped in sorted(wanted):  # plain before gzip: the gzip body compresses it
            try:
                bodies[(kind, gzipped)] = self._build(bodies, kind, gzipped, renderers[kind])
            except KubeletError as exc:  # e.g. the summary's "failed to get rootFs stats": requests report it
                log.debug("%s not rendered ahead: %s", kind, exc)
            except Exception:
                log.exception("rendering %s ahead of requests failed; it is rendered on request", kind)
        with self._lock:
            self._bodies.setdefault(generation, {}).update(bodies)
            self._trim()

    def _trim(self) -> None:
        for old in sorted(self._bodies)[:-KEEP_GENERATIONS]:
            del self._bodies[old]

    @staticmethod
    def _build(bodies: dict[Key, bytes], kind: str, gzipped: bool, render: Renderer) -> bytes:
        plain = bodies.get((kind, False))
        if plain is None:
            plain = bodies[(kind, False)] = render()
        return gzip.compress(plain, GZIP_LEVEL) if gzipped else plain
