"""Manifest bytes → one plain JSON document: YAML or JSON, as sigs.k8s.io/yaml reads it.

Stricter than the kubelet on purpose: duplicate keys are errors (the kubelet accepts them),
multi-document files are errors (it reads the first document), and alias bombs and recursive
aliases are refused before anything is constructed.
"""

from __future__ import annotations

import json
import math
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from kubeletapi.pods.manifest.errors import ManifestError

MAX_ALIAS_RATIO = 100  # expanded nodes allowed per distinct node (plus a fixed allowance)
MAX_ALIAS_ALLOWANCE = 10_000

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe YAML as sigs.k8s.io/yaml reads it: timestamps stay strings; duplicate keys fail."""

    yaml_implicit_resolvers = {
        ch: [r for r in resolvers if r[0] != _TIMESTAMP]
        for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                continue  # unhashable key: the base constructor reports it
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark
                )
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_aliases(root: Node) -> None:
    """Refuse recursive aliases and documents whose alias expansion is excessive (YAML bombs)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_ALIAS_ALLOWANCE + MAX_ALIAS_RATIO * len(sizes):
                raise yaml.YAMLError("document contains excessive aliasing")
            continue
        if key in sizes:
            continue
        if key in active:
            raise yaml.YAMLError("document contains a recursive alias")
        active.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _load_yaml(text: str) -> Any:
    loader = _Loader(text)
    try:
        documents = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None and not (node.tag.endswith(":null") and node.value in ("", "~", "null")):
                documents.append(node)
        if len(documents) > 1:
            raise yaml.YAMLError(f"expected one document, found {len(documents)}")
        if not documents:
            return None
        _check_aliases(documents[0])
        return loader.construct_document(documents[0])
    finally:
        loader.dispose()


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"found duplicate key {key!r}")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def load_document(data: bytes, source: str) -> Any:
    """The single YAML or JSON document in `data`, as plain JSON values."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ManifestError(
            source, [f"not valid UTF-8 ({err.reason} at byte {err.start})"], "unreadable manifest"
        ) from None
    try:
        if text.lstrip()[:1] in ("{", "["):
            doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
        else:
            doc = _load_yaml(text)
        doc = _jsonable(doc, "")
    except json.JSONDecodeError as err:
        raise ManifestError(source, [f"{err.msg} at line {err.lineno}, column {err.colno}"], "invalid JSON") from None
    except (yaml.YAMLError, ValueError) as err:
        raise ManifestError(source, [_yaml_problem(err)], "invalid document") from None
    except RecursionError:
        raise ManifestError(source, ["the document is nested too deeply"], "invalid document") from None
    if doc is None:
        raise ManifestError(source, ["the manifest is empty"], "invalid document")
    return doc


def _yaml_problem(err: Exception) -> str:
    mark = getattr(err, "problem_mark", None)
    if isinstance(err, yaml.MarkedYAMLError) and mark is not None:
        return f"{err.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(err).split())


def _jsonable(value: Any, path: str) -> Any:
    """Keep only JSON values; map keys become strings the way sigs.k8s.io/yaml converts them."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for raw_key, item in value.items():
            if isinstance(raw_key, bool):
                key = "true" if raw_key else "false"
            elif isinstance(raw_key, (int, str)):
                key = str(raw_key)
            else:
                raise ValueError(f"{path or '<root>'}: unsupported map key {raw_key!r}")
            out[key] = _jsonable(item, f"{path}.{key}" if path else key)
        return out
    if isinstance(value, list):
        return [_jsonable(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path}: {value} is not a JSON number")
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise ValueError(f"{path}: unsupported YAML value of type {type(value).__name__}")
