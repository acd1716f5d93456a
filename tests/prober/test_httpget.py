"""httpGet probes against real local servers: the kubelet's rules and the hostile cases.

Every hostile target (never answers, 10 MB body, closes mid-response, header flood, trickled
body) must cost bounded time and memory: each case asserts how long it took and what was kept.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from kubeletapi.prober.httpget import MAX_BODY, canonical, http_probe, request_headers, tls_context
from kubeletapi.prober.results import Outcome, Result
from tests.helpers import free_port, make_ca
from tests.prober.servers import Handler, never_answer, raw_server, respond

UA = "kube-probe/0.1"
P = pytest.param


def run(coro: Awaitable[None]) -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


async def probe(url: str, timeout: float = 1.0, headers: list[tuple[str, str]] | None = None) -> Outcome:
    return await http_probe(url, request_headers(headers or [], UA), timeout, tls_context())


@pytest.mark.parametrize(
    ("status", "result", "output"),
    [
        P(200, Result.SUCCESS, "hello", id="200-body-is-output"),
        P(204, Result.SUCCESS, "", id="204"),
        P(399, Result.SUCCESS, "Probe terminated redirects, Response body: hello", id="399-not-a-redirect-code"),
        P(400, Result.FAILURE, "HTTP probe failed with statuscode: 400", id="400"),
        P(503, Result.FAILURE, "HTTP probe failed with statuscode: 503", id="503-no-body-in-message"),
    ],
)
def test_status_codes(status: int, result: Result, output: str) -> None:
    async def go() -> None:
        async with raw_server(respond(status, b"" if status == 204 else b"hello")) as server:
            outcome = await probe(server.url("/healthz"))
        assert (outcome.result, outcome.output, outcome.error) == (result, output, None)

    run(go())


def test_request_headers_as_the_kubelet_sends_them() -> None:
    async def go() -> None:
        async with raw_server(respond(200)) as server:
            await probe(server.url("/h?x=1"), headers=[("x-custom", "a"), ("X-Custom", "b"), ("host", "example.test")])
            await probe(server.url("/"), headers=[("User-Agent", "mine"), ("Accept", "")])
        first, second = (h.decode().split("\r\n") for h in server.heads)
        assert first[0] == "GET /h?x=1 HTTP/1.1"
        assert first[1:] == ["Host: example.test", f"User-Agent: {UA}", "Accept: */*", "X-Custom: a", "X-Custom: b",
                             "Connection: close", "", ""]
        assert second[1] == f"Host: 127.0.0.1:{server.port}"
        assert "User-Agent: mine" in second
        assert not any(line.startswith("Accept") for line in second)

    run(go())


@pytest.mark.parametrize(
    ("name", "canon"),
    [P("x-custom-header", "X-Custom-Header", id="lower"), P("ACCEPT", "Accept", id="upper"),
     P("bad name", "bad name", id="invalid-kept")],
)
def test_canonical_header_names(name: str, canon: str) -> None:
    assert canonical(name) == canon


def test_redirect_to_the_same_host_is_followed() -> None:
    async def go() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = server.heads[-1]
            if head.startswith(b"GET /start "):
                await respond(302, headers={"Location": "/final"})(reader, writer)
            else:
                await respond(200, b"arrived")(reader, writer)

        async with raw_server(handler) as server:
            outcome = await probe(server.url("/start"))
        assert (outcome.result, outcome.output, outcome.warning) == (Result.SUCCESS, "arrived", False)
        assert [h.split(b" ")[1] for h in server.heads] == [b"/start", b"/final"]

    run(go())


def test_redirect_loop_stops_after_10_requests() -> None:
    async def go() -> None:
        async with raw_server(respond(301, headers={"Location": "/again"})) as server:
            outcome = await probe(server.url("/"))
        assert outcome.result is Result.FAILURE
        assert outcome.output == f'Get "http://127.0.0.1:{server.port}/again": stopped after 10 redirects'
        assert server.connections == 10

    run(go())


def test_redirect_to_another_host_is_a_success_with_a_warning() -> None:
    async def go() -> None:
        location = f"http://localhost:{free_port()}/elsewhere"  # another hostname: never contacted
        async with raw_server(respond(302, b"moved", {"Location": location})) as server:
            outcome = await probe(server.url("/"))
        assert (outcome.result, outcome.warning) == (Result.SUCCESS, True)
        assert outcome.output == "Probe terminated redirects, Response body: moved"
        assert server.connections == 1

    run(go())


def test_connection_refused() -> None:
    port = free_port()
    outcome = asyncio.run(probe(f"http://127.0.0.1:{port}/"))
    assert outcome.result is Result.FAILURE
    assert outcome.output == f'Get "http://127.0.0.1:{port}/": dial tcp 127.0.0.1:{port}: connect: connection refused'


def hostile(handler: Handler, timeout: float = 1.0) -> tuple[Outcome, float]:
    async def go() -> tuple[Outcome, float]:
        async with raw_server(handler) as server:
            began = time.monotonic()
            outcome = await probe(server.url("/"), timeout)
            return outcome, time.monotonic() - began

    return asyncio.run(go())


def test_a_server_that_never_answers_times_out() -> None:
    outcome, took = hostile(never_answer, timeout=0.5)
    assert outcome.result is Result.FAILURE
    assert outcome.output.endswith(": context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
    assert 0.45 < took < 1.5


async def huge_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    block = b"x" * 65536
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n")
    for _ in range(160):
        writer.write(block)
        await writer.drain()


async def huge_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(160):
        writer.write(b"10000\r\n" + b"y" * 65536 + b"\r\n")
        await writer.drain()


async def huge_unframed(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\n\r\n")
    for _ in range(160):
        writer.write(b"z" * 65536)
        await writer.drain()


@pytest.mark.parametrize("handler", [P(huge_body, id="content-length"), P(huge_chunked, id="chunked"),
                                     P(huge_unframed, id="until-close")])
def test_a_10mb_body_is_cut_at_10kib(handler: Handler) -> None:
    outcome, took = hostile(handler)
    assert outcome.result is Result.SUCCESS
    assert len(outcome.output) == MAX_BODY
    assert took < 0.5


async def close_in_headers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Le")
    await writer.drain()


async def close_in_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
    await writer.drain()


async def close_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    return


async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        writer.write(b".")
        await writer.drain()
        await asyncio.sleep(0.05)


async def header_flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\n")
    for i in range(20000):
        writer.write(f"X-Flood-{i}: {'v' * 40}\r\n".encode())
        await writer.drain()


async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    await writer.drain()


@pytest.mark.parametrize(
    ("handler", "result", "text"),
    [
        P(close_at_once, Result.FAILURE, ': EOF', id="close-before-response"),
        P(close_in_headers, Result.FAILURE, ": unexpected EOF", id="close-in-headers"),
        P(trickle, Result.FAILURE, "(Client.Timeout or context cancellation while reading body)", id="trickled-body"),
        P(header_flood, Result.FAILURE, "server response headers exceeded 65536 bytes; aborted", id="header-flood"),
        P(garbage, Result.FAILURE, 'malformed HTTP response "SSH-2.0-OpenSSH_9.6"', id="not-http"),
    ],
)
def test_hostile_responses_fail_within_the_timeout(handler: Handler, result: Result, text: str) -> None:
    outcome, took = hostile(handler, timeout=0.5)
    assert (outcome.result, outcome.error) == (result, None)
    assert outcome.output.endswith(text), outcome.output
    assert took < 1.2


def test_a_body_cut_short_is_a_probe_error() -> None:
    """As the kubelet: the body read fails, so the run errored (the runner retries, then drops it)."""
    outcome, took = hostile(close_in_body)
    assert outcome.error is not None and "unexpected EOF" in outcome.error
    assert took < 0.5


def test_https_is_not_verified(tmp_path: Path) -> None:
    _, key, cert_path = make_ca(tmp_path, "self-signed")
    key_path = tmp_path / "key.pem"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_path, key_path)

    async def go() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecure")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        try:
            outcome = await probe(f"https://127.0.0.1:{port}/")
            plain = await probe(f"http://127.0.0.1:{port}/", timeout=0.5)
        finally:
            server.close()
            await server.wait_closed()
        assert (outcome.result, outcome.output) == (Result.SUCCESS, "secure")
        assert plain.result is Result.FAILURE

    run(go())


def test_a_hanging_target_never_delays_another_probe() -> None:
    async def go() -> None:
        async with raw_server(never_answer) as slow, raw_server(respond(200, b"ok")) as fast:
            stalled = asyncio.ensure_future(probe(slow.url(), timeout=2))
            began = time.monotonic()
            outcome = await probe(fast.url())
            assert time.monotonic() - began < 0.3
            assert outcome.result is Result.SUCCESS
            assert not stalled.done()
            stalled.cancel()

    run(go())

