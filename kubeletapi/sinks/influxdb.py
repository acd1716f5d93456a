"""Writing line protocol to InfluxDB over HTTP: 1.x `/write?db=` or 2.x `/api/v2/write?org=&bucket=`.

Bodies arrive gzipped (the buffer keeps points that way; `Content-Encoding: gzip`, which both
versions accept, a body of several gzip members included) at nanosecond precision.
An answer is sorted into three outcomes: written (2xx); rejected for good (400 bad points, 413 too
large: sending them again cannot help, they are dropped and logged); or worth retrying (anything
else: a transport error, a timeout, 5xx, 429, and also 401/403/404, since credentials or a database
may be put right while the points wait). A 1.x database that does not exist is created, as Telegraf
does at start-up.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

import httpx

from kubeletapi import __version__
from kubeletapi.config import InfluxDBOptions

log = logging.getLogger(__name__)

ERROR_BODY_CHARS = 300


class Outcome(enum.Enum):
    WRITTEN = "written"
    RETRY = "retry"
    REJECTED = "rejected"


@dataclass(frozen=True)
class WriteResult:
    outcome: Outcome
    reason: str = ""  # what went wrong, for the log (empty when written)


class InfluxWriter:
    """One HTTP client for one InfluxDB endpoint."""

    def __init__(self, opts: InfluxDBOptions) -> None:
        self.opts = opts
        base = opts.url.rstrip("/")
        headers = {"User-Agent": f"kubeletapi/{__version__}"}
        if opts.token:
            headers["Authorization"] = f"Token {opts.token}"
        auth = (opts.username, opts.password) if opts.username and not opts.token else None
        self._client = httpx.AsyncClient(
            timeout=opts.timeout.seconds, headers=headers, auth=auth,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        if opts.v2:
            self.write_url = f"{base}/api/v2/write"
            self._params = {"org": opts.org, "bucket": opts.bucket, "precision": "ns"}
        else:
            self.write_url = f"{base}/write"
            self._params = {"db": opts.database, "precision": "ns"}
            if opts.retention_policy:
                self._params["rp"] = opts.retention_policy
        self._query_url = f"{base}/query"
        self._database_ready = opts.v2

    @property
    def target(self) -> str:
        """Where points go, for log lines (no credentials)."""
        where = f"bucket {self.opts.bucket!r}" if self.opts.v2 else f"database {self.opts.database!r}"
        return f"{self.write_url} ({where})"

    async def close(self) -> None:
        await self._client.aclose()

    async def write(self, gzipped: bytes) -> WriteResult:
        """POST one gzipped body of line protocol."""
        if not self._database_ready:
            await self._create_database()
        try:
            response = await self._client.post(
                self.write_url, params=self._params, content=gzipped,
                headers={"Content-Encoding": "gzip", "Content-Type": "text/plain; charset=utf-8"},
            )
        except httpx.TimeoutException:
            return WriteResult(Outcome.RETRY, f"no answer within {self.opts.timeout}")
        except httpx.HTTPError as exc:
            return WriteResult(Outcome.RETRY, f"{type(exc).__name__}: {exc}")
        return self._sort(response)

    def _sort(self, response: httpx.Response) -> WriteResult:
        code = response.status_code
        if 200 <= code < 300:
            return WriteResult(Outcome.WRITTEN)
        reason = f"HTTP {code}: {_error_text(response)}"
        if code in (400, 413):
            if code == 413:
                reason += " (lower --influxdb-batch-size)"
            return WriteResult(Outcome.REJECTED, reason)
        if code == 404 and not self.opts.v2:
            self._database_ready = False  # a dropped database: create it again before the next try
        return WriteResult(Outcome.RETRY, reason)

    async def _create_database(self) -> None:
        """CREATE DATABASE (a no-op when it exists); failures are left to the write that follows."""
        query = f'CREATE DATABASE "{_quote_ident(self.opts.database)}"'
        try:
            response = await self._client.post(self._query_url, data={"q": query})
        except httpx.HTTPError as exc:
            log.debug("influxdb sink: %s failed: %s", query, exc)
            return
        if response.status_code == 200 and '"error"' not in response.text:
            log.info("influxdb sink: database %r is ready at %s", self.opts.database, self.opts.url)
            self._database_ready = True
        else:
            log.debug("influxdb sink: %s answered HTTP %d: %s", query, response.status_code, _error_text(response))


def _quote_ident(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


def _error_text(response: httpx.Response) -> str:
    """InfluxDB's {"error": "..."} (1.x) or {"message": "..."} (2.x), else the start of the body."""
    try:
        doc = response.json()
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        for key in ("error", "message"):
            if isinstance(doc.get(key), str):
                return str(doc[key])[:ERROR_BODY_CHARS]
    return response.text[:ERROR_BODY_CHARS].strip() or response.reason_phrase
