"""kubeletapi_events_* on /metrics: names, types, labels and values from the recorder's counts."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from kubeletapi.events.recorder import EventCounts
from kubeletapi.metrics.events import EventsCollector
from kubeletapi.metrics.spec import new_registry


def test_counts_become_the_events_families() -> None:
    counts = EventCounts(sent=9, filtered=5, dropped_queue_full=4, dropped_retries=3, dropped_rejected=2, queued=1)
    registry = new_registry()
    registry.register(EventsCollector(lambda: counts))
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    assert {name: f.type for name, f in families.items()} == {
        "kubeletapi_events_sent": "counter", "kubeletapi_events_dropped": "counter",
        "kubeletapi_events_queued": "gauge"}
    samples = {(s.name, tuple(s.labels.items())): s.value for f in families.values() for s in f.samples}
    assert samples == {
        ("kubeletapi_events_sent_total", ()): 9,
        ("kubeletapi_events_dropped_total", (("reason", "spam_filter"),)): 5,
        ("kubeletapi_events_dropped_total", (("reason", "queue_full"),)): 4,
        ("kubeletapi_events_dropped_total", (("reason", "retries"),)): 3,
        ("kubeletapi_events_dropped_total", (("reason", "rejected"),)): 2,
        ("kubeletapi_events_queued", ()): 1,
    }


def test_a_failing_count_never_fails_the_scrape() -> None:
    def broken() -> EventCounts:
        raise RuntimeError("boom")

    registry = new_registry()
    registry.register(EventsCollector(broken))
    assert b"kubeletapi_events" not in generate_latest(registry)
