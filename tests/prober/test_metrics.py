"""/metrics/probes families: names, labels, help texts, which runs count, series removal."""

from __future__ import annotations

from prometheus_client import generate_latest

from kubeletapi.metrics.probes import ProbeMetrics
from kubeletapi.metrics.spec import new_registry
from kubeletapi.prober.results import ProbeKey, ProbeRecord, ProbeType, Result

LIVE = ProbeKey("u1", "ns", "p", "c", ProbeType.LIVENESS)
READY = ProbeKey("u1", "ns", "p", "c", ProbeType.READINESS)


def record(key: ProbeKey, result: Result, duration: float = 0.02) -> ProbeRecord:
    return ProbeRecord(key, result, "", 0.0, 0.0, duration)


def test_counts_durations_and_removal() -> None:
    registry = new_registry()
    metrics = ProbeMetrics(registry, 1700000000.5)
    for result in (Result.SUCCESS, Result.SUCCESS, Result.FAILURE, Result.UNKNOWN):
        metrics.probe_finished(record(LIVE, result))
    metrics.probe_finished(record(READY, Result.FAILURE))
    text = generate_latest(registry).decode()
    labels = 'container="c",namespace="ns",pod="p",pod_uid="u1"'
    assert "# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a " \
           "container by result.\n# TYPE prober_probe_total counter\n" in text
    assert f'prober_probe_total{{{labels},probe_type="Liveness",result="successful"}} 2.0' in text
    assert f'prober_probe_total{{{labels},probe_type="Liveness",result="failed"}} 1.0' in text
    assert f'prober_probe_total{{{labels},probe_type="Liveness",result="unknown"}} 1.0' in text
    assert f'prober_probe_total{{{labels},probe_type="Readiness",result="failed"}} 1.0' in text
    assert "# HELP prober_probe_duration_seconds [ALPHA] Duration in seconds for a probe response." in text
    # successful and unknown runs are timed, failed ones are not (as the kubelet's worker)
    assert 'prober_probe_duration_seconds_count{container="c",namespace="ns",pod="p",probe_type="Liveness"} 3.0' in text
    assert 'probe_type="Readiness"' not in text.split("prober_probe_duration_seconds", 1)[1]
    assert 'le="0.025"' in text and 'le="10.0"' in text
    assert "process_start_time_seconds 1.7000000005e+09" in text

    metrics.worker_stopped(LIVE)
    text = generate_latest(registry).decode()
    assert 'probe_type="Liveness"' not in text
    assert 'probe_type="Readiness",result="failed"} 1.0' in text
    metrics.worker_stopped(LIVE)  # twice: nothing left to remove, no error
