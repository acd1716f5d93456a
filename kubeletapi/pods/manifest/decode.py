"""Document → Pod (pkg/kubelet/config/common.go tryDecodeSinglePod): TypeMeta, strict fields, then
defaults and validation, with every problem reported at once in Kubernetes' field-path style.

Unknown fields are errors rather than silently dropped (typos are caught), but the rest of the pod
is still decoded and validated so that one run reports everything.
"""

from __future__ import annotations

import copy
import json
import typing
from typing import Any

from pydantic import ValidationError

from kubeletapi.api.core_v1 import Pod, WireModel
from kubeletapi.api.gowire import unwrap
from kubeletapi.pods.manifest.defaults import apply_defaults
from kubeletapi.pods.manifest.errors import ManifestError, go_value
from kubeletapi.pods.manifest.load import load_document
from kubeletapi.pods.manifest.validation import too_many_containers, validate_pod


def decode_pod(data: bytes, source: str) -> Pod:
    """Decode one Pod manifest (YAML or JSON), default it and validate it; raise ManifestError."""
    pod, problems = _pod_from_document(load_document(data, source), "")
    if pod is None or problems:
        raise ManifestError(source, problems)
    return pod


def decode_api_pod(obj: Any, source: str) -> Pod:
    """A Pod object from the API server: decoded strictly (a field this agent does not know is an
    error, so the pod is refused with the reason rather than run wrongly) and defaulted, but not
    validated again: the API server validated it, and its own status and metadata stay as they
    are. Only the container limit, which guards the node, is checked first."""
    if not isinstance(obj, dict):
        raise ManifestError(source, [f"<object>: Invalid value: {go_value(obj)}: must be a Pod object"])
    if (too_many := too_many_containers(obj)) is not None:
        raise ManifestError(source, [too_many])
    try:
        pod = _validate(obj)
    except ValidationError as err:
        raise ManifestError(source, decode_errors(err, Pod) + Pod.opaque_errors(obj)) from None
    problems = Pod.opaque_errors(obj)
    if problems:
        raise ManifestError(source, problems)
    pod.kind = pod.api_version = ""
    apply_defaults(pod)
    return pod


def decode_pod_list(data: bytes, source: str) -> list[Pod]:
    """Decode what a manifest URL serves: a PodList (every item must be valid) or a single Pod."""
    doc = load_document(data, source)
    if not (isinstance(doc, dict) and doc.get("kind") == "PodList"):
        pod, problems = _pod_from_document(doc, "")
        if pod is None or problems:
            raise ManifestError(source, problems)
        return [pod]
    problems = [f"{key}: unknown field" for key in doc if key not in ("kind", "apiVersion", "metadata", "items")]
    problems += _type_meta(doc, "PodList", "")
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise ManifestError(source, [f"items: Invalid value: {go_value(items)}: must be a list"], "invalid pod list")
    pods = []
    for i, item in enumerate(items):
        pod, item_problems = _pod_from_document(item, f"items[{i}].")
        problems += item_problems
        if pod is not None:
            pods.append(pod)
    if problems:
        raise ManifestError(source, problems, "invalid pod list")
    return pods


def _type_meta(doc: dict[str, Any], kind: str, prefix: str, optional: bool = False) -> list[str]:
    """kind/apiVersion checks; `optional` for PodList items, which need no TypeMeta (the list's
    own kind and apiVersion type them, as Go decodes a v1.PodList)."""
    if optional:
        doc = {"kind": kind, "apiVersion": "v1", **{k: v for k, v in doc.items() if v not in ("", None)}}
    problems = []
    if "kind" not in doc or doc["kind"] in ("", None):
        problems.append(f"{prefix}kind: Required value")
    elif doc["kind"] != kind:
        problems.append(
            f"{prefix}kind: Unsupported value: {go_value(doc['kind'])}: supported values: {json.dumps(kind)}"
        )
    if "apiVersion" not in doc or doc["apiVersion"] in ("", None):
        problems.append(f"{prefix}apiVersion: Required value")
    elif doc["apiVersion"] != "v1":
        problems.append(f'{prefix}apiVersion: Unsupported value: {go_value(doc["apiVersion"])}: supported values: "v1"')
    return problems


