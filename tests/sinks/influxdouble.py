"""A scripted InfluxDB HTTP endpoint on loopback for the writer's unit tests: records every request
(method, path, query, headers, gunzipped body) and answers from a list of (status, body, delay)."""

from __future__ import annotations

import gzip
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes  # decompressed when gzipped


class InfluxDouble:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.answers: deque[tuple[int, bytes, float]] = deque()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw
                double.requests.append(Seen("POST", parts.path, parse_qs(parts.query), dict(self.headers), body))
                status, answer, delay = double.answer_for(parts.path)
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def answer_for(self, path: str) -> tuple[int, bytes, float]:
        if path == "/query":
            return 200, b'{"results":[{"statement_id":0}]}', 0.0
        return self.answers.popleft() if self.answers else (204, b"", 0.0)

    def writes(self) -> list[Seen]:
        return [r for r in self.requests if r.path != "/query"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)
