"""PodLogOptions decoded from query values the way the kubelet's /containerLogs handler does it.

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
   a 400 with a plain-text reason: see require_stream_supported.

Also home of the Go time formats (RFC3339 parsing, RFC3339Nano formatting) and of ReadOptions, the
kubelet's internal LogOptions (kuberuntime/logs NewLogOptions), both used by logs.py.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput

UNDECODABLE_BODY = '{"message": "Unable to decode query."}'
INVALID_BODY = '{"message": "Invalid request."}'

LOG_STREAM_ALL = "All"
LOG_STREAM_STDOUT = "Stdout"
LOG_STREAM_STDERR = "Stderr"
VALID_LOG_STREAMS = frozenset({LOG_STREAM_ALL, LOG_STREAM_STDOUT, LOG_STREAM_STDERR})
STDOUT, STDERR = "stdout", "stderr"  # the CRI stream names in log records

NS_PER_SECOND = 1_000_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Go's zero time.Time (0001-01-01T00:00:00Z): what `sinceTime=` and `sinceTime=null` decode to.
ZERO_TIME_NS = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // timedelta(seconds=1) * NS_PER_SECOND

# RFC3339 as Go's time.Parse reads it: a fraction (period or comma, any number of digits, only the
# first nine count) is accepted even though the layout has none; "T" and "Z" are upper case only.
_TIME_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:[.,]([0-9]+))?(?:Z|([+-])([0-9]{2}):([0-9]{2}))"
)
_INT_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_timestamp_offset(text: str | bytes) -> tuple[int, int]:
    """Parse RFC3339/RFC3339Nano; return (nanoseconds since the epoch, UTC offset in seconds)."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")  # never fails; anything non-ASCII then fails the match
    m = _TIME_RE.fullmatch(text)
    if m is None:
        raise InvalidInput(f"cannot parse {text!r} as an RFC3339 time")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:
        raise InvalidInput(f"cannot parse {text!r} as an RFC3339 time: {exc}") from exc
    offset = 0
    if m.group(8):
        hours, minutes = int(m.group(9)), int(m.group(10))
        if hours > 23 or minutes > 59:
            raise InvalidInput(f"cannot parse {text!r} as an RFC3339 time: zone offset out of range")
        offset = (hours * 3600 + minutes * 60) * (-1 if m.group(8) == "-" else 1)
    fraction = m.group(7) or ""
    nanos = int(fraction[:9].ljust(9, "0")) if fraction else 0
    seconds = (moment - _EPOCH) // timedelta(seconds=1) - offset
    return seconds * NS_PER_SECOND + nanos, offset


def parse_timestamp(text: str | bytes) -> int:
    """Parse RFC3339/RFC3339Nano (Z or a +hh:mm/-hh:mm offset) to nanoseconds since the epoch."""
    return parse_timestamp_offset(text)[0]


@functools.lru_cache(maxsize=4096)
def _format_seconds(seconds: int, offset: int) -> str:
    t = _EPOCH + timedelta(seconds=seconds + offset)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def format_timestamp(ns: int, *, fixed: bool = False, offset: int = 0) -> str:
    """Format like Go: RFC3339Nano (fraction trimmed) or, with fixed, the kubelet's RFC3339NanoFixed.

    `offset` (seconds east of UTC) renders the wall time of that zone with its +hh:mm suffix, as Go
    does for a time parsed with an offset; offset 0 is always "Z".
    """
    seconds, nanos = divmod(ns, NS_PER_SECOND)
    text = _format_seconds(seconds, offset)
    if fixed:
        text += f".{nanos:09d}"
    elif nanos:
        text += "." + f"{nanos:09d}".rstrip("0")
    if offset == 0:
        return text + "Z"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{text}{'-' if offset < 0 else '+'}{hours:02d}:{minutes:02d}"


@dataclass(frozen=True, slots=True)
class PodLogOptions:
    """The v1.PodLogOptions fields /containerLogs uses; None means "not given"."""

    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: int | None = None  # ns since the epoch; ZERO_TIME_NS for `sinceTime=` (set, zero)
    tail_lines: int | None = None
    limit_bytes: int | None = None
    insecure_skip_tls_verify_backend: bool = False  # decoded, then ignored (as by the kubelet)
    stream: str | None = None


class PodLogOptionsError(InvalidInput):
    """The kubelet's answer to a bad query: `status` and the exact `body`; str() says why."""

    def __init__(self, status: int, body: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.body = body


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


def require_stream_supported(opts: PodLogOptions, *, split_streams: bool = False) -> None:
    """Without the gate only All may be asked for: a 400 with the kubelet's plain-text reason.

    The kubelet checks this after its pod and container lookups, so an unknown pod still gets its
    404 first; call it at the same point.
    """
    if not split_streams and opts.stream is not None and opts.stream != LOG_STREAM_ALL:
        reason = (
            f'unable to return the given log stream: "{opts.stream}". '
            "Please enable PodLogsQuerySplitStreams feature gate in kubelet"
        )
        raise PodLogOptionsError(400, reason, reason)


def now_ns(clock: Clock) -> int:
    """The clock's wall time in integer nanoseconds (no float rounding of the epoch seconds)."""
    now = clock.now()
    whole = int(now // 1)
    return whole * NS_PER_SECOND + round((now - whole) * NS_PER_SECOND)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What the log reader does: the kubelet's internal LogOptions plus the streams asked for."""

    tail: int | None = None
    limit_bytes: int | None = None
    since: int | None = None  # ns since the epoch; records stamped earlier are skipped
    follow: bool = False
    timestamps: bool = False
    streams: frozenset[str] = frozenset({STDOUT, STDERR})

    @classmethod
    def from_pod_log_options(cls, opts: PodLogOptions, now: int) -> ReadOptions:
        """`now` in ns; sinceSeconds counts back from it, a later sinceTime wins (NewLogOptions)."""
        since = None if opts.since_seconds is None else now - opts.since_seconds * NS_PER_SECOND
        if opts.since_time is not None and (since is None or opts.since_time > since):
            since = opts.since_time
        wanted = {LOG_STREAM_STDOUT: frozenset({STDOUT}), LOG_STREAM_STDERR: frozenset({STDERR})}
        return cls(
            tail=opts.tail_lines,
            limit_bytes=opts.limit_bytes,
            since=since,
            follow=opts.follow,
            timestamps=opts.timestamps,
            streams=wanted.get(opts.stream or "", frozenset({STDOUT, STDERR})),
        )
