"""What one connection may cost every listener before the app sees a request (server/protocols.py).

- Request line and headers: at most MAX_HEADER_BYTES, as the kubelet's servers (MaxHeaderBytes
  1 MiB, which Go's net/http stretches by 4 KiB of read buffer). Beyond that the answer is Go's
  `431 Request Header Fields Too Large` and the connection closes; nothing more is read or kept.
- Header timeout: a connection must deliver a complete request head within HEADER_TIMEOUT_S of
  being accepted (of its first byte for later requests on a keep-alive connection), and a TLS
  handshake must finish within the same time; otherwise it is closed without an answer (Go's
  ReadHeaderTimeout). The kubelet itself only has ReadTimeout 4h; 1,100 connections that sent
  nothing exhausted the agent's file descriptors. 30 s is far above any real client (they send
  the head right after connecting; even 1 MiB at 1 Mbit/s takes 8 s) and as long as nginx's and
  Apache's defaults for the same timeout, while an attacker now needs a steady 34 new connections
  per second to hold 1,024 descriptors.
- Request body: at most MAX_BODY_BYTES on every route, answered `413 Request Entity Too Large`:
  at once when Content-Length says so (before routing and authentication), else as soon as the
  streamed body passes the limit. The kubelet sets no limit; none of its handlers reads a body
  except POST /stats/summary's form (Go's ParseForm reads up to 10 MiB for a form of one field).
  PUT/POST /submittedpods (pod submission) has its own rule: 1.5 MiB, the pod list limit, and a
  larger body is a `400 Bad Request` with a metav1 Status naming the limit (the issue's answer
  for a pod list that is too large), also before routing and authentication.
The idle time between keep-alive requests stays the kubelet's IdleTimeout (90 s, listeners.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_HEADER_BYTES = 1 << 20
GO_READ_SLOP = 4096  # net/http: initialReadLimitSize = MaxHeaderBytes + 4096
HEADER_TIMEOUT_S = 30.0
MAX_BODY_BYTES = 1 << 20
SUBMISSION_PATH = "/submittedpods"
SUBMISSION_BODY_BYTES = 3 * 512 * 1024  # a pod list: the API server's object limit, as for manifests
# After a refusal: the response goes out, reading stops, and the connection is dropped this much
# later (net/http's rstAvoidanceDelay), so the client can read the answer before the reset.
LINGER_S = 0.5


@dataclass(frozen=True)
class Limits:
    """The limits of one listener (tests shorten the timeout)."""

    max_header_bytes: int = MAX_HEADER_BYTES
    header_timeout_s: float = HEADER_TIMEOUT_S
    max_body_bytes: int = MAX_BODY_BYTES
    linger_s: float = LINGER_S

    def body_rule(self, path: bytes) -> tuple[int, bytes]:
        """The body limit of a request to `path` (its raw target) and the refusal beyond it."""
        if path.split(b"?", 1)[0] == SUBMISSION_PATH.encode():
            return SUBMISSION_BODY_BYTES, SUBMISSION_TOO_LARGE
        return self.max_body_bytes, BODY_TOO_LARGE

    @property
    def head_read_limit(self) -> int:
        """Bytes a request head may take on the wire, request line included."""
        return self.max_header_bytes + GO_READ_SLOP


def refusal(status: int, reason: str) -> bytes:
    """net/http's answer to a request it refuses before any handler: plain text, no length, close."""
    text = f"{status} {reason}"
    return (f"HTTP/1.1 {text}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n{text}").encode()


HEADERS_TOO_LARGE = refusal(431, "Request Header Fields Too Large")
BODY_TOO_LARGE = refusal(413, "Request Entity Too Large")


def _status_refusal(message: str) -> bytes:
    """A 400 with a metav1 Status body, closing the connection (the route's own answer, early)."""
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": "BadRequest", "code": 400}, separators=(",", ":")).encode()
    head = (f"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    return head + body


SUBMISSION_TOO_LARGE = _status_refusal(
    f"request body: the pod list is larger than 1.5 MiB ({SUBMISSION_BODY_BYTES} bytes)")
