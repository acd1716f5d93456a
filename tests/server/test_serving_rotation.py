"""The secure listener's ServingContext: a new serving certificate is presented to new handshakes
at once, while a connection opened before keeps working with the certificate it began with."""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
from pathlib import Path

from cryptography import x509
from starlette.types import Receive, Scope, Send

from kubeletapi.pki import NodePKI, ensure_pki
from kubeletapi.server.listeners import Listener, ListenerSpec
from kubeletapi.server.tls import ServingContext


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def pki(tmp: Path, name: str) -> NodePKI:
    made = NodePKI.under(tmp / name)
    ensure_pki(made, "127.0.0.1", [], dt.datetime.now(dt.UTC), write_token=False)
    return made


async def get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0] + b" " + await reader.readexactly(2)


def serial(writer: asyncio.StreamWriter) -> int:
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    return int(x509.load_der_x509_certificate(der).serial_number)


def test_a_new_certificate_serves_new_handshakes_and_open_connections_keep_theirs(tmp_path: Path) -> None:
    first, second = pki(tmp_path, "a"), pki(tmp_path, "b")
    serials = [x509.load_pem_x509_certificate(p.serving_crt.read_bytes()).serial_number for p in (first, second)]
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE

    async def scenario() -> None:
        serving = ServingContext(first.serving_crt, first.serving_key, None)
        listener = Listener(ListenerSpec("secure", "127.0.0.1", 0, app, ssl_source=serving))
        await listener.start()
        try:
            old = await asyncio.open_connection("127.0.0.1", listener.port, ssl=client)
            assert await get(*old) == b"HTTP/1.1 200 OK ok" and serial(old[1]) == serials[0]
            serving.load(second.serving_crt, second.serving_key)
            new = await asyncio.open_connection("127.0.0.1", listener.port, ssl=client)
            assert await get(*new) == b"HTTP/1.1 200 OK ok" and serial(new[1]) == serials[1]
            assert await get(*old) == b"HTTP/1.1 200 OK ok" and serial(old[1]) == serials[0]
            for _, writer in (old, new):
                writer.close()
                await writer.wait_closed()
        finally:
            await listener.stop()

    asyncio.run(scenario())
