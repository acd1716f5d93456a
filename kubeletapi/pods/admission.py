"""Pod admission handlers, as the kubelet's lifecycle.PodAdmitHandler: each new pod is offered to
every handler in turn before it gets a worker; the first refusal fails it (phase Failed, the
handler's reason and message, a Warning event), like the OutOfpods check the manager makes itself.

A pod is asked about once: an admitted pod is never re-judged (pressure that starts later evicts,
it does not un-admit), and a refused pod stays refused while its source keeps it. Handlers are
the eviction manager (no BestEffort pods under memory pressure, none under disk pressure) and
the memory manager (a Guaranteed pod that cannot fit); the composition root passes them in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeletapi.api.core_v1 import Pod


@dataclass(frozen=True)
class Refusal:
    reason: str  # the Failed pod's status.reason, e.g. "Evicted", "UnexpectedAdmissionError"
    message: str  # its status.message (after the "Pod was rejected: " prefix) and the event's


class PodAdmitHandler(Protocol):
    def admit(self, pod: Pod, admitted: Sequence[Pod]) -> Refusal | None:
        """None admits `pod`; `admitted`: the pods admitted so far (the node's other pods)."""
