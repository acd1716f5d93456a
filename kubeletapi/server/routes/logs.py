"""/containerLogs/{namespace}/{pod}/{container}: PodLogOptions in the query, the kubelet's answers.

400 `{"message": "Unable to decode query."}`, 422 `{"message": "Invalid request."}`, 404 for an
unknown pod or container, 400 with the error text for anything else; success is a chunked
text/plain stream, flushed per record, following until the container exits or the client leaves.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from kubeletapi.errors import KubeletError, NotFound
from kubeletapi.runtime.logoptions import PodLogOptionsError
from kubeletapi.server.apidoc import (
    TEXT,
    LogContainerName,
    LogPodName,
    Namespace,
    documented,
    int64,
    lenient_bool,
    options,
    text,
)
from kubeletapi.server.host import Host
from kubeletapi.server.logquery import INVALID_BODY, UNDECODABLE_BODY, decode_pod_log_options


async def container_logs(
    request: Request, namespace: Namespace, pod: LogPodName, container: LogContainerName
) -> Response:
    """Container logs (follow, previous, timestamps, sinceSeconds, sinceTime, tailLines, limitBytes)."""
    host: Host = request.app.state.host
    try:
        opts = decode_pod_log_options(request.query_params.multi_items())
        stream = await host.container_logs(namespace, pod, container, opts)
    except PodLogOptionsError as exc:
        return Response(exc.body, exc.status, media_type="text/plain; charset=utf-8")
    except NotFound as exc:
        return PlainTextResponse(str(exc), 404)
    except KubeletError as exc:
        return PlainTextResponse(str(exc), 400)
    return StreamingResponse(stream, media_type=TEXT)


# Go's RFC3339 (upper-case T and Z, seconds 00-59), the only form the kubelet decodes.
RFC3339 = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"
POD_LOG_OPTIONS = options(
    "PodLogOptions",
    {
        "follow": lenient_bool("Keep streaming until the container exits or the client leaves."),
        "previous": lenient_bool("The previous instance of the container (400 when there is none)."),
        "timestamps": lenient_bool("Prefix each line with its RFC3339Nano time and a space."),
        "sinceSeconds": int64(1, "Only lines of the last this many seconds."),
        "sinceTime": {"type": "string", "format": "date-time", "pattern": RFC3339,
                      "description": "Only lines from this time on (RFC 3339)."},
        "tailLines": int64(0, "Only the last this many lines."),
        "tail": {"anyOf": [{"type": "string", "pattern": "^[+]?[0-9]{1,18}$"}, {"const": "all"}],
                 "description": "Legacy spelling of tailLines, which it replaces; `all`: no limit."},
        "limitBytes": int64(1, "Stop after this many bytes."),
        "insecureSkipTLSVerifyBackend": lenient_bool("Accepted and ignored (an API server option)."),
        "stream": {"type": "string", "enum": ["All"], "default": "All",
                   "description": "`Stdout` and `Stderr` need the PodLogsQuerySplitStreams feature gate, which is "
                                  "off here: 400 once the pod and container are found."},
    },
    "v1 PodLogOptions, decoded as the kubelet does: each key's first value counts; at most one of "
    "sinceSeconds and sinceTime.",
    not_={"required": ["sinceSeconds", "sinceTime"]},
)
DOC = documented(("proxy",), {
    200: text("The log lines, streamed (chunked) and flushed per line.", "tick 0\ntick 1\n"),
    400: text(f"The query does not decode (`{UNDECODABLE_BODY}`), no previous instance, an unreadable log, or a "
              "stream this node cannot split.", UNDECODABLE_BODY),
    404: text("No such pod or container.", 'pod "ticker-node" does not exist'),
    422: text(f"The options are invalid together or out of range: `{INVALID_BODY}`.", INVALID_BODY),
}, [POD_LOG_OPTIONS])


def install(app: FastAPI) -> None:
    app.add_api_route("/containerLogs/{namespace}/{pod}/{container}", container_logs, methods=["GET"],
                      tags=["logs"], **DOC)
