"""kubelet_volume_metric_collection_duration_seconds{metric_source="du"}: each volume's walk is
timed (on the cache's injected monotonic clock), on a refresh and for a new pod's volumes alike,
and a volume measured already is not walked again by add_new."""

from __future__ import annotations

from pathlib import Path

from kubeletapi.metrics.pods import VolumeStatMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.stats.hostfs import OsHostFs, VolumeUsageCache


class SteppingClock:
    """Moves 0.25 s each time it is read: each walk (two reads) takes 0.25 s by this clock."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        self.t += 0.25
        return self.t


def test_each_volume_walk_is_timed(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for volume in (a, b):
        volume.mkdir()
        (volume / "f").write_bytes(b"x" * 5000)
    registry = new_registry()
    cache = VolumeUsageCache(monotonic=SteppingClock())
    fs = OsHostFs(Path("/proc"), lambda: 0)
    cache.add_new([a], fs)  # no observer yet: not timed
    cache.observe(VolumeStatMetrics(registry))
    cache.add_new([a, b], fs)  # only b is new
    usage = cache.get(b)
    assert usage is not None and usage.used >= 4096
    assert registry.get_sample_value("kubelet_volume_metric_collection_duration_seconds_count",
                                     {"metric_source": "du"}) == 1
    cache.refresh([a, b, tmp_path / "gone"], fs)  # a missing volume is timed too (the kubelet's du fails)
    labels = {"metric_source": "du"}
    assert registry.get_sample_value("kubelet_volume_metric_collection_duration_seconds_count", labels) == 4
    assert registry.get_sample_value("kubelet_volume_metric_collection_duration_seconds_sum", labels) == 1.0
    assert registry.get_sample_value("kubelet_volume_metric_collection_duration_seconds_bucket",
                                     {**labels, "le": "0.25"}) == 4
