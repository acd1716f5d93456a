"""kubelet_evictions and kubelet_eviction_stats_age_seconds as the kubelet writes them."""

from __future__ import annotations

from kubeletapi.metrics.eviction import EvictionMetrics
from kubeletapi.metrics.exposition import render_registry
from kubeletapi.metrics.spec import new_registry


def test_nothing_before_the_first_eviction_then_the_kubelets_families() -> None:
    registry = new_registry()
    metrics = EvictionMetrics()
    registry.register(metrics)
    assert render_registry(registry) == b""  # component-base vecs: no lines without a child
    metrics.stats_age("memory.available", 0.5)  # on a bucket bound: counted in it (le is inclusive)
    metrics.stats_age("memory.available", 12)
    metrics.evicted("memory.available")
    metrics.evicted("memory.available")
    metrics.evicted("pid.available")
    text = render_registry(registry).decode()
    assert "# TYPE kubelet_evictions counter\n" in text and "kubelet_evictions_total" not in text
    assert 'kubelet_evictions{eviction_signal="memory.available"} 2\n' in text
    assert 'kubelet_evictions{eviction_signal="pid.available"} 1\n' in text
    age = "kubelet_eviction_stats_age_seconds"
    assert f'{age}_bucket{{eviction_signal="memory.available",le="0.25"}} 0\n' in text
    assert f'{age}_bucket{{eviction_signal="memory.available",le="0.5"}} 1\n' in text
    assert f'{age}_bucket{{eviction_signal="memory.available",le="10"}} 1\n' in text
    assert f'{age}_bucket{{eviction_signal="memory.available",le="+Inf"}} 2\n' in text
    assert f'{age}_sum{{eviction_signal="memory.available"}} 12.5\n' in text
    assert f'{age}_count{{eviction_signal="memory.available"}} 2\n' in text
