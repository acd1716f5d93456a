"""The status store: the latest status of every pod the syncer has synced (the kubelet's status
manager, as far as the node itself needs one).

One writer, the pod syncer (set after each sync and a final status when the pod is killed; the
pod manager removes it once done with the pod); many readers: /pods through the pod manager, the
prober's workers, the syncer itself (conditions keep their lastTransitionTime across syncs) and,
in apiserver mode, the status sync to the API server, which subscribes to changes.
"""

from __future__ import annotations

from collections.abc import Callable

from kubeletapi.api.core_v1 import PodStatus


class StatusStore:
    def __init__(self) -> None:
        self._statuses: dict[str, PodStatus] = {}
        self._listeners: list[Callable[[], None]] = []

    def get(self, uid: str) -> PodStatus | None:
        """The pod's latest status (None before its first sync and after it was removed)."""
        return self._statuses.get(uid)

    def set(self, uid: str, status: PodStatus) -> None:
        if self._statuses.get(uid) != status:
            self._statuses[uid] = status
            for listener in self._listeners:
                listener()

    def remove(self, uid: str) -> None:
        self._statuses.pop(uid, None)

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call `listener` (cheap, synchronous) whenever a status changes."""
        self._listeners.append(listener)
