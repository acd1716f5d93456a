"""/containerLogs query values decoded into PodLogOptions the way the kubelet's handler does it.

Upstream path (pkg/kubelet/server/server.go getContainerLogs, then
pkg/apis/core/v1/validation ValidatePodLogOptions):
1. the legacy `tail` parameter (its first value, when non-empty) replaces `tailLines`; `tail=all`
   deletes `tailLines` altogether, even one given explicitly;
2. url.Values -> v1.PodLogOptions conversion (generated, apimachinery runtime/conversion.go): every
   key takes its FIRST value only; bools are true unless the value is "0" or "false" (any case), so
   `follow=` and `follow=no` mean true (this is not strconv.ParseBool); integers go through
   strconv.ParseInt (base 10, optional sign, no spaces, int64 range; `tailLines=` is an error);
   `sinceTime` is RFC3339, and "" or "null" decode to a set-but-zero time. Failure -> 400
   UNDECODABLE_BODY;
3. with the PodLogsQuerySplitStreams gate an absent `stream` defaults to All;
4. validation -> 422 INVALID_BODY: tailLines < 0, limitBytes < 1, sinceSeconds with sinceTime,
   sinceSeconds < 1, stream not in All|Stdout|Stderr, a specific stream together with tailLines;
5. only after the pod and container lookups (404s), a stream other than All without the gate is
   a 400 with a plain-text reason: runtime.logoptions.require_stream_supported, called by the host.

The options themselves (PodLogOptions, PodLogOptionsError, the Go time formats) live in
runtime.logoptions, below this layer, where the log reader uses them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from kubeletapi.errors import InvalidInput
from kubeletapi.runtime.logoptions import (
    LOG_STREAM_ALL,
    VALID_LOG_STREAMS,
    ZERO_TIME_NS,
    PodLogOptions,
    PodLogOptionsError,
    parse_timestamp,
)

UNDECODABLE_BODY = '{"message": "Unable to decode query."}'
INVALID_BODY = '{"message": "Invalid request."}'

_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _Undecodable(Exception):
    pass


QueryValues = Mapping[str, str | Sequence[str]] | Iterable[tuple[str, str]]


def _multidict(query: QueryValues) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    if isinstance(query, Mapping):
        for key, value in query.items():
            values[key] = [value] if isinstance(value, str) else list(value)
    else:
        for key, value in query:
            values.setdefault(key, []).append(value)
    return {key: value for key, value in values.items() if value}


def _first(values: dict[str, list[str]], key: str) -> str | None:
    found = values.get(key)
    return found[0] if found else None


def _bool(values: dict[str, list[str]], key: str) -> bool:
    text = _first(values, key)
    return text is not None and text != "0" and text.casefold() != "false"


def _int64(values: dict[str, list[str]], key: str) -> int | None:
    text = _first(values, key)
    if text is None:
        return None
    if _INT_RE.fullmatch(text) is None:
        raise _Undecodable(f'{key}: strconv.ParseInt: parsing "{text}": invalid syntax')
    number = int(text)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise _Undecodable(f'{key}: strconv.ParseInt: parsing "{text}": value out of range')
    return number


def _time(values: dict[str, list[str]], key: str) -> int | None:
    text = _first(values, key)
    if text is None:
        return None
    if text in ("", "null"):  # metav1.Time.UnmarshalQueryParameter: a zero time, but set
        return ZERO_TIME_NS
    try:
        return parse_timestamp(text)
    except InvalidInput as exc:
        raise _Undecodable(f"{key}: {exc}") from exc


def _decode(values: dict[str, list[str]]) -> PodLogOptions:
    return PodLogOptions(
        follow=_bool(values, "follow"),
        previous=_bool(values, "previous"),
        timestamps=_bool(values, "timestamps"),
        since_seconds=_int64(values, "sinceSeconds"),
        since_time=_time(values, "sinceTime"),
        tail_lines=_int64(values, "tailLines"),
        limit_bytes=_int64(values, "limitBytes"),
        insecure_skip_tls_verify_backend=_bool(values, "insecureSkipTLSVerifyBackend"),
        stream=_first(values, "stream"),
    )


def validate_pod_log_options(opts: PodLogOptions) -> list[str]:
    """ValidatePodLogOptions: the list of problems (empty when valid)."""
    problems: list[str] = []
    if opts.tail_lines is not None and opts.tail_lines < 0:
        problems.append(f"tailLines: Invalid value: {opts.tail_lines}: must be greater than or equal to 0")
    if opts.limit_bytes is not None and opts.limit_bytes < 1:
        problems.append(f"limitBytes: Invalid value: {opts.limit_bytes}: must be greater than 0")
    if opts.since_seconds is not None and opts.since_time is not None:
        problems.append("Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified")
    elif opts.since_seconds is not None and opts.since_seconds < 1:
        problems.append(f"sinceSeconds: Invalid value: {opts.since_seconds}: must be greater than 0")
    if opts.stream is not None:
        if opts.stream not in VALID_LOG_STREAMS:
            problems.append(f'stream: Unsupported value: "{opts.stream}"')
        if opts.stream != LOG_STREAM_ALL and opts.tail_lines is not None:
            problems.append("Forbidden: `tailLines` and specific `stream` are mutually exclusive for now")
    return problems


def decode_pod_log_options(query: QueryValues, *, split_streams: bool = False) -> PodLogOptions:
    """Decode and validate /containerLogs query values; raise PodLogOptionsError (400 or 422).

    `query` is a multi-dict ({key: [values]}, {key: value}) or (key, value) pairs in URL order;
    a bare `?follow` must arrive as the value "". `split_streams` is the PodLogsQuerySplitStreams
    feature gate.
    """
    values = _multidict(query)
    tail = _first(values, "tail")
    if tail:
        if tail == "all":
            values.pop("tailLines", None)
        else:
            values["tailLines"] = [tail]
    try:
        opts = _decode(values)
    except _Undecodable as exc:
        raise PodLogOptionsError(400, UNDECODABLE_BODY, str(exc)) from exc
    if split_streams and opts.stream is None:
        opts = replace(opts, stream=LOG_STREAM_ALL)
    problems = validate_pod_log_options(opts)
    if problems:
        raise PodLogOptionsError(422, INVALID_BODY, "; ".join(problems))
    return opts
