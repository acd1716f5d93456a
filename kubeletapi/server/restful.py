"""The shape of the kubelet's go-restful container around the routes (what the oracle compares).

The kubelet serves most endpoints as go-restful WebServices, each registered on Go's ServeMux
under its root path (and the root plus "/"); the rest are plain mux handlers. So:
- a path under a WebService's root that none of its routes serves is go-restful's 404, body
  `404: Page Not Found` (no X-Content-Type-Options), and only after the container's filters: on
  the secure port it is authenticated and authorized first (401 without credentials);
- go-restful ignores a trailing slash: /pods/ is /pods, /stats/summary/ is /stats/summary;
- a pattern registered with a trailing slash only (/stats/, /runningpods/, and with debugging
  handlers off the placeholders /run/, /exec/, ...) gets the mux's redirect for the bare path:
  307 to the slashed one, query kept, before any filter.
A path under no root stays Go's `404 page not found` before authentication (asgi.not_found).
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from kubeletapi.server.asgi import send_plain

PAGE_NOT_FOUND = b"404: Page Not Found"

# The WebServices' root paths (server.go: InstallAuthNotRequiredHandlers, InstallDebuggingHandlers).
WEB_SERVICES = ("/pods", "/stats/", "/run", "/exec", "/attach", "/portForward", "/containerLogs", "/runningpods/",
                "/logs/")
_DEBUGGING = frozenset({"/run", "/exec", "/attach", "/portForward", "/containerLogs", "/runningpods/", "/logs/"})
# InstallDebuggingDisabledHandlers' mux patterns: the placeholders answer every path under them.
_DISABLED = ("/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", "/debug/pprof/",
             "/logs/")


def web_service_root(path: str, debugging: bool) -> str | None:
    """The root of the WebService a path falls under, on a listener with or without the debugging
    handlers; None for a path of the mux alone."""
    for root in WEB_SERVICES:
        if not debugging and root in _DEBUGGING:
            continue
        bare = root.rstrip("/")
        if path == root or path.startswith(bare + "/") or (path == bare and not root.endswith("/")):
            return root
    return None


def redirected(path: str, debugging: bool) -> str | None:
    """The slashed pattern a bare path is redirected to by the mux, if any."""
    patterns = [r for r in WEB_SERVICES if r.endswith("/") and (debugging or r not in _DEBUGGING)]
    if not debugging:
        patterns += _DISABLED
    return path + "/" if path + "/" in patterns else None


_GO_HTML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})


async def redirect(scope: Scope, receive: Receive, send: Send, target: str) -> None:
    """Go's http.Redirect with 307, as the ServeMux sends it (the query kept): a GET or HEAD gets
    the little HTML body, any other method none."""
    query = scope.get("query_string", b"").decode("latin-1")
    location = target + ("?" + query if query else "")
    head = [(b"location", location.encode("latin-1"))]
    if scope.get("method", "GET") in ("GET", "HEAD"):
        body = f'<a href="{location.translate(_GO_HTML_ESCAPES)}">Temporary Redirect</a>.\n\n'.encode()
        await send_plain(scope, receive, send, 307, body, head, content_type=b"text/html; charset=utf-8")
        return
    await send({"type": "http.response.start", "status": 307, "headers": [*head, (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def page_not_found(scope: Scope, receive: Receive, send: Send) -> None:
    """go-restful's answer for a path under a WebService that no route serves."""
    await send_plain(scope, receive, send, 404, PAGE_NOT_FOUND)
