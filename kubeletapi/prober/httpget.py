"""httpGet probes: a small HTTP/1.1 GET client with the kubelet's rules and hard bounds.

The kubelet's rules (pkg/probe/http):
- headers from httpHeaders (names canonicalised as Go does); `User-Agent: kube-probe/<major>.<minor>`
  and `Accept: */*` unless set (an empty Accept removes it); a `Host` header overrides the
  request's host; no keep-alive (`Connection: close`), no compression, no proxy;
- 200-399 succeeds (the body is the output); anything else fails with
  `HTTP probe failed with statuscode: <code>` (never the body: kubernetes#99425);
- redirects (301/302/303/307/308 with a Location) to the same hostname are followed, at most 10
  requests in all (`stopped after 10 redirects`); a redirect to another hostname is not
  followed and the 3xx is a success with a warning (`Probe terminated redirects, Response
  body: ...`);
- at most 10 KiB of the body is read (truncation is not an error); a body cut short (close
  mid-response) is a probe *error*, which the kubelet retries and then throws away;
- transport errors are failures with Go's `Get "<url>": <error>` text; the whole exchange
  (redirects and body included) has the probe's timeout, and running out of it is a failure:
  `... context deadline exceeded (Client.Timeout exceeded while awaiting headers)`.
  (Go reports a timeout while reading the body as an error; here it is a failure too, so a
  server that trickles its body fails instead of never counting.)

Bounds: response headers above 64 KiB abort the probe; the socket is aborted, never drained.
TLS is not verified (as the kubelet); no ALPN is offered, so servers speak HTTP/1.1.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from kubeletapi.prober.results import Outcome, Result

MAX_BODY = 10 * 1024  # the kubelet's maxRespBodyLength
MAX_HEADER_BYTES = 64 * 1024
MAX_REQUESTS = 10  # Go's default redirect policy: the 11th request is refused
REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_STATUS = re.compile(rb"HTTP/1\.[01] (\d{3})(?: .*)?")


def tls_context() -> ssl.SSLContext:
    """The probes' TLS client context: no verification (InsecureSkipVerify), no client cert."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def canonical(name: str) -> str:
    """Go's textproto.CanonicalMIMEHeaderKey: `x-custom-header` -> `X-Custom-Header`."""
    if not _TOKEN.fullmatch(name):
        return name
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def request_headers(pairs: Sequence[tuple[str, str]], user_agent: str) -> list[tuple[str, str]]:
    """httpHeaders as the kubelet sends them (NewProbeRequest), in Go's write order."""
    headers: dict[str, list[str]] = {}
    for name, value in pairs:
        headers.setdefault(canonical(name), []).append(value.replace("\r", " ").replace("\n", " "))
    headers.setdefault("User-Agent", [user_agent])
    if "Accept" not in headers:
        headers["Accept"] = ["*/*"]
    elif not headers["Accept"][0]:
        del headers["Accept"]
    out = [("User-Agent", v) for v in headers.pop("User-Agent")[:1]]
    out += [(k, v) for k in sorted(headers) for v in headers[k]]
    return out


@dataclass
class _Response:
    status: int
    headers: dict[str, str]
    body: bytes = b""


class _Failed(Exception):
    """A transport failure: the probe fails with Go's message for it."""


class _BodyError(Exception):
    """The body could not be read to its end: a probe error."""


def _hostname(url: str) -> str:
    """URL.Hostname(): the host without port or brackets (case kept)."""
    netloc = urlsplit(url).netloc.rpartition("@")[2]
    if netloc.startswith("["):
        return netloc[1:].partition("]")[0]
    return netloc.partition(":")[0]


def os_reason(exc: OSError) -> str:
    """Go's text for a syscall error: the lowercase strerror (`connection refused`)."""
    if exc.errno:
        return os.strerror(exc.errno).lower()
    return (str(exc) or type(exc).__name__).lower()


def dial_error(host: str, port: int, exc: OSError) -> str:
    """Go's net.Dial error text."""
    if isinstance(exc, socket.gaierror):
        return f"dial tcp: lookup {host}: no such host"
    addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"dial tcp {addr}: connect: {os_reason(exc)}"


@dataclass
class _Progress:
    """Where an exchange is, for the message when it fails."""

    url: str
    phase: str = "headers"


async def http_probe(
    url: str, headers: Sequence[tuple[str, str]], timeout_s: float, tls: ssl.SSLContext
) -> Outcome:
    """GET `url` with the kubelet's rules; `headers` as request_headers() made them (a Host
    entry, if any, overrides the request host)."""
    progress = _Progress(url)
    try:
        async with asyncio.timeout(timeout_s):
            return await _follow(url, headers, tls, progress)
    except TimeoutError:
        if progress.phase == "body":
            why = "context deadline exceeded (Client.Timeout or context cancellation while reading body)"
        else:
            why = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        return Outcome(Result.FAILURE, f'Get "{progress.url}": {why}')
    except _Failed as exc:
        return Outcome(Result.FAILURE, f'Get "{progress.url}": {exc}')
    except _BodyError as exc:
        return Outcome(Result.FAILURE, error=f'reading the body of "{progress.url}": {exc}')


