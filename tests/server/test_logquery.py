"""/containerLogs query values decoded and validated as the kubelet's handler does it (400 vs 422)."""

from __future__ import annotations

import pytest

from kubeletapi.errors import InvalidInput
from kubeletapi.runtime.logoptions import ZERO_TIME_NS, PodLogOptions, PodLogOptionsError
from kubeletapi.server.logquery import INVALID_BODY, UNDECODABLE_BODY, decode_pod_log_options

T0 = 1795251833 * 10**9  # 2026-11-21T09:03:53Z


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({}, PodLogOptions(), id="empty"),
        pytest.param({"follow": "true"}, PodLogOptions(follow=True), id="follow-true"),
        pytest.param({"follow": "1"}, PodLogOptions(follow=True), id="follow-1"),
        pytest.param({"follow": "TRUE"}, PodLogOptions(follow=True), id="follow-TRUE"),
        # apimachinery Convert_Slice_string_To_bool: only "0" and "false" (any case) are false.
        pytest.param({"follow": ""}, PodLogOptions(follow=True), id="follow-empty-is-true"),
        pytest.param({"follow": "no"}, PodLogOptions(follow=True), id="follow-no-is-true"),
        pytest.param({"follow": "f"}, PodLogOptions(follow=True), id="follow-f-is-true"),
        pytest.param({"follow": "FaLsE"}, PodLogOptions(), id="follow-FaLsE"),
        pytest.param({"follow": "0"}, PodLogOptions(), id="follow-0"),
        pytest.param({"follow": ["false", "true"]}, PodLogOptions(), id="first-value-wins"),
        pytest.param({"previous": "true"}, PodLogOptions(previous=True), id="previous"),
        pytest.param({"timestamps": "1"}, PodLogOptions(timestamps=True), id="timestamps"),
        pytest.param(
            {"insecureSkipTLSVerifyBackend": "true"},
            PodLogOptions(insecure_skip_tls_verify_backend=True),
            id="insecure-skip-accepted",
        ),
        pytest.param({"sinceSeconds": "10"}, PodLogOptions(since_seconds=10), id="since-seconds"),
        pytest.param({"sinceTime": "2026-11-21T09:03:53Z"}, PodLogOptions(since_time=T0), id="since-time"),
        pytest.param(
            {"sinceTime": "2026-11-21T11:03:53.5+02:00"},
            PodLogOptions(since_time=T0 + 500_000_000),
            id="since-time-offset-fraction",
        ),
        pytest.param({"sinceTime": ""}, PodLogOptions(since_time=ZERO_TIME_NS), id="since-time-empty-is-zero"),
        pytest.param({"sinceTime": "null"}, PodLogOptions(since_time=ZERO_TIME_NS), id="since-time-null"),
        pytest.param({"tailLines": "0"}, PodLogOptions(tail_lines=0), id="tail-lines-0"),
        pytest.param({"tailLines": "+5"}, PodLogOptions(tail_lines=5), id="tail-lines-plus-sign"),
        pytest.param({"tailLines": ["5", "x"]}, PodLogOptions(tail_lines=5), id="tail-lines-first-value"),
        pytest.param({"limitBytes": "1"}, PodLogOptions(limit_bytes=1), id="limit-bytes"),
        pytest.param({"tail": "7"}, PodLogOptions(tail_lines=7), id="legacy-tail"),
        pytest.param({"tail": "7", "tailLines": "3"}, PodLogOptions(tail_lines=7), id="legacy-tail-wins"),
        pytest.param({"tail": "all", "tailLines": "3"}, PodLogOptions(), id="legacy-tail-all-drops-tail-lines"),
        pytest.param({"tail": "", "tailLines": "3"}, PodLogOptions(tail_lines=3), id="legacy-tail-empty-ignored"),
        pytest.param({"tail": ["all", "5"]}, PodLogOptions(), id="legacy-tail-first-value"),
        pytest.param({"stream": "All"}, PodLogOptions(stream="All"), id="stream-all"),
        pytest.param({"stream": "Stdout"}, PodLogOptions(stream="Stdout"), id="stream-stdout-decodes"),
        pytest.param({"unknown": "x", "TailLines": "-1"}, PodLogOptions(), id="unknown-keys-ignored"),
        pytest.param([("follow", "true"), ("tailLines", "2")], PodLogOptions(follow=True, tail_lines=2), id="pairs"),
    ],
)
def test_decode(query: object, expected: PodLogOptions) -> None:
    assert decode_pod_log_options(query) == expected  # type: ignore[arg-type]


