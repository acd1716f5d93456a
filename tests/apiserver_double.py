"""A test double of the Kubernetes API server for the webhook authenticator and authorizer.

It is a small HTTPS server on 127.0.0.1 that answers TokenReview and SubjectAccessReview from
tables given by the test, records every review it receives, and can be told to fail; anything
else (the node's registration, its pod list) gets 404 or 501. It stands in
for kube-apiserver only; kubeletapi's side of the exchange (HTTP client, TLS, kubeconfig, caching)
is the real code.
"""

from __future__ import annotations

import datetime as dt
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kubeletapi.kubeconfig import write_kubeconfig
from kubeletapi.pki import NodePKI, ensure_pki


class APIServerDouble:
    def __init__(self, tmp: Path, users: dict[str, dict[str, Any]], allow: set[tuple[str, str]]) -> None:
        """`users`: token -> TokenReview user; `allow`: {(user, subresource)} allowed for verb get."""
        self.users = users
        self.allow = allow
        self.reviews: list[dict[str, Any]] = []
        self.fail_with: int | None = None
        pki = NodePKI.under(tmp / "apiserver-pki")
        ensure_pki(pki, "127.0.0.1", [], dt.datetime.now(dt.UTC), write_token=False)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki.serving_crt, pki.serving_key)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.socket = ctx.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.kubeconfig = tmp / "apiserver.kubeconfig"
        write_kubeconfig(
            self.kubeconfig, "double", f"https://127.0.0.1:{self.port}", pki.ca_crt.read_bytes(),
            pki.admin_crt.read_bytes(), pki.admin_key.read_bytes(),
        )
        # close() waits for serve_forever to notice, up to one poll interval (0.5 s by default)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def kinds(self) -> list[str]:
        return [r["kind"] for r in self.reviews]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, review: dict[str, Any]) -> dict[str, Any]:
        if review["kind"] == "TokenReview":
            user = self.users.get(review["spec"]["token"])
            status = {"authenticated": True, "user": user} if user else {"authenticated": False}
            return {**review, "status": status}
        spec = review["spec"]
        attrs = spec["resourceAttributes"]
        allowed = attrs.get("verb") == "get" and (spec.get("user"), attrs.get("subresource")) in self.allow
        return {**review, "status": {"allowed": allowed}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith(("/tokenreviews", "/subjectaccessreviews")):
                    # The agent with --kubeconfig also registers its node: not this double's business.
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                double.reviews.append(body)
                if double.fail_with is not None:
                    self.send_response(double.fail_with)
                    self.end_headers()
                    return
                data = json.dumps(double._answer(body)).encode()
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
