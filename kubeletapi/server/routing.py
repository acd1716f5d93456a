"""Every route declares the nodes/<subresource> list it is authorized against.

The declaration lives in the route's OpenAPI extension `x-kubelet-authz`, so it is visible in
openapi/kubeletapi.json, and the auth middleware reads it from the matched route.
"""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute

AUTHZ_KEY = "x-kubelet-authz"
# Go's ServeMux and go-restful handlers that do not check the method accept all of these.
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def authz(*subresources: str) -> dict[str, Any]:
    """openapi_extra for a route authorized as nodes/<subresources[0]>, then the others."""
    return {AUTHZ_KEY: {"resource": "nodes", "subresources": list(subresources)}}


def route_subresources(route: BaseRoute) -> tuple[str, ...] | None:
    """The subresources a route declared, or None when it declared nothing."""
    extra = getattr(route, "openapi_extra", None) or {}
    decl = extra.get(AUTHZ_KEY)
    if not decl or not decl.get("subresources"):
        return None
    return tuple(decl["subresources"])
