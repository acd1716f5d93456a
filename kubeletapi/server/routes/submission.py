"""PUT/POST /submittedpods (secure port, --enable-pod-submission): replace the set of pods the
`api-http` source defines with a v1 Pod or PodList (pods/submission.py); authorized as
nodes/submittedpods. The body is at most 1.5 MiB: the listener answers a larger one with a
400 before routing (server/limits.py)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import Response

from kubeletapi.aio import read_at_most
from kubeletapi.api.core_v1 import PodList
from kubeletapi.api.gojson import JSON_TYPE, dumps
from kubeletapi.server.apidoc import Doc, documented, model, status
from kubeletapi.server.host import Host
from kubeletapi.server.limits import SUBMISSION_BODY_BYTES, SUBMISSION_PATH

PATH = SUBMISSION_PATH
SUBRESOURCE = "submittedpods"
MAX_BODY = SUBMISSION_BODY_BYTES  # the listener refuses a larger body first (server/limits.py)


async def _body(request: Request) -> bytes:
    return await read_at_most(request.stream(), MAX_BODY,
                              f"request body: the pod list is larger than 1.5 MiB ({MAX_BODY} bytes)")


async def submit_pods(request: Request) -> Response:
    """The pods now defined by this source, as the node names them (v1 PodList, no status)."""
    host: Host = request.app.state.host
    return Response(dumps(await host.submit_pods(await _body(request))), media_type=JSON_TYPE)


def install(app: FastAPI) -> None:
    body = {"required": True, "description": "A v1 Pod or PodList, JSON or YAML: the whole set of submitted pods.",
            "content": {"application/json": {"schema": {"type": "object"}},
                        "application/yaml": {"schema": {"type": "string"}}}}
    responses: dict[int | str, Doc] = {200: model("The submitted pods as the node names them.", PodList),
                 400: status("Too large, malformed, invalid or a duplicate name: nothing changed.")}
    for method in ("PUT", "POST"):
        doc = documented((SUBRESOURCE,), responses, body=body)
        app.add_api_route(PATH, submit_pods, methods=[method], tags=["pods"],
                          operation_id=f"submit_pods_{method.lower()}", **doc)
