"""The writer against a scripted InfluxDB on loopback: URLs, parameters, credentials, gzip, and how
every kind of answer is sorted (written, rejected for good, retried)."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator

import pytest

from kubeletapi.config import Duration, InfluxDBOptions
from kubeletapi.errors import ConfigError
from kubeletapi.sinks.influxdb import InfluxWriter, Outcome, WriteResult
from tests.helpers import free_port
from tests.sinks.influxdouble import InfluxDouble

LINES = [b"m,a=1 f=1i 1", b"m,a=2 f=2i 2"]
# Two gzip members, as the sink sends a batch of chunks: InfluxDB reads them as one body.
BODY = gzip.compress(LINES[0] + b"\n", 1) + gzip.compress(LINES[1] + b"\n", 1)


@pytest.fixture
def influx() -> Iterator[InfluxDouble]:
    double = InfluxDouble()
    yield double
    double.close()


def write(opts: InfluxDBOptions, body: bytes = BODY) -> WriteResult:
    async def run() -> WriteResult:
        writer = InfluxWriter(opts)
        try:
            return await writer.write(body)
        finally:
            await writer.close()

    return asyncio.run(run())


def test_v1_creates_the_database_then_writes_gzipped_line_protocol(influx: InfluxDouble) -> None:
    result = write(InfluxDBOptions(influx.url, database="k8s", retention_policy="week",
                                   username="u", password="p"))
    assert result == WriteResult(Outcome.WRITTEN)
    create, post = influx.requests
    assert create.path == "/query" and b"CREATE+DATABASE" in create.body and b"k8s" in create.body
    assert post.path == "/write"
    assert post.query == {"db": ["k8s"], "rp": ["week"], "precision": ["ns"]}
    assert post.headers["Content-Encoding"] == "gzip"
    assert post.headers["Authorization"].startswith("Basic ")  # u:p
    assert post.body == b"m,a=1 f=1i 1\nm,a=2 f=2i 2\n"


def test_v2_writes_to_the_bucket_with_the_token(influx: InfluxDouble) -> None:
    result = write(InfluxDBOptions(influx.url + "/", token="s3cret", org="acme", bucket="k8s/autogen"))
    assert result.outcome is Outcome.WRITTEN
    (post,) = influx.requests  # no CREATE DATABASE in 2.x
    assert post.path == "/api/v2/write"
    assert post.query == {"org": ["acme"], "bucket": ["k8s/autogen"], "precision": ["ns"]}
    assert post.headers["Authorization"] == "Token s3cret"
    assert post.body.splitlines() == LINES


@pytest.mark.parametrize(
    ("status", "body", "outcome", "reason"),
    [
        pytest.param(204, b"", Outcome.WRITTEN, "", id="204"),
        pytest.param(400, b'{"error":"partial write: field type conflict"}', Outcome.REJECTED,
                     "HTTP 400: partial write: field type conflict", id="400-bad-points"),
        pytest.param(413, b'{"error":"Request Entity Too Large"}', Outcome.REJECTED,
                     "HTTP 413: Request Entity Too Large (lower --influxdb-batch-size)", id="413"),
        pytest.param(500, b'{"error":"timeout"}', Outcome.RETRY, "HTTP 500: timeout", id="500"),
        pytest.param(503, b"busy", Outcome.RETRY, "HTTP 503: busy", id="503-plain-body"),
        pytest.param(429, b'{"message":"too many"}', Outcome.RETRY, "HTTP 429: too many", id="429-v2-message"),
        pytest.param(401, b'{"error":"authorization failed"}', Outcome.RETRY,
                     "HTTP 401: authorization failed", id="401"),
    ],
)
def test_answers_are_sorted(influx: InfluxDouble, status: int, body: bytes, outcome: Outcome, reason: str) -> None:
    influx.answers.append((status, body, 0.0))
    assert write(InfluxDBOptions(influx.url)) == WriteResult(outcome, reason)


def test_database_not_found_is_retried_after_creating_it_again(influx: InfluxDouble) -> None:
    influx.answers.extend([(404, b'{"error":"database not found: \\"k8s\\""}', 0.0), (204, b"", 0.0)])

    async def run() -> list[WriteResult]:
        writer = InfluxWriter(InfluxDBOptions(influx.url))
        try:
            return [await writer.write(BODY), await writer.write(BODY)]
        finally:
            await writer.close()

    first, second = asyncio.run(run())
    assert first.outcome is Outcome.RETRY and "database not found" in first.reason
    assert second.outcome is Outcome.WRITTEN
    assert [r.path for r in influx.requests] == ["/query", "/write", "/query", "/write"]


def test_a_slow_server_is_a_timeout_to_retry(influx: InfluxDouble) -> None:
    influx.answers.append((204, b"", 1.0))
    result = write(InfluxDBOptions(influx.url, timeout=Duration.parse("200ms")))
    assert result == WriteResult(Outcome.RETRY, "no answer within 200ms")


def test_nothing_listening_is_retried() -> None:
    result = write(InfluxDBOptions(f"http://127.0.0.1:{free_port()}"))
    assert result.outcome is Outcome.RETRY and "ConnectError" in result.reason


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"url": "ftp://h"}, "--influxdb-url must be an http(s) URL", id="scheme"),
        pytest.param({"url": "http://h:99999"}, "--influxdb-url 'http://h:99999'", id="port"),
        pytest.param({"url": "http://h/?db=x"}, "without query", id="query"),
        pytest.param({"url": "http://u:secret@h"}, "must not carry credentials", id="userinfo"),
        pytest.param({"url": "http://h", "bucket": "b"}, "needs --influxdb-org", id="bucket-without-org"),
        pytest.param({"url": "http://h", "database": ""}, "--influxdb-database must not be empty", id="database"),
        pytest.param({"url": "http://h", "batch_size": 0}, "--influxdb-batch-size", id="batch"),
        pytest.param({"url": "http://h", "buffer_size": 0}, "--influxdb-buffer-size must be at least 1", id="buffer"),
        pytest.param({"url": "http://h", "timeout": Duration.parse("10m")}, "--influxdb-timeout", id="timeout"),
    ],
)
def test_bad_options_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("?", r"\?").replace("(", r"\(").replace(")", r"\)")):
        InfluxDBOptions(**kwargs)  # type: ignore[arg-type]
