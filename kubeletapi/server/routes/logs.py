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
from kubeletapi.server.host import Host
from kubeletapi.server.logquery import decode_pod_log_options
from kubeletapi.server.routing import authz


async def container_logs(request: Request, namespace: str, pod: str, container: str) -> Response:
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
    return StreamingResponse(stream, media_type="text/plain; charset=utf-8")


def install(app: FastAPI) -> None:
    app.add_api_route("/containerLogs/{namespace}/{pod}/{container}", container_logs, methods=["GET"],
                      openapi_extra=authz("proxy"), tags=["logs"], response_class=PlainTextResponse)
