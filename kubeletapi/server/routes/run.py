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
from kubeletapi.server.apidoc import ContainerName, Namespace, PodName, PodUID, documented, query, text, untyped
from kubeletapi.server.host import Host


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


async def run(request: Request, namespace: Namespace, pod: PodName, container: ContainerName) -> Response:
    """Run `cmd` in the container and return its combined output."""
    return await _run(request, namespace, pod, None, container)


async def run_uid(request: Request, namespace: Namespace, pod: PodName, uid: PodUID, container: ContainerName
                  ) -> Response:
    """Same, checking the pod's UID."""
    return await _run(request, namespace, pod, uid, container)


DOC = documented(("proxy",), {
    200: untyped("The command's combined output, raw, labelled application/json (a kubelet quirk).", JSON_TYPE),
    404: text("No such pod (or another UID).", "pod does not exist"),
    500: text("No such running container, or the command failed or exited non-zero: the error text.",
              'container not found ("tick")'),
}, [query("cmd", {"type": "string", "examples": ["echo hello"]},
          "The command, split on single spaces into argv (the query only; a form body is not read).", required=True)])


def install(app: FastAPI) -> None:
    app.add_api_route("/run/{namespace}/{pod}/{container}", run, methods=["POST"], tags=["run"], **DOC)
    app.add_api_route("/run/{namespace}/{pod}/{uid}/{container}", run_uid, methods=["POST"], tags=["run"], **DOC)
