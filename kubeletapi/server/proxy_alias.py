"""The API server's node proxy path, served as an alias: /api/v1/nodes/<node>/proxy/<path>.

`kubectl get --raw /api/v1/nodes/<node>/proxy/stats/summary` is how the docs reach a kubelet;
with --server pointed at this node it works unchanged. The request is rewritten to /<path>
before instrumentation and authorization, so it is counted and authorized as the target path.
The node segment may carry the proxy syntax `[scheme:]name[:port]`.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from kubeletapi.server.asgi import send_plain

PREFIX = "/api/v1/nodes/"


def node_of(segment: str) -> str:
    parts = segment.split(":")
    if len(parts) == 3:
        return parts[1]
    if len(parts) == 2 and parts[0] in ("http", "https"):
        return parts[1]
    return parts[0]


class ProxyAliasMiddleware:
    def __init__(self, app: ASGIApp, node_name: str) -> None:
        self.app = app
        self._node = node_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] not in ("http", "websocket") or not path.startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        segment, _, rest = path[len(PREFIX):].partition("/")
        sub, _, target = rest.partition("/")
        if sub != "proxy":
            await self.app(scope, receive, send)
            return
        name = node_of(segment)
        if name != self._node:
            body = json.dumps({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": f'nodes "{name}" not found', "reason": "NotFound",
                "details": {"name": name, "kind": "nodes"}, "code": 404,
            }, separators=(",", ":")).encode()
            await send_plain(scope, receive, send, 404, body, content_type=b"application/json")
            return
        raw = scope.get("raw_path") or path.encode()
        raw_target = raw[len(PREFIX):].partition(b"/")[2].partition(b"/")[2]
        scope = dict(scope)
        scope["path"] = "/" + target
        scope["raw_path"] = b"/" + raw_target
        await self.app(scope, receive, send)
