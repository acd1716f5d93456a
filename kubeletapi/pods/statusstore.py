"""The status store: the latest status of every pod the syncer has synced (the kubelet's status
manager, as far as a node without an API server needs one).

One writer, the pod syncer (set after each sync, remove once the pod is killed); many readers:
/pods through the pod manager, the prober's workers, the syncer itself (conditions keep their
lastTransitionTime across syncs) and, in apiserver mode, the status sync to the API server.
"""

from __future__ import annotations

from kubeletapi.api.core_v1 import PodStatus


class StatusStore:
    def __init__(self) -> None:
        self._statuses: dict[str, PodStatus] = {}

    def get(self, uid: str) -> PodStatus | None:
        """The pod's latest status (None before its first sync and after it was removed)."""
        return self._statuses.get(uid)

    def set(self, uid: str, status: PodStatus) -> None:
        self._statuses[uid] = status

    def remove(self, uid: str) -> None:
        self._statuses.pop(uid, None)
