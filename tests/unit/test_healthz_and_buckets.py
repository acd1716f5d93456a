"""The healthz body format and the kubelet_http_* path buckets."""

from __future__ import annotations

import pytest

from kubeletapi.clock import FakeClock
from kubeletapi.health import LogFlushMonitor, PingCheck, SyncLoopCheck
from kubeletapi.server.instrumentation import (
    AUTH_NOT_REQUIRED_BUCKETS,
    DEBUGGING_BUCKETS,
    path_bucket,
)
from kubeletapi.server.routes.healthz import render


class Failing:
    name = "syncloop"

    def check(self) -> str | None:
        return "sync Loop took longer than expected"


CHECKS = [PingCheck(), PingCheck("log"), Failing()]


@pytest.mark.parametrize(
    ("checks", "verbose", "exclude", "status", "body"),
    [
        pytest.param(CHECKS[:2], False, [], 200, "ok", id="ok"),
        pytest.param(CHECKS[:2], True, [], 200, "[+]ping ok\n[+]log ok\nhealthz check passed\n", id="verbose"),
        pytest.param(CHECKS, False, [], 500,
                     "[+]ping ok\n[+]log ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n",
                     id="failing"),
        pytest.param(CHECKS, True, ["syncloop"], 200,
                     "[+]ping ok\n[+]log ok\n[+]syncloop excluded: ok\nhealthz check passed\n", id="excluded"),
        pytest.param(CHECKS[:2], True, ["nope", "bar"], 200,
                     '[+]ping ok\n[+]log ok\nwarn: some health checks cannot be excluded: no matches for "bar","nope"\n'
                     "healthz check passed\n", id="unknown-exclude"),
        pytest.param(CHECKS[:2], False, ["nope"], 200, "ok", id="unknown-exclude-quiet"),
    ],
)
def test_render(checks, verbose, exclude, status, body) -> None:  # type: ignore[no-untyped-def]
    assert render(checks, verbose, exclude) == (status, body)


def test_syncloop_threshold() -> None:
    clock = FakeClock()
    entry = [0.0]
    check = SyncLoopCheck(clock, sync_frequency_s=60, last_entry=lambda: entry[0])
    assert check.check() is None  # not entered yet
    entry[0] = clock.monotonic()
    clock.advance(300)
    assert check.check() is None
    clock.advance(1)
    assert check.check() == "sync Loop took longer than expected"
    long = SyncLoopCheck(clock, sync_frequency_s=600, last_entry=lambda: entry[0])
    assert long.check() is None  # 2 x syncFrequency = 1200 s


def test_log_check() -> None:
    clock = FakeClock()
    monitor = LogFlushMonitor(clock, period_s=60)
    clock.advance(119)
    assert monitor.check() is None
    clock.advance(1)
    assert monitor.check() == "logging blocked"
    monitor.flush_once()
    assert monitor.check() is None


BUCKETS = frozenset(AUTH_NOT_REQUIRED_BUCKETS + DEBUGGING_BUCKETS)


@pytest.mark.parametrize(
    ("path", "bucket"),
    [
        ("/metrics", "metrics"), ("/metrics/cadvisor", "metrics/cadvisor"), ("/metrics/cadvisor/x", "metrics/cadvisor"),
        ("/metrics/", "other"), ("/metrics/slis", "other"), ("/stats/summary", "stats"), ("/healthz/ping", "healthz"),
        ("/", "other"), ("/foo", "other"), ("/portForward/ns/p", "portForward"), ("/configz", "configz"),
        ("/debug/pprof/heap", "debug"),
    ],
)
def test_path_bucket(path: str, bucket: str) -> None:
    assert path_bucket(path, BUCKETS) == bucket


def test_syncloop_conditions_come_first() -> None:
    clock = FakeClock()
    reasons: list[str | None] = ["pod sources not read yet: file", None]
    check = SyncLoopCheck(clock, 60, lambda: 0.0, [lambda: reasons[0], lambda: reasons[1]])
    assert check.check() == "pod sources not read yet: file"
    reasons[0] = None
    assert check.check() is None
    reasons[1] = "the event loop has been blocked for 3.0s"
    assert check.check() == "the event loop has been blocked for 3.0s"
