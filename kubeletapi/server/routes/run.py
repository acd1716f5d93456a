"""/run/{namespace}/{pod}[/{uid}]/{container}?cmd=...: run a command in a container (POST).

As the kubelet: `cmd` is split on spaces, the output is returned raw with Content-Type
application/json (a kubelet quirk), an unknown pod is 404 `pod does not exist`, and any other
failure (no such running container, a non-zero exit) is 500 with the error text.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse, Response

from kubeletapi.api.gojson import JSON_TYPE
from kubeletapi.errors import KubeletError, NotFound
from kubeletapi.server.host import Host
from kubeletapi.server.routing import authz


async def _run(request: Request, namespace: str, pod: str, uid: str | None, container: str) -> Response:
    host: Host = request.app.state.host
    cmd = request.query_params.get("cmd", "").split(" ")
    try:
        output = await host.run_in_container(namespace, pod, uid, container, cmd)
    except NotFound as exc:
        return PlainTextResponse(str(exc), 404)
    except KubeletError as exc:
        return PlainTextResponse(str(exc), 500)
    return Response(output, media_type=JSON_TYPE)


async def run(request: Request, namespace: str, pod: str, container: str) -> Response:
    """Run `cmd` in the container and return its combined output."""
    return await _run(request, namespace, pod, None, container)


async def run_uid(request: Request, namespace: str, pod: str, uid: str, container: str) -> Response:
    """Same, checking the pod's UID."""
    return await _run(request, namespace, pod, uid, container)


def install(app: FastAPI) -> None:
    app.add_api_route("/run/{namespace}/{pod}/{container}", run, methods=["POST"], openapi_extra=authz("proxy"),
                      tags=["run"])
    app.add_api_route("/run/{namespace}/{pod}/{uid}/{container}", run_uid, methods=["POST"],
                      openapi_extra=authz("proxy"), tags=["run"])
