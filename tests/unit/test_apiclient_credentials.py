"""The API client follows its Credentials: after a rotated client certificate replaces them, the
next request goes over a new connection presenting the new certificate (a TLS server on loopback
that requires client certificates records who each request came from)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kubeletapi.apiclient.client import ApiClient
from kubeletapi.clock import RealClock
from kubeletapi.kubeconfig import ClientConfig, Credentials
from tests.cluster.pki import ClusterPKI


class Recorder:
    """HTTPS on 127.0.0.1 requiring a client certificate of the CA; (CN, client port) per request."""

    def __init__(self, pki: ClusterPKI) -> None:
        self.seen: list[tuple[str, int]] = []
        serving = pki.issue("server", "server", server_ips=["127.0.0.1"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(serving.cert, serving.key)
        ctx.load_verify_locations(cafile=str(pki.ca.cert))
        ctx.verify_mode = ssl.CERT_REQUIRED
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                assert isinstance(self.connection, ssl.SSLSocket)
                subject: Any = self.connection.getpeercert()["subject"]
                cn = next(v for rdn in subject for k, v in rdn if k == "commonName")
                seen.append((cn, self.client_address[1]))
                body = json.dumps({}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def pki(tmp_path: Path) -> ClusterPKI:
    return ClusterPKI(tmp_path / "pki")


@pytest.fixture
def recorder(pki: ClusterPKI) -> Iterator[Recorder]:
    server = Recorder(pki)
    try:
        yield server
    finally:
        server.close()


def test_a_replaced_client_certificate_is_used_on_a_new_connection(pki: ClusterPKI, recorder: Recorder) -> None:
    first, second = pki.issue("first", "system:node:n1"), pki.issue("second", "system:node:n1-rotated")
    config = ClientConfig(
        recorder.url, ca_pem=pki.ca_pem, client_cert_pem=first.cert.read_bytes(), client_key_pem=first.key.read_bytes()
    )
    credentials = Credentials(config)

    async def scenario() -> None:
        api = ApiClient(credentials, RealClock())
        try:
            await api.get("/a")
            await api.get("/b")  # kept alive: the same connection
            credentials.replace(
                dataclasses.replace(
                    config, client_cert_pem=second.cert.read_bytes(), client_key_pem=second.key.read_bytes()
                )
            )
            await api.get("/c")
            await api.get("/d")
        finally:
            await api.close()

    asyncio.run(scenario())
    names = [cn for cn, _ in recorder.seen]
    ports = [port for _, port in recorder.seen]
    assert names == ["system:node:n1", "system:node:n1", "system:node:n1-rotated", "system:node:n1-rotated"]
    assert ports[0] == ports[1] and ports[2] == ports[3] and ports[1] != ports[2]
