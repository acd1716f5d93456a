"""The one mapping from kubeletapi errors (and routing errors) to HTTP responses.

Where clients depend on the kubelet's exact bodies (404 for unknown paths, 405), they are
reproduced; everything else is a metav1 Status object.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, PlainTextResponse, Response

from kubeletapi import errors
from kubeletapi.server.routing import allowed_methods

_STATUS: list[tuple[type[errors.KubeletError], int, str]] = [
    (errors.NotFound, 404, "NotFound"),
    (errors.InvalidInput, 400, "BadRequest"),
    (errors.Conflict, 409, "Conflict"),
    (errors.NotSupported, 501, "NotImplemented"),
    (errors.Unavailable, 503, "ServiceUnavailable"),
    (errors.KubeletError, 500, "InternalError"),
]


# The published schema of status_body's objects (openapi: components/schemas/Status).
STATUS_SCHEMA: dict[str, object] = {
    "title": "Status",
    "description": "A metav1 Status failure object.",
    "type": "object",
    "required": ["kind", "apiVersion", "metadata", "status", "message", "reason", "code"],
    "properties": {
        "kind": {"const": "Status"},
        "apiVersion": {"const": "v1"},
        "metadata": {"type": "object"},
        "status": {"const": "Failure"},
        "message": {"type": "string"},
        "reason": {"type": "string", "enum": sorted({reason for _, _, reason in _STATUS} | {"BadRequest"})},
        "code": {"type": "integer"},
    },
}


def status_body(code: int, reason: str, message: str) -> dict[str, object]:
    """A metav1 Status failure object."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


async def _kubelet_error(request: Request, exc: Exception) -> Response:
    for kind, code, reason in _STATUS:
        if isinstance(exc, kind):
            return JSONResponse(status_body(code, reason, str(exc)), status_code=code)
    raise exc  # pragma: no cover - registered for KubeletError only


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return PlainTextResponse("404 page not found\n", 404, headers={"X-Content-Type-Options": "nosniff"})
    if exc.status_code == 405:
        # go-restful's answer for a known path with the wrong method, listing every method served there.
        allow = ", ".join(allowed_methods(request.app.routes, request.scope))
        return PlainTextResponse("405: Method Not Allowed", 405, headers={**(exc.headers or {}), "Allow": allow})
    return PlainTextResponse(str(exc.detail), exc.status_code, headers=exc.headers)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
    )
    return JSONResponse(status_body(400, "BadRequest", problems), status_code=400)


def install(app: FastAPI) -> None:
    app.add_exception_handler(errors.KubeletError, _kubelet_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
