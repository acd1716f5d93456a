"""kubeletapi_influxdb_* on /metrics: names, types, labels and values from the sink's counts."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubeletapi.metrics.sinks import SinkCollector
from kubeletapi.metrics.spec import new_registry
from kubeletapi.sinks.sink import SinkCounts


def test_counts_become_the_influxdb_families() -> None:
    counts = SinkCounts(written=10, retried=4, dropped_buffer_full=3, dropped_rejected=2, buffered=7)
    registry = new_registry()
    registry.register(SinkCollector(lambda: counts))
    text = generate_latest(registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert {name: f.type for name, f in families.items()} == {
        "kubeletapi_influxdb_points_written": "counter", "kubeletapi_influxdb_points_retried": "counter",
        "kubeletapi_influxdb_points_dropped": "counter", "kubeletapi_influxdb_buffered_points": "gauge"}
    samples = {(s.name, tuple(s.labels.items())): s.value for f in families.values() for s in f.samples}
    assert samples == {
        ("kubeletapi_influxdb_points_written_total", ()): 10,
        ("kubeletapi_influxdb_points_retried_total", ()): 4,
        ("kubeletapi_influxdb_points_dropped_total", (("reason", "buffer_full"),)): 3,
        ("kubeletapi_influxdb_points_dropped_total", (("reason", "rejected"),)): 2,
        ("kubeletapi_influxdb_buffered_points", ()): 7,
    }
    assert all(f.documentation.startswith("[ALPHA] ") for f in families.values())


def test_a_failing_count_never_fails_the_scrape() -> None:
    def broken() -> SinkCounts:
        raise RuntimeError("boom")

    registry = new_registry()
    registry.register(SinkCollector(broken))
    assert b"kubeletapi_influxdb" not in generate_latest(registry)
