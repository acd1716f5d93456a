"""The words the published API document (openapi/kubeletapi*.json) is written in.

Each route family describes, where it installs its routes, what its handlers read and answer,
through FastAPI's declarative `responses=` and `openapi_extra` (see `documented`): every query
parameter with its type and the kubelet's default, request bodies, every status with its real media
type and schema. The helpers here keep those declarations short and alike: plain-text answers as
Go's http.Error writes them, metav1 Status JSON (server/errors.py), query parameters as the kubelet
reads them (strings on the wire: a boolean the kubelet parses leniently is documented as the string
it is). What every operation of a listener shares is answered below the routes, so it is added once
per listener by server/listenerdoc.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from fastapi import Path
from starlette.responses import Response

from kubeletapi.api.stats_schema import SCHEMAS as STATS_SCHEMAS
from kubeletapi.server.errors import STATUS_SCHEMA
from kubeletapi.server.routing import authz

TEXT = "text/plain; charset=utf-8"
JSON = "application/json"
STATUS_REF = "#/components/schemas/Status"
Doc = dict[str, Any]
# The hand-written schemas operations refer to by name (components/schemas); model-derived ones
# (`model`) are added by FastAPI.
SCHEMAS: dict[str, Any] = {"Status": STATUS_SCHEMA, **STATS_SCHEMAS}
NOSNIFF: Doc = {"X-Content-Type-Options": {"description": "Always `nosniff`.", "schema": {"type": "string",
                                                                                          "const": "nosniff"}}}


def text(description: str, example: str | None = None, media: str = TEXT, headers: Doc | None = None) -> Doc:
    """A plain-text answer (any text; `example` is a typical body)."""
    schema: Doc = {"type": "string"}
    if example is not None:
        schema["examples"] = [example]
    return _response(description, {media: {"schema": schema}}, headers)


def json(description: str, schema: Doc, headers: Doc | None = None) -> Doc:
    """A JSON answer with its schema."""
    return _response(description, {JSON: {"schema": schema}}, headers)


def status(description: str) -> Doc:
    """A failure as a metav1 Status object (server/errors.py)."""
    return json(description, {"$ref": STATUS_REF})


def untyped(description: str, media: str) -> Doc:
    """An answer whose body has no schema (e.g. raw command output under a JSON media type)."""
    return _response(description, {media: {}}, None)


def _response(description: str, content: Doc, headers: Doc | None) -> Doc:
    doc: Doc = {"description": description, "content": content}
    if headers:
        doc["headers"] = headers
    return doc


def query(name: str, schema: Doc, description: str, *, required: bool = False, explode: bool = True) -> Doc:
    """A query parameter (`explode`: an array or object is sent as repeated `key=value` pairs)."""
    doc: Doc = {"name": name, "in": "query", "description": description, "required": required, "schema": schema}
    if schema.get("type") in ("array", "object"):
        doc |= {"style": "form", "explode": explode}
    return doc


def header(name: str, schema: Doc, description: str) -> Doc:
    """A request header the handler reads."""
    return {"name": name, "in": "header", "description": description, "required": False, "schema": schema}


def options(name: str, properties: Mapping[str, Doc], description: str, *, required: bool = False,
            **constraints: Doc | list[Doc]) -> Doc:
    """A set of query parameters sent as `key=value` pairs but documented as one object, so that
    constraints between them (at least one of, at most one of) are part of the document: OpenAPI's
    form-exploded object parameter. `name` (the Go type) never appears on the wire. Other keys are
    ignored, as by the kubelet. `constraints` are JSON Schema keywords (`not_` for `not`)."""
    schema: Doc = {"type": "object", "properties": dict(properties)}
    schema |= {key.rstrip("_"): value for key, value in constraints.items()}
    return query(name, schema, description, required=required)


def lenient_bool(description: str) -> Doc:
    """A flag the kubelet decodes like apimachinery's query conversion: `false` (any case) or `0`
    turn it off, any other value (even empty) turns it on. Documented as the string it is."""
    return {"type": "string", "description": description, "examples": ["true", "false"], "default": "false"}


def int64(minimum: int | None = None, description: str = "") -> Doc:
    schema: Doc = {"type": "integer", "format": "int64", "maximum": 2**63 - 1}
    schema["minimum"] = -(2**63) if minimum is None else minimum
    if description:
        schema["description"] = description
    return schema


# Path parameters. Their examples name pods of examples/manifests on a node named `node` (the
# document's node): `ticker` runs, `crasher` exits and restarts (so it has logs to follow to the end
# and a previous instance).
Namespace = Annotated[str, Path(description="The pod's namespace.", examples=["default"])]
PodName = Annotated[str, Path(description="The pod's name (a static pod's is `<manifest name>-<node name>`).",
                              examples=["ticker-node"])]
PodUID = Annotated[str, Path(description="The pod's UID: the request is refused when it differs (a manifest may "
                                          "set metadata.uid; else it is derived from the manifest).",
                              examples=["7e5a0a1c-8d6f-4a52-9c0e-2f1b3d4c5e6f"])]
ContainerName = Annotated[str, Path(description="The container's name.", examples=["tick"])]
LogPodName = Annotated[str, Path(description="The pod's name (a static pod's is `<manifest name>-<node name>`).",
                                 examples=["crasher-node"])]
LogContainerName = Annotated[str, Path(description="The container's name.", examples=["crash"])]


def documented(
    subresources: Sequence[str],
    responses: Mapping[int | str, Doc],
    parameters: Sequence[Doc] = (),
    body: Doc | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Keyword arguments for add_api_route: the route's authorization (x-kubelet-authz), what it
    reads, everything it answers. `response_class=Response` has no media type, so FastAPI adds no
    content of its own: the documented content is exactly what `responses` says."""
    openapi_extra: Doc = authz(*subresources) | extra
    if parameters:
        openapi_extra["parameters"] = list(parameters)
    if body is not None:
        openapi_extra["requestBody"] = body
    return {"response_class": Response, "responses": dict(responses), "openapi_extra": openapi_extra}


def model(description: str, schema_type: Any) -> Doc:
    """A JSON answer whose schema FastAPI derives from a model of its wire form (a pydantic model,
    dataclass or TypedDict), published under components/schemas."""
    return {"description": description, "model": schema_type}
