"""The options of a container log read: PodLogOptions as /containerLogs gives them, and the checks
that are not about decoding a query.

The query decoding and validation (400 and 422 answers) is the HTTP layer's:
server/logquery.py. What stays here is used below it too:
- PodLogOptions, the v1 type's fields /containerLogs uses, and PodLogOptionsError, the kubelet's
  answer to options it refuses (its status and exact body);
- require_stream_supported: after the pod and container lookups (404s), a stream other than All
  without the PodLogsQuerySplitStreams gate is a 400 with a plain-text reason;
- the Go time formats (RFC3339 parsing, RFC3339Nano formatting) and ReadOptions, the kubelet's
  internal LogOptions (kuberuntime/logs NewLogOptions), both used by logs.py.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from kubeletapi.clock import Clock
from kubeletapi.errors import InvalidInput

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
