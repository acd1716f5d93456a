"""Garbage collection of the logs of pods that are gone.

A removed pod's logs stay readable for a while (a last `kubectl logs`, a log shipper catching
up); after `retention_s` without the pod, its <namespace>_<name>_<uid> directory is removed, like
the kubelet's container GC removes the logs of deleted containers.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Collection
from pathlib import Path

from kubeletapi.clock import Clock

log = logging.getLogger(__name__)
RETENTION_S = 60.0


class LogGC:
    def __init__(self, logs_dir: Path, clock: Clock, retention_s: float = RETENTION_S) -> None:
        self._dir = logs_dir
        self._clock = clock
        self._retention = retention_s
        self._gone_since: dict[str, float] = {}

    def collect(self, live_uids: Collection[str]) -> list[Path]:
        """Remove the log directories of pods gone for longer than the retention; return them."""
        now = self._clock.monotonic()
        removed = []
        try:
            entries = list(self._dir.iterdir())
        except OSError:
            return []
        seen = set()
        for entry in entries:
            uid = entry.name.rsplit("_", 1)[-1]
            if not entry.is_dir() or uid in live_uids:
                continue
            seen.add(entry.name)
            since = self._gone_since.setdefault(entry.name, now)
            if now - since >= self._retention:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
                log.info("removed the logs of gone pod %s", entry.name)
        self._gone_since = {k: v for k, v in self._gone_since.items() if k in seen}
        return removed


LiveUids = Callable[[], Collection[str]]
