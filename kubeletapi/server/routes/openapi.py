"""/openapi.json: FastAPI's OpenAPI document of the whole API (secure port)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse

from kubeletapi.server.apidoc import documented, json


async def openapi(request: Request) -> JSONResponse:
    """The OpenAPI document of this port (openapi/kubeletapi.json)."""
    return JSONResponse(request.app.openapi())


def install(app: FastAPI) -> None:
    doc = documented(("proxy",), {200: json("This document.", {"type": "object", "required": ["openapi", "paths"]})})
    app.add_api_route("/openapi.json", openapi, methods=["GET"], tags=["openapi"], **doc)
