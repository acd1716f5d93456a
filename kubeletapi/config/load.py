"""Build the effective KubeletConfiguration from a --config file and command-line flags.

Order, as in the kubelet: decode the file strictly, apply flags on top, apply defaults, then
validate. Errors are ConfigError whose message names the file (or flag) and the field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from kubeletapi.config.model import API_VERSION, KIND, KubeletConfiguration
from kubeletapi.errors import ConfigError

MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class FlagValue:
    """A flag given on the command line, and the config field it overrides."""

    flag: str
    path: tuple[str, ...]
    value: Any


class _StrictLoader(yaml.SafeLoader):
    """YAML loader that rejects duplicate keys, as the kubelet's strict decoder does."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(f'duplicate field "{key}" (line {key_node.start_mark.line + 1})')
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def read_config_file(path: Path) -> dict[str, Any]:
    """The file's fields (apiVersion and kind checked and removed)."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"failed to load kubelet config file {path}: {exc.strerror}") from exc
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"kubelet config file {path} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        data = yaml.load(raw.decode("utf-8"), Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
    except ConfigError as exc:
        raise ConfigError(f"kubelet config file {path}: {exc}") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"kubelet config file {path} is not valid YAML or JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"kubelet config file {path}: expected a KubeletConfiguration object")
    if data.get("kind") != KIND or data.get("apiVersion") != API_VERSION:
        raise ConfigError(
            f"kubelet config file {path}: kind and apiVersion must be {KIND} and {API_VERSION}, "
            f"got {data.get('kind')!r} and {data.get('apiVersion')!r}"
        )
    return {k: v for k, v in data.items() if k not in ("kind", "apiVersion")}


def build_config(
    file_data: dict[str, Any] | None,
    file_name: str | None,
    flags: Sequence[FlagValue],
    has_kubeconfig: bool,
    has_rbac_file: bool,
) -> KubeletConfiguration:
    """Decode, overlay flags, default and validate."""
    data = json.loads(json.dumps(file_data or {}))  # a deep copy of plain data
    if file_data is not None:
        _validate(data, f"kubelet config file {file_name}")
    for flag in flags:
        _set(data, flag.path, flag.value)
    _standalone_defaults(data, has_kubeconfig, has_rbac_file)
    by_path = {".".join(f.path): f.flag for f in flags}
    return _validate(data, "command-line flags", by_path)


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        child = data.get(key)
        if not isinstance(child, dict):
            child = data[key] = {}
        data = child
    data[path[-1]] = value


def _get(data: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _standalone_defaults(data: dict[str, Any], has_kubeconfig: bool, has_rbac_file: bool) -> None:
    """Without an API server (no --kubeconfig), the webhooks cannot work: default them off."""
    if not has_kubeconfig and _get(data, "authentication", "webhook", "enabled") is None:
        _set(data, ("authentication", "webhook", "enabled"), False)
    if _get(data, "authorization", "mode") in (None, ""):
        if has_rbac_file:
            _set(data, ("authorization", "mode"), "RBAC")
        elif not has_kubeconfig:
            _set(data, ("authorization", "mode"), "AlwaysAllow")


def _validate(data: dict[str, Any], source: str, flags: dict[str, str] | None = None) -> KubeletConfiguration:
    try:
        return KubeletConfiguration.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, flags or {})) from exc


def _describe(exc: ValidationError, source: str, flags: dict[str, str]) -> str:
    problems = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        where = f"flag {flags[field]}" if field in flags else f'field "{field}"'
        if err["type"] == "extra_forbidden":
            problems.append(f'unknown field "{field}"')
        elif err["type"] == "value_error":
            problems.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
        else:
            problems.append(f"{where}: {err['msg']} (got {err.get('input')!r})")
    return f"invalid configuration in {source}: " + "; ".join(problems)
