"""A listener's API document: what FastAPI generates from its routes (each route family declares
its own parameters and answers, server/apidoc.py), plus what every operation of that listener
shares, added here because it is answered below the routes, where no route can declare it:

- the secure port (server/auth.py): a bearer token or a client certificate (the security schemes),
  401 `Unauthorized`, 403 `Forbidden (user=..., ...)` and 500 `Authorization error (...)`;
- every listener (server/limits.py, answered in server/protocols.py before any routing): 413 for a
  body over the limit, 431 for a request head over it.
FastAPI's 422 goes: no handler has FastAPI validate a parameter (they read the raw query the way the
kubelet does), so it is never sent. The secure and read-only ports get one document each
(openapi/kubeletapi.json, openapi/kubeletapi-readonly.json): the read-only one is the subset a
client of port 10255 can use, with no security at all.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi.openapi.utils import get_openapi
from starlette.routing import BaseRoute

from kubeletapi.server.apidoc import SCHEMAS, TEXT, Doc, text
from kubeletapi.server.limits import BODY_TOO_LARGE, HEADERS_TOO_LARGE, MAX_BODY_BYTES, MAX_HEADER_BYTES

Listener = Literal["secure", "readonly", "healthz", "ui"]
_COMMON = (
    "Paths no route serves answer Go's `404 page not found` (text/plain); a method a path does not "
    "serve answers go-restful's `405: Method Not Allowed` with an `Allow` header listing the methods it "
    "does. Every path is also served under the API server's node proxy path, "
    "`/api/v1/nodes/<node>/proxy/<path>` (another node name: 404 with a metav1 Status)."
)
DESCRIPTIONS: dict[Listener, str] = {
    "secure": (
        "The kubelet HTTP API of kubeletapi's secure port (10250, HTTPS, `--port`). Every request is "
        "authenticated (a client certificate signed by `authentication.x509.clientCAFile`, or a bearer "
        "token: `--token-auth-file` or the TokenReview webhook; anonymous requests only with "
        "`authentication.anonymous.enabled`) and then authorized: each operation's `x-kubelet-authz` "
        "names the nodes/<subresource> list it is authorized against, in order. This document describes "
        "the default `enableDebuggingHandlers: true`; with false, the debugging paths answer as on the "
        "read-only port (405 `Debug endpoints are disabled.`) and /configz and /openapi.json are absent. "
        + _COMMON
    ),
    "readonly": (
        "The kubelet HTTP API of kubeletapi's read-only port (10255, plain HTTP, `--read-only-port`; off "
        "unless set): the kubelet's auth-not-required group, without authentication or authorization. "
        "The debugging paths (/run, /exec, /attach, /portForward, /containerLogs, /runningpods/, "
        "/debug/pprof, /logs) answer every method with 405 `Debug endpoints are disabled.`. The healthz "
        "port (10248, `--healthz-port`) serves /healthz and /healthz/ping of this document with the ping "
        "check only. " + _COMMON
    ),
    "healthz": "The healthz port: /healthz and /healthz/ping with the ping check only.",
}
SERVERS: dict[Listener, Doc] = {
    "secure": {"url": "https://{address}:{port}", "variables": {
        "address": {"default": "127.0.0.1"}, "port": {"default": "10250"}}},
    "readonly": {"url": "http://{address}:{port}", "variables": {
        "address": {"default": "127.0.0.1"}, "port": {"default": "10255"}}},
    "healthz": {"url": "http://{address}:{port}", "variables": {
        "address": {"default": "127.0.0.1"}, "port": {"default": "10248"}}},
}
SECURITY_SCHEMES: Doc = {
    "bearerToken": {
        "type": "http", "scheme": "bearer",
        "description": "`Authorization: Bearer <token>`: a token of `--token-auth-file`, or one the API server's "
                       "TokenReview accepts (`authentication.webhook.enabled`). WebSocket clients may send it as "
                       "the subprotocol `base64url.bearer.authorization.k8s.io.<base64url token>` instead.",
    },
    "clientCertificate": {
        "type": "mutualTLS",
        "description": "A TLS client certificate signed by `authentication.x509.clientCAFile`: the user is its "
                       "subject CN, the groups its O values.",
    },
}


def _plain_refusal(raw: bytes) -> str:
    return raw.split(b"\r\n\r\n", 1)[1].decode()


SHARED: dict[str, tuple[str, Doc]] = {
    "413": ("RequestEntityTooLarge", text(
        f"The request body is over {MAX_BODY_BYTES} bytes (by its Content-Length, before routing and "
        "authentication, or as it streams in); the connection is then closed.",
        _plain_refusal(BODY_TOO_LARGE))),
    "431": ("RequestHeaderFieldsTooLarge", text(
        f"The request line and headers are over {MAX_HEADER_BYTES} bytes (Go's MaxHeaderBytes), answered "
        "before routing and authentication; the connection is then closed.",
        _plain_refusal(HEADERS_TOO_LARGE))),
}
SECURE_ONLY: dict[str, tuple[str, Doc]] = {
    "401": ("Unauthorized", text(
        "No valid credentials (and anonymous requests are not enabled).", "Unauthorized")),
    "403": ("Forbidden", text(
        "The authorizer refused every subresource of `x-kubelet-authz` for this verb.",
        "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[stats])\n")),
    "500": ("AuthorizationError", text(
        "The authorizer failed (a SubjectAccessReview could not be made).",
        "Authorization error (user=alice, verb=get, resource=nodes, subresource=stats)")),
}


def listener_document(routes: list[BaseRoute], listener: Listener, title: str, version: str) -> dict[str, Any]:
    """The OpenAPI document of one listener serving `routes`."""
    doc = get_openapi(title=title, version=version, description=DESCRIPTIONS[listener], routes=routes,
                      servers=[SERVERS[listener]])
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    clash = set(SCHEMAS) & set(schemas)
    if clash:
        raise ValueError(f"schema names used twice: {sorted(clash)}")
    schemas.update(SCHEMAS)
    shared = {**SHARED, **(SECURE_ONLY if listener == "secure" else {})}
    components["responses"] = dict(shared.values())
    for path_item in doc.get("paths", {}).values():
        for operation in path_item.values():
            _add_shared(operation["responses"], shared)
    if listener == "secure":
        components["securitySchemes"] = SECURITY_SCHEMES
        doc["security"] = [{name: []} for name in SECURITY_SCHEMES]
    return doc


def _add_shared(responses: Doc, shared: dict[str, tuple[str, Doc]]) -> None:
    """The listener's answers, by reference; where the route answers the same code for a reason of
    its own, both reasons are written out."""
    if "HTTPValidationError" in str(responses.get("422")):
        del responses["422"]
    for code, (name, response) in shared.items():
        own = responses.get(code)
        if own is None:
            responses[code] = {"$ref": f"#/components/responses/{name}"}
        else:
            own["description"] += f" Or: {response['description']}"
            own.setdefault("content", {}).setdefault(TEXT, {"schema": {"type": "string"}})
    for code in sorted(responses, key=lambda c: (not c[0].isdigit(), c)):
        responses[code] = responses.pop(code)  # numeric order, whatever the order they were added in
