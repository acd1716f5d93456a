"""Eviction signals and thresholds, as pkg/kubelet/eviction/api and ParseThresholdConfig have them.

A threshold is `signal < value`: a quantity ("100Mi", "1000" pids) or a percentage of the
signal's capacity ("10%"). Hard thresholds have no grace period; soft ones (evictionSoft) need
one in evictionSoftGracePeriod. evictionMinimumReclaim adds to a met threshold what must be
reclaimed before it counts as resolved. "0%" and "100%" switch a threshold off, as in the kubelet.

The configuration was validated at start (config/startrules.py, the kubelet's messages), so
parsing here cannot meet a malformed statement; it raises InvalidInput with the same words if
one is given anyway (a caller that skipped validation).

Not reproduced: allocatableMemory.available (enforceNodeAllocatable=pods; this agent reports no
pods system container memory limit) and the containerfs.* signals (no separate container
filesystem is observed): both parse, and, without an observation, are never met.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubeletapi.api.quantity import BINARY_SI, Quantity, QuantityError
from kubeletapi.config.durations import Duration
from kubeletapi.config.gosyntax import parse_float32
from kubeletapi.errors import InvalidInput

MEMORY_AVAILABLE = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE = "allocatableMemory.available"
NODEFS_AVAILABLE = "nodefs.available"
NODEFS_INODES_FREE = "nodefs.inodesFree"
IMAGEFS_AVAILABLE = "imagefs.available"
IMAGEFS_INODES_FREE = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE = "containerfs.available"
CONTAINERFS_INODES_FREE = "containerfs.inodesFree"
PID_AVAILABLE = "pid.available"

MEMORY, EPHEMERAL_STORAGE, INODES, PIDS = "memory", "ephemeral-storage", "inodes", "pids"

# signalToResource: what a signal's pressure starves (named in the eviction message).
RESOURCE = {
    MEMORY_AVAILABLE: MEMORY, ALLOCATABLE_MEMORY_AVAILABLE: MEMORY,
    IMAGEFS_AVAILABLE: EPHEMERAL_STORAGE, IMAGEFS_INODES_FREE: INODES,
    CONTAINERFS_AVAILABLE: EPHEMERAL_STORAGE, CONTAINERFS_INODES_FREE: INODES,
    NODEFS_AVAILABLE: EPHEMERAL_STORAGE, NODEFS_INODES_FREE: INODES,
    PID_AVAILABLE: PIDS,
}
MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE = "MemoryPressure", "DiskPressure", "PIDPressure"
# signalToNodeCondition
CONDITION = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE, ALLOCATABLE_MEMORY_AVAILABLE: MEMORY_PRESSURE,
    IMAGEFS_AVAILABLE: DISK_PRESSURE, CONTAINERFS_AVAILABLE: DISK_PRESSURE, NODEFS_AVAILABLE: DISK_PRESSURE,
    IMAGEFS_INODES_FREE: DISK_PRESSURE, NODEFS_INODES_FREE: DISK_PRESSURE, CONTAINERFS_INODES_FREE: DISK_PRESSURE,
    PID_AVAILABLE: PID_PRESSURE,
}

# DefaultEvictionHard (defaults_linux.go); config/model.py applies it to the configuration.
DEFAULT_EVICTION_HARD = {
    MEMORY_AVAILABLE: "100Mi", NODEFS_AVAILABLE: "10%", NODEFS_INODES_FREE: "5%",
    IMAGEFS_AVAILABLE: "15%", IMAGEFS_INODES_FREE: "5%",
}


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


@dataclass(frozen=True)
class ThresholdValue:
    """Exactly one of the two is used: the quantity when set, else the percentage (0..1, a
    float32 as the kubelet keeps it)."""

    quantity: Quantity | None = None
    percentage: float = 0.0

    def amount(self, capacity: int) -> Quantity:
        """GetThresholdQuantity: the quantity, or int64(capacity x percentage) in BinarySI."""
        if self.quantity is not None:
            return self.quantity
        return Quantity.from_int(int(float(capacity) * self.percentage), BINARY_SI)


@dataclass(frozen=True)
class Threshold:
    signal: str
    value: ThresholdValue
    grace_period_s: float = 0.0  # 0: a hard threshold
    min_reclaim: ThresholdValue | None = None

    @property
    def hard(self) -> bool:
        return self.grace_period_s == 0

    def same(self, other: Threshold) -> bool:
        """hasThreshold: same signal, grace period and value (min-reclaim not compared)."""
        return (self.signal, self.grace_period_s, self.value) == (other.signal, other.grace_period_s, other.value)


def _percentage(text: str) -> float:
    """parsePercentage: ParseFloat(32) of the number before '%', over 100."""
    return _float32(parse_float32(text.rstrip("%")) / 100)


def _signal(signal: str) -> None:
    if signal not in RESOURCE:
        raise InvalidInput(f"unsupported eviction signal {signal}")


def parse_statement(signal: str, text: str) -> Threshold | None:
    """parseThresholdStatement: None for 0% and 100% (ignored)."""
    _signal(signal)
    try:
        if text.endswith("%"):
            if text in ("0%", "100%"):
                return None
            percentage = _percentage(text)
            if percentage < 0:
                raise InvalidInput(f"eviction percentage threshold {signal} must be >= 0%: {text}")
            if percentage > 1:
                raise InvalidInput(f"eviction percentage threshold {signal} must be <= 100%: {text}")
            return Threshold(signal, ThresholdValue(percentage=percentage))
        quantity = Quantity.parse(text)
    except QuantityError:
        raise
    except ValueError as exc:
        raise InvalidInput(f"{signal}: {exc}") from exc
    if quantity.sign() <= 0:
        raise InvalidInput(f"eviction threshold {signal} must be positive: {quantity}")
    return Threshold(signal, ThresholdValue(quantity=quantity))


def _min_reclaim(signal: str, text: str) -> ThresholdValue:
    _signal(signal)
    if text.endswith("%"):
        percentage = _percentage(text)
        if percentage <= 0:
            raise InvalidInput(f"eviction percentage minimum reclaim {signal} must be positive: {text}")
        return ThresholdValue(percentage=percentage)
    quantity = Quantity.parse(text)
    if quantity.sign() < 0:
        raise InvalidInput(f"negative eviction minimum reclaim specified for {signal}")
    return ThresholdValue(quantity=quantity)


def _grace(signal: str, text: str) -> float:
    _signal(signal)
    period = Duration.parse(text)
    if period.ns < 0:
        raise InvalidInput(f"invalid eviction grace period specified: {text}, must be a positive value")
    return period.seconds


def parse_thresholds(hard: Mapping[str, str], soft: Mapping[str, str], soft_grace: Mapping[str, str],
                     min_reclaim: Mapping[str, str]) -> list[Threshold]:
    """ParseThresholdConfig: hard thresholds, then soft ones with their grace periods, each with
    its signal's minimum reclaim. Statements in signal order (the kubelet's map order is random)."""
    out = [t for s, v in sorted(hard.items()) if (t := parse_statement(s, v)) is not None]
    graces = {s: _grace(s, v) for s, v in sorted(soft_grace.items())}
    reclaims = {s: _min_reclaim(s, v) for s, v in sorted(min_reclaim.items())}
    for signal, text in sorted(soft.items()):
        found = parse_statement(signal, text)
        if found is None:
            continue
        if signal not in graces:
            raise InvalidInput(f"grace period must be specified for the soft eviction threshold {signal}")
        out.append(Threshold(signal, found.value, graces[signal]))
    return [Threshold(t.signal, t.value, t.grace_period_s, reclaims.get(t.signal)) for t in out]


def merge_thresholds(a: Sequence[Threshold], b: Sequence[Threshold]) -> list[Threshold]:
    """mergeThresholds: `a`, then what of `b` is not already in it."""
    out = list(a)
    for threshold in b:
        if not any(threshold.same(t) for t in out):
            out.append(threshold)
    return out


def by_eviction_priority(thresholds: Sequence[Threshold]) -> list[Threshold]:
    """byEvictionPriority: memory first, then the others in their order (every signal here has
    a resource to reclaim)."""
    memory = (MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE)
    return sorted(thresholds, key=lambda t: t.signal not in memory)
