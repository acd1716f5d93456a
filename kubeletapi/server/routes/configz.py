"""/configz: the effective KubeletConfiguration, secrets redacted (secure port only)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import Response

from kubeletapi.api.gojson import JSON_TYPE, dumps
from kubeletapi.server.host import Host
from kubeletapi.server.routing import authz


async def configz(request: Request) -> Response:
    """{"kubeletconfig": {...}} in v1beta1 form with Go durations, compact JSON."""
    host: Host = request.app.state.host
    return Response(dumps(host.configz()), media_type=JSON_TYPE)


def install(app: FastAPI) -> None:
    app.add_api_route("/configz", configz, methods=["GET"], openapi_extra=authz("configz", "proxy"), tags=["configz"])