async def _follow(url: str, headers: Sequence[tuple[str, str]], tls: ssl.SSLContext, progress: _Progress) -> Outcome:
    """Requests until a response that is not a redirect to follow (Go's redirect policy)."""
    sent = 0
    while True:
        sent += 1
        response = await _fetch(progress.url, headers, tls, progress)
        location = response.headers.get("location", "")
        if response.status not in REDIRECTS or not location:
            return _verdict(response)
        target = urljoin(progress.url, location)
        if _hostname(target) != _hostname(url):
            return _verdict(response)
        if sent == MAX_REQUESTS:
            return Outcome(Result.FAILURE, f'Get "{target}": stopped after 10 redirects')
        if urlsplit(location).scheme or location.startswith("//"):
            headers = [(k, v) for k, v in headers if k != "Host"]  # Go keeps Host for relative ones only
        progress.url, progress.phase = target, "headers"


def _verdict(response: _Response) -> Outcome:
    body = response.body.decode(errors="replace")
    if 200 <= response.status < 300:
        return Outcome(Result.SUCCESS, body)
    if 300 <= response.status < 400:
        return Outcome(Result.SUCCESS, f"Probe terminated redirects, Response body: {body}", warning=True)
    return Outcome(Result.FAILURE, f"HTTP probe failed with statuscode: {response.status}")


async def _fetch(url: str, headers: Sequence[tuple[str, str]], tls: ssl.SSLContext, progress: _Progress) -> _Response:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise _Failed(f'unsupported protocol scheme "{parts.scheme}"')
    try:
        host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise _Failed(f"invalid URL port: {exc}") from None
    try:
        reader, writer = await asyncio.open_connection(
            host, port, ssl=tls if parts.scheme == "https" else None, limit=MAX_HEADER_BYTES
        )
    except ssl.SSLError as exc:
        raise _Failed(f"tls: {exc.reason or exc}") from None
    except OSError as exc:
        raise _Failed(dial_error(host, port, exc)) from None
    try:
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        writer.write(_request(target, parts.netloc.rpartition("@")[2], headers))
        status, response_headers = await _read_head(reader)
        progress.phase = "body"
        response = _Response(status, response_headers)
        response.body = await _read_body(reader, response)
        return response
    except ssl.SSLError as exc:
        raise _Failed(f"tls: {exc.reason or exc}") from None
    except ConnectionResetError:
        raise _Failed("read: connection reset by peer") from None
    except OSError as exc:
        raise _Failed(f"read: {os_reason(exc)}") from None
    finally:
        writer.transport.abort()  # never drain what the server still sends


def _request(target: str, netloc: str, headers: Sequence[tuple[str, str]]) -> bytes:
    host = next((v for k, v in headers if k == "Host"), netloc)
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in headers if k != "Host"]
    lines += ["Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1", errors="replace")


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    while True:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            raise _Failed("unexpected EOF" if exc.partial else "EOF") from None
        except asyncio.LimitOverrunError:
            raise _Failed(f"net/http: server response headers exceeded {MAX_HEADER_BYTES} bytes; aborted") from None
        first, *lines = raw[:-4].split(b"\r\n")
        match = _STATUS.fullmatch(first)
        if match is None:
            shown = first[:64].decode(errors="replace")
            raise _Failed(f'net/http: HTTP/1.x transport connection broken: malformed HTTP response "{shown}"')
        status = int(match.group(1))
        if 100 <= status < 200 and status != 101:
            continue  # interim responses (100 Continue, 103 Early Hints)
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers


async def _read_body(reader: asyncio.StreamReader, response: _Response) -> bytes:
    if response.status in (204, 304) or response.status < 200:
        return b""
    try:
        if "chunked" in response.headers.get("transfer-encoding", "").lower():
            return await _read_chunked(reader)
        length = response.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise _Failed(f'bad Content-Length "{length}"')
            return await reader.readexactly(min(int(length), MAX_BODY))
        body = bytearray()
        while len(body) < MAX_BODY:
            chunk = await reader.read(MAX_BODY - len(body))
            if not chunk:
                break
            body += chunk
        return bytes(body)
    except asyncio.IncompleteReadError:
        raise _BodyError("unexpected EOF") from None


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while len(body) < MAX_BODY:
        try:
            line = await reader.readuntil(b"\r\n")
            size = int(line.split(b";", 1)[0].strip(), 16)
        except (ValueError, asyncio.LimitOverrunError):
            raise _BodyError("malformed chunked encoding") from None
        if size == 0:
            break
        take = min(size, MAX_BODY - len(body))
        body += await reader.readexactly(take)
        if take < size:
            break
        await reader.readexactly(2)
    return bytes(body)
