"""The kubelet feature gates that decide what its configuration checks accept, as of 1.35.

Only the gates kubeletapi's checks (and gated defaults) consult are listed, with their 1.35 default
and whether 1.35 locks them to it (pkg/features/versioned_kube_features.go, component-base logs).
`featureGates` in the configuration turns them on or off, as SetFromMap does; setting a locked gate
to the other value is the kubelet's error. Gates not listed here are accepted as they are: kubeletapi
honours none of them (the kubelet would refuse a name it does not know; see the README).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Gate:
    default: bool
    locked: bool = False


GATES: dict[str, Gate] = {
    "CustomCPUCFSQuotaPeriod": Gate(False),  # alpha since 1.12
    "GracefulNodeShutdown": Gate(True),  # beta since 1.21
    "GracefulNodeShutdownBasedOnPodPriority": Gate(True),  # beta since 1.24
    "ImageMaximumGCAge": Gate(True, locked=True),  # GA in 1.35
    "KubeletCrashLoopBackOffMax": Gate(True),  # beta in 1.35
    "KubeletEnsureSecretPulledImages": Gate(True),  # beta in 1.35
    "LoggingAlphaOptions": Gate(False),
    "LoggingBetaOptions": Gate(True),
    "MemoryQoS": Gate(False),  # alpha since 1.22
    "NodeLogQuery": Gate(False),  # beta (off) since 1.30
    "NodeSwap": Gate(True, locked=True),  # GA in 1.34
    "RotateKubeletServerCertificate": Gate(True),  # beta since 1.12
    "TopologyManagerPolicyOptions": Gate(True),  # GA (not locked) since 1.32
}


class FeatureGates:
    """The gates in effect: 1.35's defaults with the configuration's featureGates applied."""

    def __init__(self, overrides: Mapping[str, bool]) -> None:
        self._overrides = dict(overrides)

    def enabled(self, name: str) -> bool:
        if name in self._overrides and not GATES[name].locked:
            return self._overrides[name]
        return GATES[name].default

    def problems(self) -> list[str]:
        """SetFromMap's errors: a locked gate set to the value it is not locked to."""
        return [
            f"cannot set feature gate {name} to {_go_bool(value)}, feature is locked to {_go_bool(GATES[name].default)}"
            for name, value in sorted(self._overrides.items())
            if name in GATES and GATES[name].locked and value != GATES[name].default
        ]


def default_enabled(name: str, overrides: object) -> bool:
    """Whether `name` is on for a featureGates value not yet decoded (for gated defaults)."""
    if isinstance(overrides, Mapping) and isinstance(overrides.get(name), bool) and not GATES[name].locked:
        return bool(overrides[name])
    return GATES[name].default


def _go_bool(value: bool) -> str:
    return "true" if value else "false"
