"""Threshold parsing as the kubelet's ParseThresholdConfig (eviction/helpers.go), with its messages."""

from __future__ import annotations

import pytest

from kubeletapi.api.quantity import Quantity
from kubeletapi.errors import InvalidInput
from kubeletapi.eviction import thresholds as t
from kubeletapi.eviction.thresholds import Threshold, ThresholdValue, parse_thresholds


def q(text: str) -> ThresholdValue:
    return ThresholdValue(quantity=Quantity.parse(text))


@pytest.mark.parametrize(("hard", "soft", "grace", "reclaim", "want"), [
    pytest.param({}, {}, {}, {}, [], id="none"),
    pytest.param(t.DEFAULT_EVICTION_HARD, {}, {}, {}, [
        Threshold(t.IMAGEFS_AVAILABLE, ThresholdValue(percentage=t._float32(0.15))),
        Threshold(t.IMAGEFS_INODES_FREE, ThresholdValue(percentage=t._float32(0.05))),
        Threshold(t.MEMORY_AVAILABLE, q("100Mi")),
        Threshold(t.NODEFS_AVAILABLE, ThresholdValue(percentage=t._float32(0.1))),
        Threshold(t.NODEFS_INODES_FREE, ThresholdValue(percentage=t._float32(0.05))),
    ], id="the-linux-defaults"),
    pytest.param({"memory.available": "0%", "nodefs.available": "100%"}, {}, {}, {}, [], id="0%-and-100%-ignored"),
    pytest.param({}, {"memory.available": "1.5Gi"}, {"memory.available": "1m30s"}, {}, [
        Threshold(t.MEMORY_AVAILABLE, q("1.5Gi"), 90.0)], id="soft-with-grace"),
    pytest.param({"memory.available": "100Mi"}, {}, {}, {"memory.available": "50Mi"}, [
        Threshold(t.MEMORY_AVAILABLE, q("100Mi"), 0.0, q("50Mi"))], id="minimum-reclaim"),
    pytest.param({"pid.available": "10%"}, {}, {}, {"pid.available": "5%"}, [
        Threshold(t.PID_AVAILABLE, ThresholdValue(percentage=t._float32(0.1)), 0.0,
                  ThresholdValue(percentage=t._float32(0.05)))], id="percent-minimum-reclaim"),
])
def test_parse(hard: dict[str, str], soft: dict[str, str], grace: dict[str, str], reclaim: dict[str, str],
               want: list[Threshold]) -> None:
    assert parse_thresholds(hard, soft, grace, reclaim) == want


@pytest.mark.parametrize(("hard", "soft", "grace", "reclaim", "message"), [
    pytest.param({"memory.free": "1Gi"}, {}, {}, {}, "unsupported eviction signal memory.free", id="signal"),
    pytest.param({"memory.available": "-1Gi"}, {}, {}, {}, "eviction threshold memory.available must be positive: -1Gi",
                 id="negative"),
    pytest.param({"memory.available": "0"}, {}, {}, {}, "eviction threshold memory.available must be positive: 0",
                 id="zero"),
    pytest.param({"nodefs.available": "120%"}, {}, {}, {},
                 "eviction percentage threshold nodefs.available must be <= 100%: 120%", id="over-100%"),
    pytest.param({"nodefs.available": "-5%"}, {}, {}, {},
                 "eviction percentage threshold nodefs.available must be >= 0%: -5%", id="under-0%"),
    pytest.param({"memory.available": "100Mee"}, {}, {}, {}, "unable to parse quantity's suffix", id="suffix"),
    pytest.param({}, {"memory.available": "1Gi"}, {}, {},
                 "grace period must be specified for the soft eviction threshold memory.available", id="no-grace"),
    pytest.param({}, {}, {"memory.available": "-1s"}, {},
                 "invalid eviction grace period specified: -1s, must be a positive value", id="negative-grace"),
    pytest.param({}, {}, {}, {"memory.available": "-1Mi"},
                 "negative eviction minimum reclaim specified for memory.available", id="negative-reclaim"),
    pytest.param({}, {}, {}, {"memory.available": "0%"},
                 "eviction percentage minimum reclaim memory.available must be positive: 0%", id="zero-%-reclaim"),
])
def test_malformed(hard: dict[str, str], soft: dict[str, str], grace: dict[str, str], reclaim: dict[str, str],
                   message: str) -> None:
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_thresholds(hard, soft, grace, reclaim)


def test_percentage_quantity_is_float32_times_capacity_in_binary_si() -> None:
    """GetThresholdQuantity: int64(float64(capacity) * float64(float32 percentage)), BinarySI."""
    ten = ThresholdValue(percentage=t._float32(0.1))
    assert ten.amount(10 * 2**30).wire() == str(int(10 * 2**30 * t._float32(0.1)))
    assert q("100Mi").amount(1).wire() == "100Mi"


def test_memory_ranks_first() -> None:
    disk = Threshold(t.NODEFS_AVAILABLE, q("1Gi"))
    memory = Threshold(t.MEMORY_AVAILABLE, q("1Gi"))
    pid = Threshold(t.PID_AVAILABLE, q("10"))
    assert t.by_eviction_priority([disk, pid, memory]) == [memory, disk, pid]