def _pod_from_document(doc: Any, prefix: str) -> tuple[Pod | None, list[str]]:
    """(pod, problems): the pod is None unless there are no problems at all."""
    if not isinstance(doc, dict):
        return None, [f"{prefix or '<document>'}: Invalid value: {go_value(doc)}: must be a Pod object"]
    problems = _type_meta(doc, "Pod", prefix, optional=bool(prefix))
    if (too_many := too_many_containers(doc)) is not None:
        return None, [*problems, prefix + too_many]
    try:
        pod = _validate(doc)
    except ValidationError as err:
        problems += decode_errors(err, Pod, prefix)
        unknown = [e["loc"] for e in err.errors() if e["type"] == "extra_forbidden"]
        if len(unknown) < err.error_count():
            return None, problems + Pod.opaque_errors(doc, prefix.rstrip("."))
        # Only unknown fields: drop them so the rest of the pod is still validated.
        pod = _validate(_without(doc, unknown))
    problems += Pod.opaque_errors(doc, prefix.rstrip("."))
    pod.kind = pod.api_version = ""  # the kubelet's internal->v1 conversion drops TypeMeta
    apply_defaults(pod)
    problems += [prefix + p for p in validate_pod(pod)]
    return (None if problems else pod), problems


def _validate(doc: dict[str, Any]) -> Pod:
    return Pod.model_validate(doc, strict=True, by_alias=True, by_name=False)


def _without(doc: dict[str, Any], locs: list[tuple[int | str, ...]]) -> dict[str, Any]:
    """A copy of `doc` without the keys at `locs`."""
    out: dict[str, Any] = copy.deepcopy(doc)
    for loc in locs:
        parent: Any = out
        for part in loc[:-1]:
            parent = parent[part]
        del parent[loc[-1]]
    return out


_DETAILS = {
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "string_type": "must be a string",
    "bool_type": "must be a boolean",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
}


def decode_errors(err: ValidationError, root: type[WireModel], prefix: str = "") -> list[str]:
    """pydantic's errors as Kubernetes field errors (`unknown field` for keys that are not v1)."""
    out = []
    for item in err.errors(include_url=False):
        path = prefix + _format_loc(root, item["loc"])
        if item["type"] == "extra_forbidden":
            out.append(f"{path}: unknown field")
            continue
        ctx = item.get("ctx") or {}
        if item["type"] in ("less_than_equal", "greater_than_equal"):
            bits = 32 if abs(ctx.get("le", ctx.get("ge", 0))) < 2**32 else 64
            detail = f"must be between {-(2 ** (bits - 1))} and {2 ** (bits - 1) - 1}, inclusive"
        else:
            detail = _DETAILS.get(item["type"]) or item["msg"].removeprefix("Value error, ")
        out.append(f"{path}: Invalid value: {go_value(item['input'])}: {detail}")
    return out


def _format_loc(root: type[WireModel], loc: tuple[int | str, ...]) -> str:
    """`spec.containers[0].resources.limits[cpu]`: fields dotted, list indexes and map keys bracketed."""
    path, current = "", typing.cast(Any, root)
    for part in loc:
        tp: Any = unwrap(current)
        origin = typing.get_origin(tp)
        if isinstance(part, int):
            path, current = f"{path}[{part}]", (typing.get_args(tp)[0] if origin is list else Any)
        elif origin is dict:
            path, current = f"{path}[{part}]", typing.get_args(tp)[1]
        else:
            path = f"{path}.{part}" if path else str(part)
            model_fields = tp.model_fields if isinstance(tp, type) and issubclass(tp, WireModel) else {}
            field = next((f for f in model_fields.values() if f.alias == part), None)
            current = field.annotation if field is not None else Any
    return path
