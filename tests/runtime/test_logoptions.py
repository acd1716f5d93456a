"""PodLogOptions below the HTTP layer: the stream gate's 400, the reader's options, Go's zero time.

The query decoding (400 vs 422) is tested in tests/server/test_logquery.py."""

from __future__ import annotations

import pytest

from kubeletapi.runtime.logoptions import (
    STDERR,
    STDOUT,
    ZERO_TIME_NS,
    PodLogOptions,
    PodLogOptionsError,
    ReadOptions,
    parse_timestamp,
    require_stream_supported,
)

T0 = 1795251833 * 10**9  # 2026-11-21T09:03:53Z


@pytest.mark.parametrize(
    ("stream", "split_streams", "rejected"),
    [
        pytest.param(None, False, False, id="absent"),
        pytest.param("All", False, False, id="all"),
        pytest.param("Stdout", False, True, id="stdout-gate-off"),
        pytest.param("Stderr", False, True, id="stderr-gate-off"),
        pytest.param("Stdout", True, False, id="stdout-gate-on"),
    ],
)
def test_require_stream_supported(stream: str | None, split_streams: bool, rejected: bool) -> None:
    opts = PodLogOptions(stream=stream)
    if not rejected:
        require_stream_supported(opts, split_streams=split_streams)
        return
    with pytest.raises(PodLogOptionsError) as err:
        require_stream_supported(opts, split_streams=split_streams)
    assert err.value.status == 400
    assert err.value.body == (
        f'unable to return the given log stream: "{stream}". '
        "Please enable PodLogsQuerySplitStreams feature gate in kubelet"
    )


@pytest.mark.parametrize(
    ("opts", "expected"),
    [
        pytest.param(PodLogOptions(), ReadOptions(), id="defaults"),
        pytest.param(
            PodLogOptions(follow=True, timestamps=True, tail_lines=3, limit_bytes=9),
            ReadOptions(tail=3, limit_bytes=9, follow=True, timestamps=True),
            id="plain-fields",
        ),
        pytest.param(PodLogOptions(since_seconds=60), ReadOptions(since=T0 - 60 * 10**9), id="since-seconds"),
        pytest.param(PodLogOptions(since_time=T0 - 5), ReadOptions(since=T0 - 5), id="since-time"),
        pytest.param(PodLogOptions(stream="Stdout"), ReadOptions(streams=frozenset({STDOUT})), id="stdout"),
        pytest.param(PodLogOptions(stream="Stderr"), ReadOptions(streams=frozenset({STDERR})), id="stderr"),
        pytest.param(PodLogOptions(stream="All"), ReadOptions(), id="all"),
    ],
)
def test_read_options(opts: PodLogOptions, expected: ReadOptions) -> None:
    assert ReadOptions.from_pod_log_options(opts, T0) == expected


def test_zero_time_is_gos() -> None:
    assert parse_timestamp("0001-01-01T00:00:00Z") == ZERO_TIME_NS
