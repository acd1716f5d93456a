"""/logs/ and /logs/{logpath}: the node log viewer (secure port, debugging handlers; authorized as
nodes/log). A thin adapter: the path after /logs/, the query and the headers go to
Host.node_logs; its LogAnswer (node/logfiles.py) is written as is. With enableSystemLogHandler
false every method under /logs/ answers 405 `logs endpoint is disabled.`, as the kubelet's."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from kubeletapi.node.logfiles import file_chunks
from kubeletapi.server.apidoc import Doc, documented, text, untyped
from kubeletapi.server.host import Host
from kubeletapi.server.routing import add_any_method_route

PREFIX = "/logs/"
DISABLED = "logs endpoint is disabled.\n"


async def node_logs(request: Request) -> Response:
    """A file or directory listing under the node log dir, or a NodeLogQuery's output."""
    host: Host = request.app.state.host
    path = request.url.path.removeprefix(PREFIX.rstrip("/")).removeprefix("/")
    answer = await host.node_logs(path, request.query_params.multi_items(), request.url.query,
                                  {k.lower(): v for k, v in request.headers.items()})
    headers = dict(answer.headers)
    if answer.stream is not None:
        return StreamingResponse(answer.stream, answer.status, headers=headers)
    if answer.file is not None:
        headers["Content-Length"] = str(answer.size)
        return StreamingResponse(file_chunks(answer.file, answer.offset, answer.size), answer.status,
                                 headers=headers)
    return Response(answer.body, answer.status, headers=headers)


async def _disabled() -> PlainTextResponse:
    return PlainTextResponse(DISABLED, 405, headers={"X-Content-Type-Options": "nosniff"})


QUERY: list[Doc] = [
    {"name": name, "in": "query", "required": False, "schema": {"type": "string"}, "description": description}
    for name, description in (
        ("query", "A service (its journal, or /var/log/<svc>[.log]) or a file under the log dir; repeatable, "
                  "at most 4 services (NodeLogQuery gate and enableSystemLogQuery only)."),
        ("pattern", "Only entries matching this regular expression."),
        ("tailLines", "The last this many entries (0-100000)."),
        ("sinceTime", "RFC 3339: entries from then on."),
        ("untilTime", "RFC 3339: entries until then."),
        ("boot", "A boot: 0 the current, -1 the one before..."),
    )
]


def install(app: FastAPI, enabled: bool = True) -> None:
    if not enabled:
        add_any_method_route(app, PREFIX + "{rest:path}", _disabled, "logs_disabled", "logs",
                             **documented(("log",), {405: text("enableSystemLogHandler is false.", DISABLED)}))
        return
    responses: dict[int | str, Doc] = {
        200: untyped("A file's bytes (its type from the extension or sniffed), a directory listing (HTML), "
                     "or a query's log text.", "*/*"),
        301: text("A directory without its trailing slash (or a file with one): Location is relative.", ""),
        304: text("Not modified since If-Modified-Since.", ""),
        400: text("The query does not decode.", 'sinceTime: Invalid value: "x": invalid time format'),
        403: text("The file cannot be read.", "403 Forbidden"),
        404: text("No such file or directory under the log dir (or outside it).", "404 page not found"),
        406: text("The query is invalid, or a query with a path.", "path not allowed in query mode"),
    }
    logpath: Doc = {"name": "logpath", "in": "path", "required": True, "schema": {"type": "string"},
                    "description": "A file or directory under the node log dir (a directory with a trailing slash)."}
    for path, name, params in ((PREFIX, "node_logs", QUERY), (PREFIX + "{logpath:path}", "node_log_file",
                                                              [logpath, *QUERY])):
        app.add_api_route(path, node_logs, methods=["GET"], name=name, tags=["logs"],
                          operation_id=f"{name}_get", **documented(("log",), responses, params))