def test_split_streams_gate_defaults_stream_to_all() -> None:
    assert decode_pod_log_options({}, split_streams=True).stream == "All"
    assert decode_pod_log_options({"stream": "Stderr"}, split_streams=True).stream == "Stderr"


@pytest.mark.parametrize(
    "query",
    [
        pytest.param({"sinceSeconds": "abc"}, id="since-seconds-word"),
        pytest.param({"tailLines": ""}, id="tail-lines-empty"),
        pytest.param({"tailLines": " 5"}, id="tail-lines-space"),
        pytest.param({"tailLines": "1_000"}, id="tail-lines-underscore"),
        pytest.param({"tailLines": "\u0663"}, id="tail-lines-non-ascii-digit"),
        pytest.param({"limitBytes": "1.5"}, id="limit-bytes-float"),
        pytest.param({"limitBytes": "9223372036854775808"}, id="limit-bytes-overflow"),
        pytest.param({"tail": "ten"}, id="legacy-tail-word"),
        pytest.param({"sinceTime": "yesterday"}, id="since-time-word"),
        pytest.param({"sinceTime": "2026-11-21 09:03:53Z"}, id="since-time-space"),
        pytest.param({"sinceTime": "2026-11-21t09:03:53z"}, id="since-time-lowercase"),
        pytest.param({"sinceTime": "2026-02-30T00:00:00Z"}, id="since-time-bad-day"),
        pytest.param({"sinceTime": "2026-11-21T09:03:53"}, id="since-time-no-zone"),
        pytest.param({"sinceTime": "1795251833"}, id="since-time-epoch"),
        pytest.param({"tailLines": "-1", "sinceSeconds": "x"}, id="decode-error-before-validation"),
    ],
)
def test_undecodable_is_400(query: dict[str, str]) -> None:
    with pytest.raises(PodLogOptionsError) as err:
        decode_pod_log_options(query)
    assert (err.value.status, err.value.body) == (400, UNDECODABLE_BODY)
    assert isinstance(err.value, InvalidInput)


@pytest.mark.parametrize(
    ("query", "split_streams"),
    [
        pytest.param({"tailLines": "-1"}, False, id="negative-tail-lines"),
        pytest.param({"tail": "-1"}, False, id="negative-legacy-tail"),
        pytest.param({"limitBytes": "0"}, False, id="limit-bytes-0"),
        pytest.param({"limitBytes": "-5"}, False, id="limit-bytes-negative"),
        pytest.param({"sinceSeconds": "0"}, False, id="since-seconds-0"),
        pytest.param({"sinceSeconds": "-3"}, False, id="since-seconds-negative"),
        pytest.param({"sinceSeconds": "5", "sinceTime": "2026-11-21T09:03:53Z"}, False, id="since-both"),
        pytest.param({"sinceSeconds": "5", "sinceTime": ""}, False, id="since-both-empty-time-is-set"),
        pytest.param({"stream": "stdout"}, False, id="stream-lowercase"),
        pytest.param({"stream": ""}, False, id="stream-empty"),
        pytest.param({"stream": "Stdout", "tailLines": "1"}, False, id="stream-with-tail-lines"),
        pytest.param({"stream": "Stderr", "tail": "3"}, True, id="stream-with-legacy-tail-gate-on"),
        pytest.param({"stream": "Bogus"}, True, id="stream-bogus-gate-on"),
    ],
)
def test_invalid_is_422(query: dict[str, str], split_streams: bool) -> None:
    with pytest.raises(PodLogOptionsError) as err:
        decode_pod_log_options(query, split_streams=split_streams)
    assert (err.value.status, err.value.body) == (422, INVALID_BODY)


def test_bodies_are_the_kubelets() -> None:
    assert UNDECODABLE_BODY == '{"message": "Unable to decode query."}'
    assert INVALID_BODY == '{"message": "Invalid request."}'
