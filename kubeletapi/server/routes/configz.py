"""/configz: the effective KubeletConfiguration, secrets redacted (secure port only)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from pydantic import BaseModel
from starlette.responses import Response

from kubeletapi.api.gojson import JSON_TYPE, dumps
from kubeletapi.config import KubeletConfiguration
from kubeletapi.server.apidoc import documented, model
from kubeletapi.server.host import Host
from kubeletapi.server.routing import add_any_method_route


class Configz(BaseModel):
    """The /configz answer."""

    kubeletconfig: KubeletConfiguration


async def configz(request: Request) -> Response:
    """{"kubeletconfig": {...}} in v1beta1 form with Go durations, compact JSON."""
    host: Host = request.app.state.host
    return Response(dumps(host.configz()), media_type=JSON_TYPE)


def install(app: FastAPI) -> None:
    doc = documented(("configz", "proxy"), {200: model("The effective configuration, secrets redacted.", Configz)})
    add_any_method_route(app, "/configz", configz, "configz", "configz", **doc)  # a Go mux handler: any method
