"""/stats/summary (GET and POST): the stats/v1alpha1 Summary, pretty-printed like the kubelet.

The form is the query plus, for a urlencoded POST body, the body (Go's ParseForm);
only_cpu_and_memory applies only when given exactly once with the value `true`. A form that Go
would refuse to parse is a 400 here (the kubelet answers 500 "Internal Error: parse form failed").
The body is at most the listener's body limit (server/limits.py: 413 beyond it, before this
handler runs; Go's ParseForm would read up to 10 MiB).
A summary that cannot be built is the kubelet's 500 `Internal Error: <reason>`.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl

from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse, Response

from kubeletapi.errors import InvalidInput, KubeletError
from kubeletapi.server.apidoc import JSON, Doc, documented, json, query, status, text
from kubeletapi.server.host import Host

JSON_TYPE = "application/json"
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _pairs(text: str, where: str) -> list[tuple[str, str]]:
    """url.ParseQuery: `;` separators and malformed %-escapes are errors."""
    if ";" in text:
        raise InvalidInput(f"parse form failed: invalid semicolon separator in {where}")
    if _BAD_ESCAPE.search(text):
        raise InvalidInput(f"parse form failed: invalid URL escape in {where}")
    return parse_qsl(text, keep_blank_values=True)


async def _form(request: Request) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method == "POST" and content_type == "application/x-www-form-urlencoded":
        body = await request.body()
        pairs += _pairs(body.decode("latin-1"), "the body")
    return pairs + _pairs(request.url.query, "the query")


async def summary(request: Request) -> Response:
    """The node and pod stats from the last housekeeping cycle (only_cpu_and_memory=true: CPU,
    memory and swap only, what metrics-server <= 0.5 reads)."""
    host: Host = request.app.state.host
    values = [v for k, v in await _form(request) if k == "only_cpu_and_memory"]
    only = values == ["true"]
    try:
        body = host.stats_summary(only)
    except KubeletError as exc:
        return PlainTextResponse(f"Internal Error: {exc}", 500)
    return Response(body, media_type=JSON_TYPE)


ONLY = ("`true`, exactly, and given once (query and form body together): CPU, memory and swap only "
        "(what metrics-server <= 0.5 reads); any other value, or twice, is the full summary.")
RESPONSES: dict[int | str, Doc] = {
    200: json("The summary (pretty-printed with one-space indentation, as the kubelet's).",
              {"$ref": "#/components/schemas/Summary"}),
    400: status("The form does not parse as Go's url.ParseQuery would (a `;` separator, a bad %-escape); "
                "the kubelet answers 500 `Internal Error: parse form failed` here."),
    500: text("The summary cannot be built: `Internal Error: <reason>`.", "Internal Error: failed to get node info"),
}
FORM = {"required": False, "content": {"application/x-www-form-urlencoded": {"schema": {
    "type": "object", "properties": {"only_cpu_and_memory": {"type": "string", "description": ONLY}}}}},
    "description": f"A form (Go's ParseForm): read together with the query; other media types are ignored ({JSON} "
                   "included)."}
PARAMETERS = [query("only_cpu_and_memory", {"type": "string", "examples": ["true"]}, ONLY)]


def install(app: FastAPI) -> None:
    for method in ("GET", "POST"):  # one route per method: each needs its own OpenAPI operation id
        doc = documented(("stats",), RESPONSES, PARAMETERS, FORM if method == "POST" else None)
        app.add_api_route("/stats/summary", summary, methods=[method], tags=["stats"],
                          operation_id=f"stats_summary_{method.lower()}", **doc)
