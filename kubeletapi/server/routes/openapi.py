"""/openapi.json: FastAPI's OpenAPI document of the whole API (secure port)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from starlette.responses import JSONResponse

from kubeletapi.server.routing import authz


async def openapi(request: Request) -> JSONResponse:
    return JSONResponse(request.app.openapi())


def install(app: FastAPI) -> None:
    app.add_api_route("/openapi.json", openapi, methods=["GET"], include_in_schema=False,
                      openapi_extra=authz("proxy"))
